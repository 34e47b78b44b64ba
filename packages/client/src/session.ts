/**
 * The session engine behind one invocation handle: it connects, sends the
 * frozen attach descriptor, installs channel tables, routes messages to the
 * output streams and input feeders, and after every connection makes the
 * next attach that `attach-policy.ts` decides (protocol section 9).
 *
 * Waits between attempts follow the reconnect policy; its failure count
 * resets whenever an attach is accepted.
 */
import { randomUUID } from "node:crypto";
import type {
  ClientCancelReason,
  JsonValue,
  InvocationOutcome,
  InvocationResultBody,
  InvocationStart,
  ResumeAttach,
  SchemaValueJson,
  ServerMessage,
  StreamMapping,
} from "@golem-stream/wire";
import { LIMITS, ProtocolError, encodeMessage } from "@golem-stream/wire";
import { ClientError, serverViolation, violation } from "./errors.js";
import { InputFeeder, type FeederHost } from "./input-feeder.js";
import type { InputStream, ParamNode } from "./input-stream.js";
import { OutputStream, type OutputStreamHost } from "./output-stream.js";
import { reconnectDelay, type ReconnectPolicy } from "./reconnect-policy.js";
import { isTerminalCursor, streamIdentityOf } from "./token-peek.js";
import type { Connection, Transport } from "./transport.js";
import { bindProvisionalRefs, findProvisionalRefs, findStreamTokens, renewProvisionalRefs } from "./values.js";
import { checkItem, checkResult, valueToJs, type ElementSchema } from "./schema.js";
import { nextAttach, type ConnectionOutcome } from "./attach-policy.js";
import { OutputBudget } from "./output-budget.js";
import type { SchemaGraph } from "@golem-stream/schema-value";
import type { ResumeState } from "./checkpoint.js";

export interface SessionConfig {
  readonly url: string;
  readonly getToken: () => string | Promise<string>;
  readonly transport: Transport;
  readonly policy: Required<ReconnectPolicy>;
  readonly maxUnackedInputBytes: number;
  readonly maxQueuedEntriesPerStream: number;
  readonly maxQueuedBytes: number;
}

export type SessionEvent =
  | { readonly type: "accepted"; readonly operation: "start" | "resume" | "takeover"; readonly attemptId: string; readonly replayed: boolean }
  | { readonly type: "reconnecting"; readonly failures: number; readonly delayMs: number; readonly cause: string }
  | { readonly type: "revoked" }
  | { readonly type: "stream"; readonly stream: OutputStream }
  | { readonly type: "input-failed"; readonly input: InputStream; readonly error: unknown };

export interface SessionCallbacks {
  onEvent(event: SessionEvent): void;
  /** `toJs` converts the result to plain JavaScript, its streams becoming `OutputStream`s. */
  onResult(result: InvocationResultBody, streams: OutputStream[], toJs: () => unknown): void;
  onFinished(outcome: InvocationOutcome): void;
  onFailed(error: ClientError): void;
  /** Absent when nobody persists: then no state is even computed. */
  readonly onCheckpoint: ((state: ResumeState) => Promise<void> | void) | undefined;
}

/** How the session begins: a new start, or attaching to an existing session from saved state. */
export type SessionStart =
  | { readonly kind: "start"; readonly template: Omit<InvocationStart, "attemptId" | "methodParameters">; readonly params: ParamNode }
  | { readonly kind: "attach"; readonly operation: "resume" | "takeover"; readonly state: ResumeState };

type Outcome = ConnectionOutcome;

interface Operation {
  readonly message: InvocationStart | ResumeAttach;
  sends: number;
  /** Handed to the persistence callback (which finished) before its first send. */
  saved?: boolean;
  /** Accepted on some connection: its outcome is no longer uncertain. */
  accepted?: boolean;
}

type ChannelEntry =
  | { readonly direction: "input"; readonly feeder: InputFeeder | undefined }
  | { readonly direction: "output"; readonly stream: OutputStream };

/** One connection attempt and its connection-local channel table (protocol section 8). */
interface Attachment {
  connection: Connection | undefined;
  accepted: boolean;
  readonly channels: Map<number, ChannelEntry>;
  readonly channelOf: Map<OutputStream | InputFeeder, number>;
  settle(outcome: Outcome): void;
}

