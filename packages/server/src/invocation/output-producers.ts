/**
 * The output side of a live session: running the agent's output sources,
 * validating what they yield and turning items into log events
 * (output-items.ts), and handing them to the store with two bounds (the stream's window of unsent events
 * and bytes, the session's budget of uncommitted bytes), and recording
 * terminals.
 *
 * Output streams are declared by `context.output(source)`, which returns a
 * placeholder stream leaf; a source starts only when a committed value (the
 * result or an item of another output) exposes its placeholder.
 */
import { randomUUID } from "node:crypto";
import { canonicalJson, type JsonValue, type OutputOutcome, type SchemaValueJson } from "@golem-stream/wire";
import type { StreamLeaf } from "@golem-stream/schema-value";
import { TokenTooLongError } from "@golem-stream/tokens";
import { PublicProducerError, type OutputItem, type OutputSource } from "../agent-host.js";
import type { OutputEvent, StreamParent } from "../store/session-store.js";
import { substituteStreamRefs, type SchemaGraph } from "../values.js";
import { BytePermits } from "./byte-permits.js";
import { prepareOutputItem, type ItemOutputs, type PreparedEvent } from "./output-items.js";
import { driveOutputSource } from "./output-source.js";
import { ReplayDivergence } from "./replay-divergence.js";
import type { SessionDeps } from "./session-deps.js";
import type { PendingStream, StreamState } from "./stream-state.js";
import { Tally } from "./tally.js";
import { errorLogFields } from "../error-text.js";

/** What the producers need from their session. */
export interface ProducerHost {
  readonly deps: SessionDeps;
  /** Aborted when the invocation fails or the server shuts down. */
  readonly invocationSignal: AbortSignal;
  prepareStreams(
    leaves: readonly StreamLeaf[],
    graph: SchemaGraph,
    direction: "input" | "output",
    parent: StreamParent,
    coordinatePrefix: string,
  ): PendingStream[];
  /** Registers prepared streams just before their commit. */
  adopt(pending: readonly PendingStream[]): void;
  /** A committed event of `stream` may be sent: `committed`, exactly as the store was handed it. */
  outputAppended(stream: StreamState, committed: OutputEvent): void;
  /** An event of `bytes` payload bytes was handed to the store: it is unsent until the attachment delivers it. */
  recorded(stream: StreamState, bytes: number): void;
  /** A store failure: the invocation cannot go on. */
  fail(error: unknown): void;
  /**
   * Counts `bytes` of output payload against the principal's bound on what
   * it keeps in the store; returns the refusal, counting nothing, when they
   * would go past it.
   */
  chargeStored(bytes: number): Error | undefined;
  /** The ownership epoch the invocation's writes carry (store/ownership.ts). */
  writeEpoch(): bigint;
  /** The fields every log line about the session has: its id and what was invoked (log-observer.ts). */
  sessionLogFields(): Readonly<Record<string, string>>;
}

/** What an item that introduces no stream (most) hands on: shared empty lists. */
const NO_STREAMS: readonly PendingStream[] = Object.freeze([]);
const NO_RECORDS: readonly PendingStream["record"][] = Object.freeze([]);

/** Output bytes handed to the store but not yet committed, per session. */
const UNCOMMITTED_OUTPUT_BYTES = 8 * 1024 * 1024;

const PRODUCER_FAILED = "producer failed";
/** The producer-error message of an item whose new stream's token would be over 8192 characters. */
export const STREAM_TOO_DEEP = "an output item holds a stream too deeply nested for its stream token to fit 8192 characters";

