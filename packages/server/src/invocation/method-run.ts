/**
 * One run of the method on a live session: the agent's context (its inputs,
 * its outputs, its journal), the call, the result committed (or, on a
 * re-run, compared with the stored one), then the success. A re-run
 * (docs/durable-execution.md) reads every input again from the store and
 * matches what the run before wrote instead of writing it again; it owns
 * the run's journal, its number and whether it replays.
 *
 * Apart from `LiveSession` so that what happens between `run` and the
 * success reads top to bottom in one file; the session keeps the state the
 * run shares with its attachments and the other nodes.
 */
import {
  canonicalJson,
  encodeUtf8,
  ProtocolError,
  type InvocationOutcome,
  type JsonValue,
  type SchemaValueJson,
  type ServerCancelReason,
} from "@golem-stream/wire";
import type { InvocationContext, MethodDescriptor } from "../agent-host.js";
import type { JournalEntry, SessionRecord, SessionStore } from "../store/session-store.js";
import { isOwnershipLost } from "../store/ownership.js";
import { resultRecordBytes } from "../store/record-bytes.js";
import { catalogueGraph, decodeValue } from "../values.js";
import { ResultRefused, refusedBecause } from "./failure-outcome.js";
import { createInvocationContext, type InvocationInput } from "./invocation-context.js";
import { ABORTED, untilAborted } from "./until-aborted.js";
import { Journal } from "./journal.js";
import { invocationResultFits } from "./message-room.js";
import type { OutputProducers } from "./output-producers.js";
import type { RecordFinish } from "./outcome-recorder.js";
import { OutputReplay } from "./output-replay.js";
import { ReplayDivergence } from "./replay-divergence.js";
import type { SessionDeps } from "./session-deps.js";
import type { PendingStream, StreamState } from "./stream-state.js";
import type { StreamRegistry } from "./stream-registry.js";

/** How a run of the method goes (docs/durable-execution.md). */
export interface RunOptions {
  /** The method is replayable and the store keeps journals: `ctx.step`, `now` and `random` are journaled. */
  readonly journaled: boolean;
  /** A re-run: its number (2 on the first) and the journal of the runs before. */
  readonly rerun?: { readonly attempt: number; readonly journal: readonly JournalEntry[] };
}

/** A checked result: the text the session records, and the streams it introduces. */
interface PreparedResult {
  readonly text: string;
  readonly introduced: readonly PendingStream[];
}

/** What a run needs from its session. */
export interface RunHost {
  readonly deps: SessionDeps;
  readonly sessionId: string;
  readonly streams: StreamRegistry;
  readonly producers: OutputProducers;
  /** Aborted when the invocation fails or the server shuts down. */
  readonly invocationSignal: AbortSignal;
  record(): SessionRecord;
  /** The epoch the invocation's writes carry (store/ownership.ts). */
  ownerEpoch(): bigint;
  failing(): boolean;
  /** Registers prepared streams just before their commit. */
  adopt(pending: readonly PendingStream[]): void;
  /** Counts bytes the store is about to keep against the principal's bound; the refusal when they would go past it. */
  chargeStored(bytes: number): Error | undefined;
  /** Gives an input its agent queue (session-input.ts). */
  openQueue(stream: StreamState): void;
  /** Hands the agent the committed items of an input it has not had (session-input.ts). */
  feed(stream: StreamState): void;
  cancelInputByServer(stream: StreamState, reason: ServerCancelReason): Promise<void>;
  /** A re-run started: nobody is attached after a restart, and a client that never comes back lets the session go as after a detach. */
  rerunStarted(): void;
  /** The result is committed: the session's record holds it, and the attachment may send it. */
  resultCommitted(text: string): void;
  /**
   * Records the outcome once (outcome-recorder.ts); with `record`, its write is `record`'s (given
   * the outcome's text and time) instead of the store's `finish`.
   */
  finish(outcome: InvocationOutcome, record?: RecordFinish): Promise<void>;
  /** Fails the invocation once; never rejects. */
  fail(error: unknown): Promise<void>;
}

export class MethodRun {
  readonly #host: RunHost;
  /** This run's journal (journal.ts); steps just run until `run` says the method is journaled. */
  #journal: Journal;
  /** This run's number (`ctx.attempt`). */
  #attempt = 1;
  /** A re-run: streams the method creates are matched with the stored ones, and its result with the stored result. */
  #replaying = false;
  /** The agent's method has settled (returned its result or thrown). */
  #returned = false;