export class Session {
  readonly #config: SessionConfig;
  readonly #callbacks: SessionCallbacks;
  readonly #start: SessionStart;
  readonly #abort = new AbortController();

  #operation: Operation;
  #sessionToken: string | undefined;
  #selector: InvocationStart["selector"] | undefined;
  #idempotencyKey: string | undefined;
  #attachment: Attachment | undefined;
  #done = false;
  #resultSeen = false;

  readonly #outputs = new Map<string, OutputStream>();
  readonly #feedersByBinding = new Map<InputStream, InputFeeder>();
  readonly #feedersByRef = new Map<string, InputFeeder>();
  readonly #feedersByToken = new Map<string, InputFeeder>();
  /** Bindings of the first start and their references, until their sources are claimed. */
  readonly #unclaimed = new Map<InputStream, string>();
  /** Cursors from a checkpoint whose stream this process has not seen yet, keyed by stream identity. */
  readonly #inheritedCursors = new Map<string, string>();
  /**
   * Provisional references of a start frozen by another process: their
   * sources stayed behind, so the inputs they resolve to are cancelled.
   */
  #orphanRefs = new Set<string>();

  readonly #budget: OutputBudget<OutputStream>;
  #checkpointChain: Promise<void> = Promise.resolve();
  /** Set once the persistence callback failed: nothing more is delivered or saved. */
  #checkpointError: ClientError | undefined;