export class OutputProducers {
  readonly #host: ProducerHost;
  /** Output bytes waiting for their commit; separate from input permits so neither starves the other. */
  readonly #uncommitted = new BytePermits(UNCOMMITTED_OUTPUT_BYTES);
  /** Sources declared by `context.output`, until a recorded value exposes them. */
  readonly #declared = new Map<string, OutputSource>();
  /** Sources of exposed streams whose producer has not started yet. */
  readonly #sources = new Map<string, OutputSource>();
  /** Producers running. */
  readonly #active = new Tally();
  /** Events handed to the store whose commit has not settled yet. */
  readonly #inFlight = new Tally();
  /** The store refused an event: counts may run ahead of what it has (see `appendTerminal`). */
  #writeFailed = false;
  /** What an item's preparation needs of this side (output-items.ts). */
  readonly #itemOutputs: ItemOutputs = {
    checkPlaceholders: (leaves) => this.checkPlaceholders(leaves),
    prepareStreams: (leaves, graph, parent) => this.#prepareOutputStreams(leaves, graph, parent),
    expose: (value, leaves, introduced) => this.expose(value, leaves, introduced),
  };

  constructor(host: ProducerHost) {
    this.#host = host;
  }

  /** `context.output(source)`: the placeholder reference that stands for the new stream. */
  declare(source: OutputSource): string {
    const ref = randomUUID();
    this.#declared.set(ref, source);
    return ref;
  }

  /**
   * Records the stream's terminal after every item already handed to the
   * store (the store commits in call order). Synchronous up to the store
   * call, so no item can slip in between the check and the terminal.
   *
   * After a failed write (the invocation then fails, see `settled`), once
   * nothing is in flight, the terminal goes where the store's stream ends:
   * the items the store refused are not part of the stream, and a terminal
   * after them would be refused too. A terminal the store
   * refuses leaves the stream open, so recording the failure can try again.
   */
  async appendTerminal(stream: StreamState, outcome: OutputOutcome): Promise<void> {
    if (stream.outputTerminal) return;
    stream.outputTerminal = true;
    if (this.#writeFailed && this.#inFlight.count === 0) stream.count = stream.outputCommitted;
    const event: OutputEvent = {
      event: "terminal",
      streamId: stream.streamId,
      sequence: stream.count,
      outcome: canonicalJson(outcome as unknown as JsonValue),
    };
    try {
      await this.#host.deps.store.appendOutput(event, [], this.#host.writeEpoch());
    } catch (error) {
      stream.outputTerminal = false;
      throw error;
    }
    this.#host.outputAppended(stream, event);
  }

  /**
   * Resolves once every event handed to the store has committed or failed.
   * A failure records its terminals after this, once the producers are
   * stopped, so they continue what the store has.
   */
  settled(): Promise<void> {
    return this.#inFlight.zero();
  }

  /**
   * Waits until the live attachment is less than a window behind this
   * stream: 256 events, and the session's byte budget in payload bytes (by
   * entries alone, 256 items of 512 KiB were 128 MiB recorded ahead of the
   * client).
   */
  #windowFull(stream: StreamState): boolean {
    const limits = this.#host.deps.limits;
    return stream.backlog >= limits.maxQueuedEntriesPerStream || stream.backlogBytes >= limits.maxQueuedBytesPerSession;
  }

  async #awaitWindow(stream: StreamState, signal: AbortSignal): Promise<void> {
    this.#host.deps.observer.backpressure("output-window");
    while (this.#windowFull(stream) && !signal.aborted) {
      await new Promise<void>((resolve) => {
        const onAbort = (): void => resolve();
        signal.addEventListener("abort", onAbort, { once: true });
        stream.backlogWaiters.push(() => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        });
      });
    }
  }

  /**
   * Hands one produced item to the store without waiting for its commit, so
   * a producer can run ahead and many items share one sync (group commit).
   * Two bounds keep that safe: the stream's window of unsent events (256,
   * and the session's byte budget) and the session's budget of uncommitted
   * output bytes. Nothing is sent
   * before its commit: the attachment is told only when the store resolves.
   */
  #appendItem(stream: StreamState, item: OutputItem, signal: AbortSignal): Promise<void> | undefined {
    if (stream.replay !== undefined) return this.#compareItem(stream, item, signal);
    const events = prepareOutputItem(stream, item, this.#itemOutputs);
    // Nothing to wait for (the common case): recorded here and now, and no
    // promise per item (an async function's, and its caller's await of it).
    for (let at = 0; at < events.length; at++) {
      const prepared = events[at] as PreparedEvent;
      const permit = Math.min(prepared.size, this.#uncommitted.capacity);
      if (this.#windowFull(stream) || !this.#uncommitted.tryAcquire(permit)) return this.#appendAfterWaiting(stream, events, at, signal);
      this.#record(stream, prepared, permit, signal);
    }
    return undefined;
  }

  /**
   * A re-run's item of a stream the run before wrote to (docs/durable-execution.md): below
   * the stored count it is compared with the stored item instead of written (a `u8` chunk
   * that crosses the count is compared up to it and its rest written); a difference fails
   * the invocation as non-deterministic. Streams it introduces are the stored ones
   * (`prepareStreams` matches them), whose producers then start as after a commit.
   */
  async #compareItem(stream: StreamState, item: OutputItem, signal: AbortSignal): Promise<void> {
    const replay = stream.replay;
    if (replay === undefined) return this.#appendItem(stream, item, signal);
    if (signal.aborted) throw signal.reason;
    let rest: Uint8Array | undefined;
    let introduced: readonly PendingStream[] = NO_STREAMS;
    let same: boolean;
    if (stream.elementKind === "u8") {
      if (!(item instanceof Uint8Array)) throw new PublicProducerError("a stream<u8> producer must yield bytes");
      const take = Number(replay.until - replay.position < BigInt(item.length) ? replay.until - replay.position : BigInt(item.length));
      same = await replay.matchBytes(item.subarray(0, take));
      if (take < item.length) rest = item.subarray(take);
    } else {
      const [prepared] = prepareOutputItem(stream, item, this.#itemOutputs);
      const built = (prepared as PreparedEvent).build(replay.position);
      if (built.event.event !== "item") throw new Error("an item built no item event");
      introduced = built.introduced;
      same = await replay.matchItem(built.event.data, built.event.mimeType);
    }
    if (!same) {
      const divergence = new ReplayDivergence(
        `output stream ${stream.coordinate}: the item at ${replay.position - 1n} differs from the stored one`,
      );
      this.#host.fail(divergence);
      throw divergence;
    }
    for (const child of introduced) this.start(child.state);
    if (!replay.done) return;
    stream.replay = undefined;
    // The run before ended this stream here: its producer has nothing more to write.
    if (replay.terminal) stream.producer?.abort(new Error("output stream already ended"));
    else if (rest !== undefined) await this.#appendItem(stream, rest, signal);
  }

  /** `#appendItem` from `events[from]` on, waiting for the window and the uncommitted budget before each. */
  async #appendAfterWaiting(stream: StreamState, events: readonly PreparedEvent[], from: number, signal: AbortSignal): Promise<void> {
    for (let at = from; at < events.length; at++) {
      const prepared = events[at] as PreparedEvent;
      if (this.#windowFull(stream)) await this.#awaitWindow(stream, signal);
      const permit = Math.min(prepared.size, this.#uncommitted.capacity);
      if (!this.#uncommitted.tryAcquire(permit)) await this.#uncommitted.acquire(permit);
      this.#record(stream, prepared, permit, signal);
    }
  }

  /** Builds one event whose `permit` is held and hands it to the store; nothing awaits from its sequence to the store call. */
  #record(stream: StreamState, prepared: PreparedEvent, permit: number, signal: AbortSignal): void {
    if (signal.aborted || stream.outputTerminal) {
      this.#uncommitted.release(permit);
      if (signal.aborted) throw signal.reason;
      throw new Error("output stream already ended");
    }
    let built: ReturnType<PreparedEvent["build"]>;
    try {
      built = prepared.build(stream.count);
    } catch (error) {
      this.#uncommitted.release(permit);
      throw error;
    }
    if (built.event.event === "item") {
      // An item over the principal's bound on stored bytes is never stored: the
      // invocation fails with the refusal (`limit-exceeded`), which aborts the signal.
      const refused = this.#host.chargeStored(built.event.data.length);
      if (refused !== undefined) {
        this.#uncommitted.release(permit);
        this.#host.fail(refused);
        throw signal.aborted ? signal.reason : refused;
      }
    }
    this.#host.adopt(built.introduced);
    stream.count += built.event.event === "item" ? built.event.itemCount : 0n;
    if (built.event.event === "item") {
      this.#host.recorded(stream, built.event.data.length);
      this.#host.deps.observer.outputRecorded(stream.elementKind, Number(built.event.itemCount), built.event.data.length);
    } else {
      this.#host.recorded(stream, 0);
    }
    this.#inFlight.add();
    this.#host.deps.store
      .appendOutput(
        built.event,
        built.introduced.length === 0 ? NO_RECORDS : built.introduced.map((p) => p.record),
        this.#host.writeEpoch(),
      )
      .then(
        () => {
          this.#uncommitted.release(permit);
          // Commits resolve in call order: this is where the stored stream now ends.
          if (built.event.event === "item") stream.outputCommitted = built.event.sequence + built.event.itemCount;
          this.#inFlight.remove();
          this.#host.outputAppended(stream, built.event);
          for (const child of built.introduced) this.start(child.state);
        },
        (error: unknown) => {
          this.#uncommitted.release(permit);
          this.#writeFailed = true;
          this.#inFlight.remove();
          this.#host.fail(error);
        },
      );
  }

  /**
   * The streams an output item introduces. One whose token cannot fit (it lies
   * too deep in the item) fails the producer like an item too large to send:
   * the agent made it, and nothing is committed (docs/protocol/server.md).
   */
  #prepareOutputStreams(leaves: readonly StreamLeaf[], graph: SchemaGraph, parent: StreamParent): PendingStream[] {
    try {
      return this.#host.prepareStreams(leaves, graph, "output", parent, "/value");
    } catch (error) {
      if (error instanceof TokenTooLongError) throw new PublicProducerError(STREAM_TOO_DEEP);
      throw error;
    }
  }

  checkPlaceholders(leaves: readonly StreamLeaf[]): void {
    for (const leaf of leaves) {
      const ref = "provisionalRef" in leaf.ref ? leaf.ref.provisionalRef : undefined;
      if (ref === undefined || !this.#declared.has(ref)) {
        throw new PublicProducerError("an output stream must be created with context.output");
      }
    }
  }

  /** Swaps placeholders for stream tokens and binds each new stream to its source. */
  expose(value: SchemaValueJson, leaves: readonly StreamLeaf[], introduced: readonly PendingStream[]): SchemaValueJson {
    // A value with no stream in it has nothing to swap (it is the decoder's own copy either way).
    if (leaves.length === 0) return value;
    const tokens = new Map<string, string>();
    leaves.forEach((leaf, i) => {
      const ref = "provisionalRef" in leaf.ref ? leaf.ref.provisionalRef : "";
      const stream = introduced[i];
      if (stream === undefined) return;
      tokens.set(ref, stream.state.token);
      const source = this.#declared.get(ref);
      this.#declared.delete(ref);
      if (source !== undefined) this.#sources.set(stream.state.streamId, source);
    });
    return substituteStreamRefs(value, tokens);
  }

  start(stream: StreamState): void {
    const source = this.#sources.get(stream.streamId);
    this.#sources.delete(stream.streamId);
    if (source === undefined) return;
    // A re-run's stream the run before had ended without items: nothing to compare, nothing to write.
    if (stream.replay?.until === 0n) stream.replay = undefined;
    if (stream.outputTerminal && stream.replay === undefined) return;
    const abort = new AbortController();
    stream.producer = abort;
    this.#active.add();
    const onInvocationAbort = (): void => abort.abort(this.#host.invocationSignal.reason);
    this.#host.invocationSignal.addEventListener("abort", onInvocationAbort, { once: true });
    void driveOutputSource(source, (item) => this.#appendItem(stream, item, abort.signal), abort.signal)
      .then(
        () => {
          if (abort.signal.aborted) return undefined;
          // A re-run's source that ends before the items the run before wrote: non-determinism.
          if (stream.replay !== undefined)
            return this.#host.fail(
              new ReplayDivergence(
                `output stream ${stream.coordinate} ended after ${stream.replay.position} of its ${stream.replay.until} stored items`,
              ),
            );
          return this.appendTerminal(stream, { kind: "ok" });
        },
        (error: unknown) => {
          if (abort.signal.aborted) return undefined;
          if (stream.replay !== undefined)
            return this.#host.fail(
              new ReplayDivergence(
                `output stream ${stream.coordinate} failed after ${stream.replay.position} of its ${stream.replay.until} stored items`,
              ),
            );
          // Logged whether or not its message is public (the server's own checks, an item that
          // does not fit, are): the agent's author reads the log, not only the caller.
          const fields = {
            event: "producer.failed",
            ...this.#host.sessionLogFields(),
            stream: stream.coordinate,
            streamId: stream.streamId,
          };
          this.#host.deps.logger.warn("output producer failed", { ...fields, ...errorLogFields(error) });
          const message = error instanceof PublicProducerError ? error.message : PRODUCER_FAILED;
          return this.appendTerminal(stream, { kind: "error", code: "producer-error", message });
        },
      )
      .catch((error: unknown) => this.#host.fail(error))
      .finally(() => {
        this.#host.invocationSignal.removeEventListener("abort", onInvocationAbort);
        stream.producer = undefined;
        this.#active.remove();
      });
  }

  whenIdle(): Promise<void> {
    return this.#active.zero();
  }

  /** No output is being produced (what `whenIdle` waits for is so now). */
  get idle(): boolean {
    return this.#active.count === 0;
  }
}