  constructor(host: RunHost) {
    this.#host = host;
    this.#journal = new Journal(host.sessionId, undefined);
  }

  /** A re-run: the streams the method creates are the run before's (stream-registry.ts). */
  get replaying(): boolean {
    return this.#replaying;
  }

  /** Whether the agent's method has settled: until then it may be computing its result. */
  get returned(): boolean {
    return this.#returned;
  }

  /**
   * Runs the method. Resolves when the invocation has finished (durably),
   * never rejects: every failure becomes an `invocation-failed` finish.
   */
  run(method: MethodDescriptor, context: InvocationInput, options: RunOptions): Promise<void> {
    const store = this.#host.deps.store;
    const append = store.appendJournal;
    this.#journal = new Journal(
      this.#host.sessionId,
      options.journaled && append !== undefined ? { append: (entry) => this.#appendJournal(append, entry) } : undefined,
      options.rerun?.journal,
      (divergence) => void this.#host.fail(divergence),
    );
    if (options.rerun !== undefined) {
      this.#attempt = options.rerun.attempt;
      this.#replaying = true;
      this.#prepareRerun();
      this.#host.rerunStarted();
      return this.#execute(method, context).catch((error: unknown) => this.#host.fail(error));
    }
    for (const stream of this.#host.streams.values()) {
      if (stream.direction === "input" && stream.inputTerminal === undefined) this.#host.openQueue(stream);
    }
    return this.#execute(method, context).catch((error: unknown) => this.#host.fail(error));
  }

  /**
   * Stores one journal entry at the owner's epoch (fenced like the invocation's other writes). A
   * refusal for the epoch stops the invocation here even if the method catches the step's
   * rejection: another node owns the session now.
   */
  async #appendJournal(append: NonNullable<SessionStore["appendJournal"]>, entry: JournalEntry): Promise<void> {
    try {
      await append.call(this.#host.deps.store, entry, this.#host.ownerEpoch());
    } catch (error) {
      if (isOwnershipLost(error)) void this.#host.fail(error);
      throw error;
    }
  }

  /**
   * A re-run (docs/durable-execution.md): every input is read again from
   * sequence 0, from the store, then live; every output the run before
   * wrote is compared up to its stored count instead of written again.
   */
  #prepareRerun(): void {
    for (const stream of this.#host.streams.values()) {
      if (stream.direction === "input") {
        stream.fed = 0n;
        this.#host.openQueue(stream);
        this.#host.feed(stream);
      } else if (stream.count > 0n || stream.outputTerminal) {
        stream.replay = new OutputReplay(this.#host.deps.store, stream.streamId, stream.count, stream.outputTerminal);
      }
    }
  }