  constructor(config: SessionConfig, start: SessionStart, callbacks: SessionCallbacks) {
    this.#config = config;
    this.#callbacks = callbacks;
    this.#start = start;
    this.#budget = new OutputBudget(config.maxQueuedEntriesPerStream, config.maxQueuedBytes, (paused) => {
      const connection = this.#attachment?.accepted ? this.#attachment.connection : undefined;
      if (paused) connection?.pause();
      else connection?.resume();
    });
    if (start.kind === "start") {
      this.#selector = start.template.selector;
      this.#idempotencyKey = start.template.idempotencyKey;
      this.#operation = { message: this.#freshStart(), sends: 0 };
      // Encode once now so that unusable arguments throw from invoke(), not as an endless
      // series of failed connections.
      try {
        encodeMessage(this.#operation.message);
      } catch (cause) {
        const code = cause instanceof ProtocolError ? cause.code : undefined;
        throw new ClientError("invalid-argument", cause instanceof Error ? cause.message : "invalid invocation", {
          ...(code === undefined ? {} : { code }),
          cause,
        });
      }
      this.#claimStartSources();
    } else {
      const { state } = start;
      this.#selector = state.selector;
      this.#idempotencyKey = state.idempotencyKey;
      this.#sessionToken = state.sessionToken;
      for (const cursor of state.outputCursors) this.#inheritedCursors.set(streamIdentityOf(cursor) ?? cursor, cursor);
      // A checkpoint's in-flight operation had an uncertain outcome: retry it exactly first.
      let message: InvocationStart | ResumeAttach;
      if (state.sessionToken === undefined) {
        message = state.pendingOperation;
        this.#orphanRefs = new Set(findProvisionalRefs(message.methodParameters as unknown as JsonValue));
      } else {
        message = state.pendingOperation ?? {
          type: "resumeAttach",
          attemptId: randomUUID(),
          operation: start.operation,
          outputCursors: [...state.outputCursors],
          sessionToken: state.sessionToken,
        };
      }
      // A pending operation was saved before its first send, so the process that saved it may
      // have sent it: count that send, and an acceptance of it may be the server's replay
      // (protocol 6.1: a replay whose attachment had detached is revoked, then resumed).
      this.#operation = { message, sends: state.pendingOperation === undefined ? 0 : 1 };
    }
  }

  get sessionToken(): string | undefined {
    return this.#sessionToken;
  }

  get outputs(): ReadonlyMap<string, OutputStream> {
    return this.#outputs;
  }

  /**
   * The state `client.resume`/`client.takeover` continue from: the frozen
   * start until it is accepted, then the session token, cursors and any
   * resume/takeover in flight.
   */
  get state(): ResumeState | undefined {
    if (this.#selector === undefined || this.#idempotencyKey === undefined) return undefined;
    const pending = this.#operation.accepted === true ? undefined : this.#operation.message;
    if (this.#sessionToken === undefined) {
      if (pending?.type !== "invocationStart") return undefined;
      return { selector: this.#selector, idempotencyKey: this.#idempotencyKey, outputCursors: [], pendingOperation: pending };
    }
    return {
      sessionToken: this.#sessionToken,
      outputCursors: this.#cursorSet(),
      selector: this.#selector,
      idempotencyKey: this.#idempotencyKey,
      ...(pending?.type === "resumeAttach" ? { pendingOperation: pending } : {}),
    };
  }

  async run(): Promise<void> {
    let failures = 0;
    while (!this.#done) {
      // A new descriptor is saved before it is first sent, so a crash after sending always
      // leaves a state that retries it exactly (protocol 9 and 13): for a start this is the
      // only way back into an invocation whose acceptance this process never saw.
      if (this.#operation.saved !== true) {
        await this.#checkpoint();
        this.#operation.saved = true;
        if (this.#done) return;
      }
      const outcome = await this.#connectOnce();
      if (this.#done) return;
      const accepted = this.#attachment?.accepted ?? false;
      if (accepted) failures = 0;
      if (outcome.kind === "revoked") this.#callbacks.onEvent({ type: "revoked" });
      const next = nextAttach(outcome, { accepted, sends: this.#operation.sends, hasSession: this.#sessionToken !== undefined });
      switch (next.kind) {
        case "done":
          return;
        case "fail":
          this.#fail(next.error);
          return;
        case "same":
          break;
        case "fresh-start":
          this.#operation = { message: this.#freshStart(), sends: 0 };
          break;
        case "fresh-resume":
          this.#operation = { message: this.#freshResume(), sends: 0 };
          break;
      }
      failures++;
      const delayMs = reconnectDelay(this.#config.policy, failures);
      if (delayMs === undefined) {
        this.#fail(
          new ClientError("connection-lost", `gave up after ${failures - 1} reconnect attempts`, {
            cause: outcome.kind === "rejected" ? outcome.error : undefined,
          }),
        );
        return;
      }
      const cause = outcome.kind === "rejected" ? outcome.error.code : outcome.kind === "lost" ? outcome.cause : outcome.kind;
      this.#callbacks.onEvent({ type: "reconnecting", failures, delayMs, cause });
      await sleep(delayMs, this.#abort.signal);
    }
  }

  /** Ends the invocation from this side: cancels every open stream, detaches, fails with `aborted`. */
  abort(reason: string): void {
    if (this.#done) return;
    for (const feeder of this.#feedersByBinding.values()) feeder.cancel("cancelled");
    // A checkpoint failure while cancelling fails the session, which reports it.
    for (const stream of this.#outputs.values()) stream.cancel("cancelled").catch(() => undefined);
    this.#fail(new ClientError("aborted", reason));
  }

  /**
   * Leaves the invocation running on the server and stops here: no stream is
   * cancelled (transport loss only detaches, protocol section 8). The returned
   * state continues it with `client.takeover`.
   */
  detach(): ResumeState | undefined {
    const state = this.state;
    if (!this.#done) this.#fail(new ClientError("aborted", "detached; the invocation continues on the server"));
    return state;
  }

  // ---- one connection ----

  #connectOnce(): Promise<Outcome> {
    return new Promise<Outcome>((resolve) => {
      let settled = false;
      const attachment: Attachment = {
        connection: undefined,
        accepted: false,
        channels: new Map(),
        channelOf: new Map(),
        settle: (outcome) => {
          if (settled) return;
          settled = true;
          for (const feeder of this.#feedersByBinding.values()) feeder.detach();
          attachment.connection?.close(1000, outcome.kind);
          resolve(outcome);
        },
      };
      this.#attachment = attachment;
      void (async () => {
        let token: string;
        try {
          token = await this.#config.getToken();
        } catch (cause) {
          attachment.settle({ kind: "fatal", error: new ClientError("invalid-argument", "getToken failed", { cause }) });
          return;
        }
        try {
          const connection = await this.#config.transport.connect(
            { url: this.#config.url, token, signal: this.#abort.signal },
            {
              onMessage: (message, wireBytes) => {
                if (settled) return;
                try {
                  this.#handle(attachment, message, wireBytes);
                } catch (error) {
                  attachment.settle({ kind: "fatal", error: serverViolation(error) });
                }
              },
              onClose: (info) => {
                if (info.error !== undefined) attachment.settle({ kind: "fatal", error: serverViolation(info.error) });
                else attachment.settle({ kind: "lost", cause: `connection closed (${info.code})` });
              },
            },
          );
          if (settled) {
            connection.close(1000, "settled");
            return;
          }
          attachment.connection = connection;
          this.#operation.sends++;
          connection.send(this.#operation.message);
        } catch (error) {
          if (error instanceof ProtocolError && !error.retryable) attachment.settle({ kind: "rejected", error });
          else attachment.settle({ kind: "lost", cause: error instanceof Error ? error.message : "connect failed" });
        }
      })();
    });
  }

  #handle(attachment: Attachment, message: ServerMessage, wireBytes: number): void {
    if (!attachment.accepted) {
      switch (message.type) {
        case "invocationAccepted":
          this.#onAccepted(attachment, message.attemptId, message.idempotencyKey, message.sessionToken, message.mappings);
          return;
        case "invocationRejected":
          if (message.attemptId !== undefined && message.attemptId !== this.#operation.message.attemptId) {
            throw violation("rejection names another attempt");
          }
          attachment.settle({ kind: "rejected", error: new ProtocolError(message.code, message.message, { retryable: message.retryable }) });
          return;
        default:
          throw violation(`${message.type} before invocationAccepted`);
      }
    }
    switch (message.type) {
      case "invocationAccepted":
        throw violation("a second invocationAccepted on one connection");
      case "invocationRejected":
        attachment.settle({
          kind: "rejected",
          error: new ProtocolError(message.code, message.message, { retryable: message.retryable }),
        });
        return;
      case "invocationResult":
        this.#install(attachment, message.mappings, false);
        this.#onResult(message.result);
        return;
      case "outputStreamItem": {
        this.#install(attachment, message.mappings, false);
        const stream = this.#outputOn(attachment, message.channel);
        const schema = stream.schema;
        if (schema !== undefined) {
          if (schema.direct !== undefined) throw violation(`a text item on a stream<${schema.direct}>, whose items must be binary messages`);
          this.#adoptSchemas(checkItem(schema, message.value).streams);
        }
        stream.pushItem(message.sequence, 1n, message.value, message.cursorToken, wireBytes);
        this.#locateNested(message.value);
        return;
      }
      case "output-u8":
        this.#outputOfKind(attachment, message.channel, "u8").pushItem(
          message.sequence,
          BigInt(message.payload.byteLength),
          message.payload,
          message.cursorToken,
          wireBytes,
        );
        return;
      case "output-binary":
        this.#outputOfKind(attachment, message.channel, "binary").pushItem(
          message.sequence,
          1n,
          message.mimeType === undefined ? { bytes: message.payload } : { bytes: message.payload, mimeType: message.mimeType },
          message.cursorToken,
          wireBytes,
        );
        return;
      case "outputStreamEnd":
        this.#outputOn(attachment, message.channel).pushEnd(message.sequence, message.outcome, message.cursorToken);
        return;
      case "inputStreamAck": {
        this.#install(attachment, message.mappings, false);
        const entry = attachment.channels.get(message.channel);
        if (entry?.direction !== "input") throw violation(`inputStreamAck on channel ${message.channel}, not an input`);
        entry.feeder?.acknowledge(message.highestContiguousSequence, message.terminal);
        return;
      }
      case "streamCancel": {
        const entry = attachment.channels.get(message.channel);
        if (entry === undefined) throw violation(`streamCancel on unknown channel ${message.channel}`);
        // Output: the outputStreamEnd that follows carries the outcome. Input: stop reading the source.
        if (entry.direction === "input") entry.feeder?.serverCancelled();
        return;
      }
      case "attachmentRevoked":
        attachment.settle({ kind: "revoked" });
        return;
      case "invocationFinished":
        this.#onFinished(message.outcome);
        attachment.settle({ kind: "finished" });
        return;
    }
  }

  #onAccepted(
    attachment: Attachment,
    attemptId: string,
    idempotencyKey: string,
    sessionToken: string,
    mappings: readonly StreamMapping[],
  ): void {
    const sent = this.#operation.message;
    if (attemptId !== sent.attemptId) throw violation("invocationAccepted names another attempt");
    if (sent.type === "invocationStart" && idempotencyKey !== sent.idempotencyKey) {
      throw violation("invocationAccepted carries another idempotency key");
    }
    attachment.accepted = true;
    this.#operation.accepted = true;
    this.#sessionToken = sessionToken;
    this.#idempotencyKey = idempotencyKey;
    if (this.#budget.paused) attachment.connection?.pause();
    this.#install(attachment, mappings, true);
    // Cancellations that were in flight when the previous connection died.
    for (const stream of this.#outputs.values()) {
      const reason = stream.cancelRequested;
      if (reason !== undefined) this.#sendOutputCancel(stream, reason);
    }
    const operation = sent.type === "invocationStart" ? "start" : sent.operation;
    this.#callbacks.onEvent({ type: "accepted", operation, attemptId, replayed: this.#operation.sends > 1 });
    this.#checkpoint();
  }

  /** Installs mappings before anything can use their channels (protocol section 8). */
  #install(attachment: Attachment, mappings: readonly StreamMapping[], atAcceptance: boolean): void {
    for (const mapping of mappings) {
      if (attachment.channels.has(mapping.channel)) throw violation(`channel ${mapping.channel} mapped twice`);
      if (mapping.direction === "input") this.#installInput(attachment, mapping, atAcceptance);
      else this.#installOutput(attachment, mapping);
    }
  }

  #installInput(attachment: Attachment, mapping: StreamMapping, atAcceptance: boolean): void {
    const highWater = mapping.inputHighWater ?? { sequence: 0n, terminal: false };
    let feeder: InputFeeder | undefined;
    if (mapping.provisionalRef !== undefined) {
      feeder = this.#feedersByRef.get(mapping.provisionalRef);
      if (feeder === undefined && !this.#orphanRefs.has(mapping.provisionalRef)) {
        throw violation("mapping resolves a provisional reference this client never sent");
      }
    } else {
      feeder = this.#feedersByToken.get(mapping.streamToken);
    }
    attachment.channels.set(mapping.channel, { direction: "input", feeder });
    const connection = attachment.connection;
    if (feeder === undefined) {
      // An input of a session (or frozen start) taken over from another process: its source
      // is gone (protocol 13).
      if (!atAcceptance) throw violation("an input mapping for an unknown stream");
      if (!highWater.terminal) connection?.send({ type: "streamCancel", channel: mapping.channel, reason: "source-unavailable" });
      return;
    }
    feeder.streamToken = mapping.streamToken;
    this.#feedersByToken.set(mapping.streamToken, feeder);
    attachment.channelOf.set(feeder, mapping.channel);
    if (connection === undefined) return;
    feeder.attach({ channel: mapping.channel, send: (message) => connection.send(message) }, highWater);
  }

  #installOutput(attachment: Attachment, mapping: StreamMapping): void {
    const stream = this.#outputFor(mapping.streamToken);
    attachment.channels.set(mapping.channel, { direction: "output", stream });
    attachment.channelOf.set(stream, mapping.channel);
  }

  #outputFor(streamToken: string): OutputStream {
    const known = this.#outputs.get(streamToken);
    if (known !== undefined) return known;
    // Every stream costs memory here; a server announcing more than the protocol allows is hostile.
    if (this.#outputs.size + this.#feedersByBinding.size >= LIMITS.maxStreamsPerSession) {
      throw violation(`server announced more than ${LIMITS.maxStreamsPerSession} streams`);
    }
    const identity = streamIdentityOf(streamToken) ?? streamToken;
    const inherited = this.#inheritedCursors.get(identity);
    if (inherited !== undefined) this.#inheritedCursors.delete(identity);
    // A stream inherited from a checkpoint resumes after a cursor whose position we do not read.
    const knownStart = inherited === undefined && this.#inheritedCursors.size === 0;
    let stream: OutputStream | undefined;
    const host: OutputStreamHost = {
      onQueueChange: (_entries, bytes) => this.#budget.changed(stream!, bytes),
      onCommit: () => this.#commit(),
      sendCancel: (target, reason) => this.#sendOutputCancel(target, reason),
    };
    stream = new OutputStream(streamToken, host, {
      ...(inherited === undefined ? {} : { retainedCursor: inherited }),
      knownStart,
      // Holding its terminal cursor, the stream is complete: the server replays nothing for it.
      terminalDelivered: inherited !== undefined && isTerminalCursor(inherited),
    });
    this.#outputs.set(streamToken, stream);
    this.#callbacks.onEvent({ type: "stream", stream });
    return stream;
  }

  #outputOn(attachment: Attachment, channel: number): OutputStream {
    const entry = attachment.channels.get(channel);
    if (entry?.direction !== "output") throw violation(`output message on channel ${channel}, which is not a mapped output`);
    return entry.stream;
  }

  /** A binary message is legal only on a stream whose element type is that direct-binary kind. */
  #outputOfKind(attachment: Attachment, channel: number, kind: "u8" | "binary"): OutputStream {
    const stream = this.#outputOn(attachment, channel);
    const schema = stream.schema;
    if (schema !== undefined && schema.direct !== kind) throw violation(`an output-${kind} message on a stream whose elements are not ${kind}`);
    return stream;
  }

  #adoptSchemas(schemas: ReadonlyMap<string, ElementSchema>): void {
    for (const [token, schema] of schemas) {
      const stream = this.#outputFor(token);
      if (stream.schema === undefined) stream.bindSchema(schema, (value) => this.#toJs(schema.graph, schema.elementType, value));
    }
  }

  #toJs(graph: SchemaGraph, type: ElementSchema["elementType"] | undefined, value: SchemaValueJson): unknown {
    return valueToJs(graph, type, value, (token) => this.#outputs.get(token));
  }

  #locateNested(value: SchemaValueJson): void {
    for (const leaf of findStreamTokens(value as unknown as JsonValue)) {
      const stream = this.#outputFor(leaf.streamToken);
      stream.coordinate ??= leaf.coordinate;
    }
  }

  #onResult(result: InvocationResultBody): void {
    if (this.#resultSeen) return; // every attachment receives it again (decisions §8)
    this.#resultSeen = true;
    const streams: OutputStream[] = [];
    let toJs = (): unknown => undefined;
    if (result.kind === "value") {
      const checked = checkResult(result.graph, result.value);
      this.#adoptSchemas(checked.streams);
      for (const leaf of findStreamTokens(result.value as unknown as JsonValue)) {
        const stream = this.#outputFor(leaf.streamToken);
        stream.coordinate ??= leaf.coordinate;
        streams.push(stream);
      }
      toJs = () => this.#toJs(checked.graph, undefined, result.value);
    }
    this.#callbacks.onResult(result, streams, toJs);
  }

  #onFinished(outcome: InvocationOutcome): void {
    this.#done = true;
    // Protocol 6.9: every declared output terminal comes first. A stream this process knows as
    // complete (its terminal cursor was inherited) was ended at creation and is not touched.
    const missing = new ClientError("server-violation", "invocation finished before this stream's terminal", { code: "protocol-error" });
    for (const stream of this.#outputs.values()) stream.abort(missing);
    for (const feeder of this.#feedersByBinding.values()) feeder.stop();
    this.#abort.abort();
    this.#callbacks.onFinished(outcome);
  }

  #fail(error: ClientError): void {
    if (this.#done) return;
    this.#done = true;
    for (const stream of this.#outputs.values()) stream.abort(error);
    for (const feeder of this.#feedersByBinding.values()) feeder.stop();
    this.#attachment?.settle({ kind: "fatal", error });
    this.#abort.abort();
    this.#callbacks.onFailed(error);
  }

  // ---- outputs: cancel, cursors ----

  #sendOutputCancel(stream: OutputStream, reason: ClientCancelReason): void {
    const attachment = this.#attachment;
    const channel = attachment?.channelOf.get(stream);
    if (attachment?.accepted && channel !== undefined) attachment.connection?.send({ type: "streamCancel", channel, reason });
  }

  #cursorSet(): string[] {
    const cursors: string[] = [];
    for (const stream of this.#outputs.values()) {
      const cursor = stream.retainedCursor;
      if (cursor !== undefined) cursors.push(cursor);
    }
    for (const cursor of this.#inheritedCursors.values()) cursors.push(cursor);
    return cursors;
  }

  /**
   * Runs the persistence callback with the full current state, one call at a
   * time, in order. Never rejects: a failure goes to `#checkpointFailed`.
   */
  #checkpoint(): Promise<void> {
    const persist = this.#callbacks.onCheckpoint;
    if (persist === undefined || this.#checkpointError !== undefined) return this.#checkpointChain;
    const state = this.state;
    if (state === undefined) return this.#checkpointChain;
    this.#checkpointChain = this.#checkpointChain
      .then(() => (this.#checkpointError === undefined ? persist(state) : undefined))
      .catch((cause: unknown) => this.#checkpointFailed(cause));
    return this.#checkpointChain;
  }

  /** For a stream that retained a cursor: resolves once it is saved, rejects if it cannot be. */
  async #commit(): Promise<void> {
    await this.#checkpoint();
    if (this.#checkpointError !== undefined) throw this.#checkpointError;
  }

  /**
   * A state that cannot be saved breaks the caller's crash guarantee, so
   * delivery stops at once: every output stream throws the error instead of
   * handing out more, and the handle fails with `checkpoint-failed` — also
   * after `invocationFinished`, through the streams still being read. Nothing
   * is cancelled on the server, so the last state that *was* saved can still
   * take the invocation over.
   */
  #checkpointFailed(cause: unknown): void {
    if (this.#checkpointError !== undefined) return;
    const error = new ClientError("checkpoint-failed", `the onCheckpoint callback failed: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause,
    });
    this.#checkpointError = error;
    for (const stream of this.#outputs.values()) stream.halt(error);
    this.#fail(error);
  }

  // ---- descriptors ----

  #freshStart(): InvocationStart {
    if (this.#start.kind !== "start") return this.#freshInheritedStart();
    // A new attempt must not reuse provisional references (protocol 3.2).
    for (const feeder of this.#feedersByBinding.values()) {
      this.#feedersByRef.delete(feeder.provisionalRef);
      feeder.provisionalRef = randomUUID();
      this.#feedersByRef.set(feeder.provisionalRef, feeder);
    }
    const methodParameters = bindProvisionalRefs(this.#start.params, (binding) => {
      const feeder = this.#feedersByBinding.get(binding);
      if (feeder !== undefined) return feeder.provisionalRef;
      // First attempt: remember the reference; the source is claimed once the start is known to encode.
      let ref = this.#unclaimed.get(binding);
      if (ref === undefined) this.#unclaimed.set(binding, (ref = randomUUID()));
      return ref;
    });
    return { ...this.#start.template, attemptId: randomUUID(), methodParameters };
  }

  /**
   * A new attempt of a start frozen by another process (its retry was
   * rejected as retryable): the same invocation with a fresh attempt id and
   * fresh provisional references (protocol 3.2). Its inputs have no source
   * here either.
   */
  #freshInheritedStart(): InvocationStart {
    const previous = this.#operation.message;
    if (previous.type !== "invocationStart") throw new Error("unreachable: a fresh start after a resume");
    const renewed = renewProvisionalRefs(previous.methodParameters as unknown as JsonValue, () => randomUUID());
    this.#orphanRefs = new Set(findProvisionalRefs(renewed));
    return { ...previous, attemptId: randomUUID(), methodParameters: renewed as unknown as SchemaValueJson };
  }

  /** Claims the sources of the first start: after validation, so a refused invoke() consumes nothing. */
  #claimStartSources(): void {
    for (const [binding, ref] of this.#unclaimed) this.#feederFor(binding, ref);
    this.#unclaimed.clear();
  }

  #freshResume(): ResumeAttach {
    if (this.#sessionToken === undefined) throw new Error("unreachable: resume without a session token");
    return {
      type: "resumeAttach",
      attemptId: randomUUID(),
      operation: "resume",
      outputCursors: this.#cursorSet(),
      sessionToken: this.#sessionToken,
    };
  }

  #feederFor(binding: InputStream, provisionalRef: string = randomUUID()): InputFeeder {
    const known = this.#feedersByBinding.get(binding);
    if (known !== undefined) return known;
    const host: FeederHost = {
      freezeValue: (_owner, item) => {
        const encode = _owner.encode ?? ((value: unknown) => value as ParamNode);
        return bindProvisionalRefs(encode(item), (nested) => this.#feederFor(nested).provisionalRef);
      },
      onSourceFailure: (input, error) => this.#callbacks.onEvent({ type: "input-failed", input, error }),
    };
    const feeder = new InputFeeder(binding, provisionalRef, host, this.#config.maxUnackedInputBytes);
    this.#feedersByBinding.set(binding, feeder);
    this.#feedersByRef.set(feeder.provisionalRef, feeder);
    return feeder;
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted || ms <= 0) return resolve();
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}