  async #execute(method: MethodDescriptor, input: InvocationInput): Promise<void> {
    const context = this.#context(input);
    const answer = this.#host.deps.host.invoke(context);
    const settled = (): void => void (this.#returned = true);
    answer.then(settled, settled);
    const result = await untilAborted(answer, this.#host.invocationSignal);
    // Aborted, the invocation is failing or stopped (every abort marks it so first): the run ends
    // once the failure being recorded, if any, is (`fail` records nothing more, it waits for that).
    if (result === ABORTED) return this.#host.fail(this.#host.invocationSignal.reason);
    if (this.#host.failing()) return;
    const prepared = this.#prepareResult(method, result);
    const finishWithResult = this.#host.deps.store.finishWithResult;
    if (finishWithResult !== undefined && this.#resultIsLast(prepared)) {
      // Nothing is left to write but the result and the success: one write, so one commit, for both.
      // The attachment hears of the result first, then of the finish (`finish` tells it after this).
      await this.#host.finish({ kind: "success" }, async (outcome, at) => {
        await finishWithResult.call(this.#host.deps.store, this.#host.sessionId, prepared.text, outcome, at, this.#host.ownerEpoch());
        this.#host.resultCommitted(prepared.text);
      });
      return;
    }
    await this.#commitResult(prepared);
    await this.#host.producers.whenIdle();
    if (this.#host.failing()) return;
    // Before a successful finish every input is terminal (decisions section 8).
    for (const stream of this.#host.streams.inOrder()) {
      if (stream.direction === "input" && stream.inputTerminal === undefined) {
        await this.#host.cancelInputByServer(stream, "consumer-drop");
      }
    }
    await this.#host.finish({ kind: "success" });
  }

  /**
   * Whether the result is the last thing this run writes: it introduces no stream, no output is
   * being produced, and every input has its terminal. Then the success may go with it.
   */
  #resultIsLast(prepared: PreparedResult): boolean {
    if (this.#replaying || prepared.introduced.length > 0 || !this.#host.producers.idle) return false;
    for (const stream of this.#host.streams.inOrder()) if (stream.direction === "input" && stream.inputTerminal === undefined) return false;
    return true;
  }

  /** The method's result checked against its schema, as the text the session records, with the streams it introduces. */
  #prepareResult(method: MethodDescriptor, result: SchemaValueJson | undefined): PreparedResult {
    let body: JsonValue;
    let introduced: PendingStream[] = [];
    if (method.result === undefined) {
      if (result !== undefined) throw new ResultRefused("the method has no result, yet returned a value");
      body = { kind: "none" };
    } else {
      if (result === undefined) throw new ResultRefused("the method returned no result");
      const graph = catalogueGraph(method.result);
      let decoded: ReturnType<typeof decodeValue>;
      try {
        decoded = decodeValue(result as unknown as JsonValue, graph, "provisional", "result");
      } catch (error) {
        // The decoder names a path in the declared schema and the rule broken; at most it quotes a
        // clipped piece of the value, which was the caller's result anyway.
        const why = error instanceof ProtocolError ? refusedBecause(error) : "does not match its declared schema";
        throw new ResultRefused(`the method's result ${why}`, { cause: error });
      }
      this.#host.producers.checkPlaceholders(decoded.streams);
      introduced = this.#host.streams.prepare(decoded.streams, graph, "output", { kind: "result" }, "/result/value");
      const value = this.#host.producers.expose(decoded.value as unknown as SchemaValueJson, decoded.streams, introduced);
      body = { kind: "value", graph: method.result, value: value as unknown as JsonValue };
    }
    // A result no attachment could send is never committed: the invocation fails instead (message-room.ts).
    const text = resultText(body);
    if (
      !invocationResultFits(
        encodeUtf8(text).length,
        introduced.map((p) => p.state.token),
      )
    ) {
      throw new ResultRefused("the result does not fit in one 8 MiB message");
    }
    // A new result joins the session's record, which counts against the principal's stored bytes
    // (store/record-bytes.ts); a re-run's is the one already stored and counted.
    if (!(this.#replaying && this.#host.record().result !== undefined)) {
      const refused = this.#host.chargeStored(resultRecordBytes(text));
      if (refused !== undefined) throw refused;
    }
    return { text, introduced };
  }

  /** Records the result (on a re-run, compares it with the stored one), then lets its streams' producers start. */
  async #commitResult({ text, introduced }: PreparedResult): Promise<void> {
    if (this.#replaying && this.#host.record().result !== undefined) {
      // The run before committed its result (and its streams, matched by `prepareStreams`): the same one, or non-determinism.
      if (text !== this.#host.record().result) throw new ReplayDivergence("the result differs from the stored one");
      for (const stream of introduced) this.#host.producers.start(stream.state);
      return;
    }
    this.#host.adopt(introduced);
    await this.#host.deps.store.setResult(
      this.#host.sessionId,
      text,
      introduced.map((p) => p.record),
      this.#host.ownerEpoch(),
    );
    this.#host.resultCommitted(text);
    for (const stream of introduced) this.#host.producers.start(stream.state);
  }

  #context(input: InvocationInput): InvocationContext {
    return createInvocationContext(this.#host.record(), input, this.#host.invocationSignal, {
      inputStream: (token) => this.#host.streams.byToken(token),
      declareOutput: (source) => this.#host.producers.declare(source),
      journal: this.#journal,
      attempt: this.#attempt,
    });
  }
}

/** The result's canonical text, written within the message limit: past it, no attachment could send it. */
function resultText(body: JsonValue): string {
  try {
    return canonicalJson(body);
  } catch (error) {
    if (error instanceof ProtocolError && error.code === "limit-exceeded")
      throw new ResultRefused("the result does not fit in one 8 MiB message", { cause: error });
    throw error;
  }
}
