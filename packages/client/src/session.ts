/**
 * The session engine behind one invocation handle: it makes the next attach
 * that `attach-policy.ts` decides after every connection (protocol section
 * 9), saves each new descriptor before sending it, and routes every server
 * message to the output streams and input feeders of the current
 * connection's channel table.
 *
 * Its parts: `attachment.ts` (one connection), `channels.ts` (its channel
 * table), `attach-descriptors.ts` (what is sent first), `input-registry.ts`
 * and `output-registry.ts` (the streams), `state-persistence.ts` (the
 * `onCheckpoint` side), `cancel-delivery.ts` (an invocation-wide cancel on
 * its way to the server). Waits between attempts follow the reconnect
 * policy; its failure count resets only when the invocation makes progress
 * (`reconnect-policy.ts`), never on a mere acceptance.
 *
 * Why one file: the session is one state machine over one set of private fields (the operation in
 * flight, the current attachment, the cancel being delivered); its parts that need none of them
 * already live in the files listed above, and what remains reads each field in several sections.
 */
import type {
  ClientCancelReason,
  InvocationOutcome,
  InvocationResultBody,
  InvocationStart,
  ResumeAttach,
  ServerMessage,
  StreamMapping,
} from "@golem-stream/wire";
import { ProtocolError, encodeClientMessage } from "@golem-stream/wire";
import { freshResume, initialAttach, renewedStart } from "./attach-descriptors.js";
import { nextAttach, type ConnectionOutcome } from "./attach-policy.js";
import { openAttachment, type Attachment } from "./attachment.js";
import { CancelDelivery, cancelReachedServer, cancelsAnswered, type CancelOutcome } from "./cancel-delivery.js";
import { inputOn, installMappings, outputEndOn, outputItemOn, outputOfKind, type MappingSource } from "./channels.js";
import type { ResumeState } from "./checkpoint.js";
import { ClientError, awayFailureNote, invalidChannel, violation } from "./errors.js";
import type { InputStream, ParamNode } from "./input-stream.js";
import { InputRegistry } from "./input-registry.js";
import { OutputBudget } from "./output-budget.js";
import { OutputRegistry } from "./output-registry.js";
import type { OutputStream } from "./output-stream.js";
import { reconnectDelay, type ReconnectPolicy } from "./reconnect-policy.js";
import { checkBinaryItem, checkU8Items } from "./binary-items.js";
import { checkItem } from "./schema.js";
import { StatePersistence } from "./state-persistence.js";
import type { CloseInfo, Transport } from "./transport.js";
import { randomUUID } from "./uuid.js";

export interface SessionConfig {
  readonly url: string;
  readonly getToken: () => string | Promise<string>;
  readonly transport: Transport;
  readonly policy: Required<ReconnectPolicy>;
  readonly maxUnackedInputBytes: number;
  readonly maxQueuedEntriesPerStream: number;
  readonly maxQueuedBytes: number;
  /** See `ClientOptions.acceptanceTimeoutMs`; 0 waits forever. */
  readonly acceptanceTimeoutMs: number;
  /** See `ClientOptions.cancelConfirmTimeoutMs`. */
  readonly cancelConfirmTimeoutMs: number;
  /** See `ClientOptions.cancelReturnTimeoutMs`. */
  readonly cancelReturnTimeoutMs: number;
}

export type SessionEvent =
  | {
      readonly type: "accepted";
      readonly operation: "start" | "resume" | "takeover";
      readonly attemptId: string;
      readonly replayed: boolean;
    }
  | {
      readonly type: "reconnecting";
      readonly failures: number;
      readonly maxAttempts: number;
      readonly delayMs: number;
      readonly cause: string;
    }
  | { readonly type: "revoked" }
  | { readonly type: "stream"; readonly stream: OutputStream }
  | { readonly type: "input-failed"; readonly input: InputStream; readonly error: unknown }
  | { readonly type: "cancel-delivered" }
  | { readonly type: "cancel-undelivered"; readonly error: ClientError }
  | { readonly type: "cancel-not-reached"; readonly inputsEnded: boolean }
  | { readonly type: "cancel-invocation-succeeded" };

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

interface Operation {
  readonly message: InvocationStart | ResumeAttach;
  sends: number;
  /** Handed to the persistence callback (which finished) before its first send. */
  saved?: boolean;
  /** Accepted on some connection: its outcome is no longer uncertain. */
  accepted?: boolean;
}

export class Session {
  readonly #config: SessionConfig;
  readonly #callbacks: SessionCallbacks;
  readonly #start: SessionStart;
  readonly #abort = new AbortController();

  #operation: Operation;
  #sessionToken: string | undefined;
  readonly #selector: InvocationStart["selector"];
  #idempotencyKey: string;
  #attachment: Attachment | undefined;
  /** The runtime has stopped: no further connection is made. */
  #done = false;
  /** What the invocation failed with (`#fail`), once it has. */
  #failedWith: ClientError | undefined;
  #resultSeen = false;
  /** An attach of this process was accepted: it holds the current generation, and reconnects with `resume`. */
  #ownsGeneration = false;
  /** A revocation was taken for protocol 6.1's case, and no attach was accepted since (AttachFacts.afterRevocation). */
  #resumingAfterRevocation = false;
  /**
   * Something new came from the server since the last connection began (an
   * acknowledged input, a first-seen output event or result): the reconnect
   * budget starts over.
   */
  #progressed = false;
  /** `performance.now()` when the current connection was accepted. */
  #acceptedAt: number | undefined;
  /**
   * Set by an invocation-wide cancel: the caller's outcome is decided, the
   * session runs on only until its cancellations reach the server.
   */
  #cancel: CancelDelivery | undefined;
  /**
   * While the connection that carried the cancellations closes: resolves
   * undefined once the server's close frame confirmed them, otherwise with why
   * not — then they are carried over a new connection (`#confirmCancel`).
   */
  #confirming: Promise<string | undefined> | undefined;
  /** The connection whose answers to the cancellations are being waited for (`#watchCancels`). */
  #cancelWatched: Attachment | undefined;
  /**
   * The cancel ends an input the server had open: before its result, the only way a cancel
   * reaches a method (its read fails). Without one, nothing can reach it (`not-reached`).
   */
  #cancelEndsInput = false;
  /** The result had arrived when the cancel was issued: the method had returned before it. */
  #resultBeforeCancel = false;
  /** A stream ended `cancelled` while the cancel was delivered: it cut the invocation's output. */
  #cancelCut = false;
  /** The connection on which the method's return (after its inputs were ended) is waited for (`#watchReturn`). */
  #returnWatched: Attachment | undefined;
  /** The connection on which the invocation's end is waited for, after a result that came during the cancel (`#awaitFinish`). */
  #finishWatched: Attachment | undefined;

  readonly #inputs: InputRegistry;
  readonly #outputs: OutputRegistry;
  readonly #budget: OutputBudget<OutputStream>;
  readonly #persistence: StatePersistence;
  /** The first input source that failed here, boxed (a source may throw `undefined`). */
  #inputFailure: { readonly error: unknown } | undefined;
  /**
   * This process was away from the server during the call: a connection was lost (and the call
   * went on over another), or it began from saved state. A failure the server gives no reason for
   * may then have been a restart, which fails every invocation it ran that is not replayable.
   */
  #away: boolean;
  /** This process cancelled an input whose source stayed with the process it took over from (`source-unavailable`). */
  #inputsLeftBehind = false;
  /** How the server finished the invocation, once it said so: a stream it cancelled `invocation-failed` tells why from it. */
  #finishedAs: InvocationOutcome | undefined;

  constructor(config: SessionConfig, start: SessionStart, callbacks: SessionCallbacks) {
    this.#config = config;
    this.#callbacks = callbacks;
    this.#start = start;
    this.#away = start.kind === "attach";
    this.#budget = new OutputBudget(config.maxQueuedEntriesPerStream, config.maxQueuedBytes, (paused) => {
      const connection = this.#attachment?.accepted ? this.#attachment.connection : undefined;
      if (paused) connection?.pause();
      else connection?.resume();
    });
    this.#persistence = new StatePersistence(
      callbacks.onCheckpoint,
      () => this.state,
      (error) => this.#checkpointFailed(error),
    );
    this.#inputs = new InputRegistry({
      maxUnackedInputBytes: config.maxUnackedInputBytes,
      onSourceFailure: (input, error) => {
        this.#inputFailure ??= { error };
        this.#callbacks.onEvent({ type: "input-failed", input, error });
      },
      onAcknowledged: () => {
        this.#progressed = true;
      },
    });
    this.#outputs = new OutputRegistry(
      {
        onQueueChange: (stream, bytes) => this.#budget.changed(stream, bytes),
        commit: () => this.#persistence.commit(),
        sendCancel: (stream, reason) => this.#sendOutputCancel(stream, reason),
        onStream: (stream) => {
          // A stream first announced after the invocation failed ends as the others did: a message
          // announces its streams one by one, and a listener of an earlier one may have failed the
          // call (its streams were aborted then; this one would be left open, and no listener hears it).
          if (this.#failedWith !== undefined) stream.abort(this.#failedWith);
          // A stream first announced while the invocation is being cancelled is cancelled too.
          else if (this.#cancel !== undefined) stream.cancelWith(this.#cancel.error);
          else this.#callbacks.onEvent({ type: "stream", stream });
        },
        otherStreams: () => this.#inputs.size,
        inputFailure: () => this.#inputFailure,
        awayNote: () => this.awayNote,
        invocationOutcome: () => this.#finishedAs,
      },
      start.kind === "attach" ? start.state.outputCursors : [],
    );
    if (start.kind === "start") {
      this.#selector = start.template.selector;
      this.#idempotencyKey = start.template.idempotencyKey;
      this.#operation = { message: this.#freshStart(), sends: 0 };
      // Encode once now so that unusable arguments throw from invoke(), not as an endless
      // series of failed connections.
      try {
        encodeClientMessage(this.#operation.message);
      } catch (cause) {
        const code = cause instanceof ProtocolError ? cause.code : undefined;
        throw new ClientError("invalid-argument", cause instanceof Error ? cause.message : "invalid invocation", {
          ...(code === undefined ? {} : { code }),
          cause,
        });
      }
      this.#inputs.claimStartSources();
    } else {
      const { state } = start;
      this.#selector = state.selector;
      this.#idempotencyKey = state.idempotencyKey;
      this.#sessionToken = state.sessionToken;
      // A checkpoint's in-flight operation had an uncertain outcome: retry it exactly first.
      const message = initialAttach(state, start.operation);
      if (message.type === "invocationStart") this.#inputs.adoptSourcelessStart(message.methodParameters);
      // A pending operation was saved before its first send, so the process that saved it may
      // have sent it: count that send, and an acceptance of it may be the server's replay
      // (protocol 6.1: a replay whose attachment had detached is revoked, then resumed).
      this.#operation = { message, sends: state.pendingOperation === undefined ? 0 : 1 };
    }
  }

  get sessionToken(): string | undefined {
    return this.#sessionToken;
  }

  /** What a failure without a reason adds when this process was away (see `#away`); undefined when it was not. */
  get awayNote(): string | undefined {
    return this.#away ? awayFailureNote(this.#inputsLeftBehind) : undefined;
  }

  get outputs(): ReadonlyMap<string, OutputStream> {
    return this.#outputs.streams;
  }

  /**
   * The state `client.resume`/`client.takeover` continue from: the frozen
   * start until it is accepted, then the session token, cursors and any
   * resume/takeover in flight.
   */
  get state(): ResumeState | undefined {
    const pending = this.#operation.accepted === true ? undefined : this.#operation.message;
    if (this.#sessionToken === undefined) {
      if (pending?.type !== "invocationStart") return undefined;
      return { selector: this.#selector, idempotencyKey: this.#idempotencyKey, outputCursors: [], pendingOperation: pending };
    }
    return {
      sessionToken: this.#sessionToken,
      outputCursors: this.#outputs.cursorSet(),
      selector: this.#selector,
      idempotencyKey: this.#idempotencyKey,
      ...(pending?.type === "resumeAttach" ? { pendingOperation: pending } : {}),
    };
  }

  async run(): Promise<void> {
    /** Connections ended since the last progress: drives both the backoff and the budget. */
    let failures = 0;
    while (!this.#done) {
      // A new descriptor is saved before it is first sent, so a crash after sending always
      // leaves a state that retries it exactly (protocol 9 and 13): for a start this is the
      // only way back into an invocation whose acceptance this process never saw.
      if (this.#operation.saved !== true) {
        await this.#persistence.save();
        this.#operation.saved = true;
        if (this.#done) return;
      }
      this.#progressed = false;
      this.#acceptedAt = undefined;
      let outcome = await this.#connectOnce();
      // Away from an invocation the server holds: accepted before (or begun from saved state). Not a
      // connection refused before anything was accepted, nor the server's own retryable refusal.
      if (outcome.kind === "lost" && this.#sessionToken !== undefined && !outcome.cause.startsWith("refused: ")) this.#away = true;
      if (this.#done) return;
      if (this.#confirming !== undefined) {
        const unconfirmed = await this.#confirming;
        this.#confirming = undefined;
        if (this.#done) return;
        if (unconfirmed === undefined) return this.#endCancel({ kind: "delivered" });
        // The server may not have read them (a full inbound queue stops it reading this
        // connection): a new connection carries them, ahead of anything else (docs/protocol/client.md §10a).
        outcome = { kind: "lost", cause: unconfirmed };
      }
      const accepted = this.#attachment?.accepted ?? false;
      // An acceptance alone is no progress: a server that accepts and then fails at once would
      // otherwise be re-attached forever with no backoff. A connection that stayed up
      // is, so a quiet, long invocation survives well-spaced losses.
      const stable = this.#acceptedAt !== undefined && performance.now() - this.#acceptedAt >= this.#config.policy.stableAfterMs;
      if (this.#progressed || stable) failures = 0;
      if (outcome.kind === "revoked") {
        this.#callbacks.onEvent({ type: "revoked" });
        if (this.#done) return; // its listener failed the call
      }
      if (this.#cancel !== undefined && outcome.kind === "rejected" && this.#sessionToken === undefined) {
        // A cancelled call whose start attempt was rejected: that attempt runs nothing on the
        // server (protocol 6.2), and no other attempt of it can be pending — nothing to cancel.
        this.#endCancel({ kind: "delivered" });
        return;
      }
      const next = nextAttach(outcome, {
        accepted,
        sends: this.#operation.sends,
        hasSession: this.#sessionToken !== undefined,
        takeover: this.#start.kind === "attach" && this.#start.operation === "takeover" && !this.#ownsGeneration,
        afterRevocation: this.#resumingAfterRevocation,
      });
      // Protocol 6.1's resume: until an attach is accepted, superseded means another owner.
      if (outcome.kind === "revoked" && next.kind === "fresh-resume") this.#resumingAfterRevocation = true;
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
          this.#operation = { message: this.#freshAttach("resume"), sends: 0 };
          break;
        case "fresh-takeover":
          this.#operation = { message: this.#freshAttach("takeover"), sends: 0 };
          break;
      }
      failures++;
      const { maxAttempts } = this.#config.policy;
      const cause = outcome.kind === "rejected" ? outcome.error.code : outcome.kind === "lost" ? outcome.cause : outcome.kind;
      const delayMs = reconnectDelay(this.#config.policy, failures);
      if (delayMs === undefined) {
        const last = outcome.kind === "rejected" ? `${outcome.error.code}: ${outcome.error.message}` : cause;
        this.#fail(
          new ClientError(
            "connection-lost",
            `gave up after ${maxAttempts} reconnect attempt${maxAttempts === 1 ? "" : "s"} without progress (last: ${last})`,
            {
              cause: outcome.kind === "rejected" ? outcome.error : new Error(cause),
            },
          ),
        );
        return;
      }
      this.#callbacks.onEvent({ type: "reconnecting", failures, maxAttempts, delayMs, cause });
      await sleep(delayMs, this.#abort.signal);
    }
  }

  /**
   * Ends the invocation from this side: the caller's outcome is `aborted` at
   * once; every stream that has not ended is cancelled on the server — now if
   * a connection is accepted, otherwise after reconnecting (with the same
   * policy) — and then the session detaches. Resolves with what became of
   * the cancellations; never rejects.
   */
  abort(reason: string, cause?: unknown): Promise<CancelOutcome> {
    if (this.#cancel !== undefined) return this.#cancel.outcome;
    if (this.#done) return Promise.resolve({ kind: "already-over" });
    const cancel = (this.#cancel = new CancelDelivery(new ClientError("aborted", reason, cause === undefined ? {} : { cause })));
    this.#resultBeforeCancel = this.#resultSeen;
    for (const feeder of this.#inputs.feeders()) {
      if (feeder.open) this.#cancelEndsInput = true;
      feeder.cancel("cancelled");
    }
    // Every consumer learns that the invocation was cut short: its next() throws `aborted`.
    for (const stream of this.#outputs.streams.values()) stream.cancelWith(cancel.error);
    this.#callbacks.onFailed(cancel.error);
    if (this.#sessionToken === undefined && this.#operation.sends === 0) {
      // The start never left this process (a connection being opened will not send it now):
      // nothing runs on the server.
      this.#endCancel({ kind: "delivered" });
    } else {
      this.#checkCancel();
    }
    return cancel.outcome;
  }

  /**
   * Leaves the invocation running on the server and stops here: no stream is
   * cancelled (transport loss only detaches, protocol section 8). The returned
   * state continues it with `client.takeover`.
   */
  detach(): ResumeState | undefined {
    const state = this.state;
    const message =
      this.#cancel === undefined
        ? "detached; the invocation continues on the server"
        : "detached before the cancellation reached the server";
    const error = new ClientError("aborted", message);
    // Whoever continues from `state` delivers everything after it: this handle hands out nothing
    // more (queued items included), and its cursors stay where `state` has them.
    for (const stream of this.#outputs.streams.values()) stream.detach(error);
    if (!this.#done) this.#fail(error);
    return state;
  }

  /**
   * The application's own code failed the call (an event listener threw): it stops as on any
   * failure, nothing cancelled. False when the call's outcome was decided already (finished,
   * failed, cancelled): then there is nothing left to fail.
   */
  failedByApplication(error: ClientError): boolean {
    if (this.#done || this.#cancel !== undefined) return false;
    this.#fail(error);
    return true;
  }

  /** A defect in this package: stop everything (an invocation-wide cancel counts as undelivered). */
  crashed(error: ClientError): void {
    this.#fail(error);
  }

  // ---- one connection ----

  #connectOnce(): Promise<ConnectionOutcome> {
    const { attachment, outcome } = openAttachment({
      url: this.#config.url,
      getToken: this.#config.getToken,
      transport: this.#config.transport,
      signal: this.#abort.signal,
      firstMessage: () => {
        this.#operation.sends++;
        return this.#operation.message;
      },
      onMessage: (target, message, wireBytes) => this.#handle(target, message, wireBytes),
      onSettle: () => {
        for (const feeder of this.#inputs.feeders()) feeder.detach();
      },
      acceptanceTimeoutMs: this.#config.acceptanceTimeoutMs,
    });
    this.#attachment = attachment;
    return outcome;
  }

  #handle(attachment: Attachment, message: ServerMessage, wireBytes: number): void {
    this.#route(attachment, message, wireBytes);
    // While an invocation-wide cancel is being delivered, whatever maps or ends a stream may
    // complete it (an item without mappings changes nothing: checking costs a pass over the
    // streams, and a cancelled stream's replayed backlog can be long).
    if (this.#cancel !== undefined && !(isOutputItem(message) && !("mappings" in message && message.mappings.length > 0))) {
      this.#checkCancel();
    }
  }

  #route(attachment: Attachment, message: ServerMessage, wireBytes: number): void {
    if (!attachment.accepted) {
      switch (message.type) {
        case "invocationAccepted":
          this.#onAccepted(attachment, message.attemptId, message.idempotencyKey, message.sessionToken, message.mappings);
          return;
        case "invocationRejected":
          if (message.attemptId !== undefined && message.attemptId !== this.#operation.message.attemptId) {
            throw violation("rejection names another attempt");
          }
          attachment.settle({
            kind: "rejected",
            error: new ProtocolError(message.code, message.message, { retryable: message.retryable }),
          });
          return;
        default:
          throw violation(`${message.type} before invocationAccepted`);
      }
    }
    switch (message.type) {
      case "invocationAccepted":
        throw violation("a second invocationAccepted on one connection");
      case "invocationRejected":
        // After acceptance, the final diagnostic of a violation, for the accepted attempt (protocol 6.2).
        if (message.attemptId !== this.#operation.message.attemptId)
          throw violation("a rejection after acceptance names another attempt, or none");
        attachment.settle({
          kind: "rejected",
          error: new ProtocolError(message.code, message.message, { retryable: message.retryable }),
        });
        return;
      case "invocationResult":
        // At most once (protocol 6.3); every connection receives it again (decisions §8).
        if (attachment.resultReceived) throw violation("a second invocationResult on one connection");
        attachment.resultReceived = true;
        this.#install(attachment, message.mappings, "ack-or-output");
        this.#onResult(message.result);
        return;
      case "outputStreamItem": {
        this.#install(attachment, message.mappings, "ack-or-output");
        const stream = outputItemOn(attachment, message.channel, message.sequence, 1n);
        const schema = stream.schema;
        if (schema !== undefined) {
          if (schema.direct !== undefined)
            throw violation(`a text item on a stream<${schema.direct}>, whose items must be binary messages`);
          this.#outputs.adoptSchemas(checkItem(schema, message.value).streams);
        }
        // Its nested streams exist before it is queued: a stream the consumer dropped discards the
        // item at once, and drops them with it.
        this.#outputs.locateNested(message.value);
        if (stream.pushItem(message.sequence, 1n, message.value, message.cursorToken, wireBytes)) this.#progressed = true;
        return;
      }
      case "output-u8": {
        const count = BigInt(message.payload.byteLength);
        const stream = outputOfKind(attachment, message.channel, "u8", message.sequence, count);
        if (stream.schema !== undefined) checkU8Items(stream.schema, message.payload);
        if (stream.pushItem(message.sequence, count, message.payload, message.cursorToken, wireBytes)) this.#progressed = true;
        return;
      }
      case "output-binary": {
        const stream = outputOfKind(attachment, message.channel, "binary", message.sequence, 1n);
        if (stream.schema !== undefined) checkBinaryItem(stream.schema, message.payload.byteLength, message.mimeType);
        const blob = message.mimeType === undefined ? { bytes: message.payload } : { bytes: message.payload, mimeType: message.mimeType };
        if (stream.pushItem(message.sequence, 1n, blob, message.cursorToken, wireBytes)) this.#progressed = true;
        return;
      }
      case "outputStreamEnd":
        if (outputEndOn(attachment, message.channel).pushEnd(message.sequence, message.outcome, message.cursorToken))
          this.#progressed = true;
        if (this.#cancel !== undefined && message.outcome.kind === "cancelled") this.#cancelCut = true;
        return;
      case "inputStreamAck": {
        this.#install(attachment, message.mappings, "ack-or-output");
        inputOn(attachment, message.channel)?.acknowledge(message.highestContiguousSequence, message.terminal);
        return;
      }
      case "streamCancel": {
        const entry = attachment.channels.get(message.channel);
        if (entry === undefined) throw invalidChannel(`streamCancel on unknown channel ${message.channel}`);
        // Output: the outputStreamEnd that follows carries the outcome. Input: stop reading the source.
        if (entry.direction === "input") entry.feeder?.serverCancelled();
        return;
      }
      case "attachmentRevoked":
        // The acceptance was the first message on this connection: this one is the second.
        attachment.settle({ kind: "revoked", atAcceptance: attachment.received === 2 });
        return;
      case "invocationFinished":
        this.#onFinished(message.outcome);
        attachment.settle({ kind: "finished" });
        return;
    }
  }

  /**
   * Installs a message's mappings, then sends the cancellations still owed
   * on the streams they map: a consumer's cancel that the previous connection
   * may not have carried, and every stream of an invocation being cancelled.
   * Result streams and streams nested in replayed items get their channel
   * only from such later messages, not from the acceptance.
   */
  #install(attachment: Attachment, mappings: readonly StreamMapping[], source: MappingSource): void {
    const sourcelessReason = this.#cancel === undefined ? "source-unavailable" : "cancelled";
    if (installMappings(attachment, mappings, source, this.#inputs, this.#outputs, sourcelessReason)) {
      if (this.#cancel !== undefined) this.#cancelEndsInput = true;
      else this.#inputsLeftBehind = true;
    }
    for (const mapping of mappings) {
      if (mapping.direction !== "output") continue;
      const stream = this.#outputs.streams.get(mapping.streamToken);
      const reason = stream?.cancelRequested;
      if (stream !== undefined && reason !== undefined) this.#sendOutputCancel(stream, reason);
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
    this.#ownsGeneration = true;
    this.#resumingAfterRevocation = false;
    this.#acceptedAt = performance.now();
    this.#operation.accepted = true;
    this.#sessionToken = sessionToken;
    this.#idempotencyKey = idempotencyKey;
    if (this.#budget.paused) attachment.connection?.pause();
    this.#install(attachment, mappings, sent.type === "invocationStart" ? "start-acceptance" : "attach-acceptance");
    const operation = sent.type === "invocationStart" ? "start" : sent.operation;
    this.#callbacks.onEvent({ type: "accepted", operation, attemptId, replayed: this.#operation.sends > 1 });
    void this.#persistence.save();
  }

  #onResult(result: InvocationResultBody): void {
    if (this.#resultSeen) return; // every attachment receives it again (decisions §8)
    this.#resultSeen = true;
    this.#progressed = true;
    const { streams, toJs } = this.#outputs.adoptResult(result);
    if (this.#cancel === undefined) this.#callbacks.onResult(result, streams, toJs);
  }

  #onFinished(outcome: InvocationOutcome): void {
    this.#finishedAs = outcome;
    // Every stream has its terminal (protocol 6.9): nothing is left to cancel. A success whose
    // streams all ended without being cut is the method's own: the cancel stopped nothing of it.
    if (this.#cancel !== undefined) {
      return this.#endCancel({ kind: outcome.kind === "success" && !this.#cancelCut ? "invocation-succeeded" : "delivered" });
    }
    // Protocol 6.9 and decisions §8: every output terminal, and for a success the result, come
    // first. A server that breaks this cannot be trusted with the outcome either, so the whole
    // invocation fails (thrown: the attachment turns it into a fatal outcome, `#fail`). A stream
    // this process knows as complete (its terminal cursor was inherited) counts as ended.
    let open = 0;
    for (const stream of this.#outputs.streams.values()) if (!stream.serverEnded) open++;
    if (open > 0) throw violation(`invocationFinished before the terminal of ${open} output stream${open === 1 ? "" : "s"}`);
    if (outcome.kind === "success" && !this.#resultSeen) throw violation("a successful invocationFinished without an invocationResult");
    this.#done = true;
    for (const feeder of this.#inputs.feeders()) feeder.stop();
    this.#abort.abort();
    this.#callbacks.onFinished(outcome);
  }

  #fail(error: ClientError): void {
    if (this.#done) return;
    // The caller already has its outcome (`aborted`); what failed is the cancel's delivery.
    if (this.#cancel !== undefined) return this.#endCancel({ kind: "undelivered", error });
    this.#done = true;
    this.#failedWith = error;
    for (const stream of this.#outputs.streams.values()) stream.abort(error);
    for (const feeder of this.#inputs.feeders()) feeder.stop();
    this.#attachment?.settle({ kind: "fatal", error });
    this.#abort.abort();
    this.#callbacks.onFailed(error);
  }

  /**
   * A state that cannot be saved breaks the caller's crash guarantee, so
   * delivery stops at once: every output stream throws the error instead of
   * handing out more, and the handle fails with `checkpoint-failed` — also
   * after `invocationFinished`, through the streams still being read. Nothing
   * is cancelled on the server, so the last state that *was* saved can still
   * take the invocation over.
   */
  #checkpointFailed(error: ClientError): void {
    for (const stream of this.#outputs.streams.values()) stream.halt(error);
    this.#fail(error);
  }

  #sendOutputCancel(stream: OutputStream, reason: ClientCancelReason): void {
    const attachment = this.#attachment;
    const channel = attachment?.channelOf.get(stream);
    const connection = attachment?.accepted && !attachment.settled ? attachment.connection : undefined;
    if (connection === undefined || channel === undefined || attachment!.cancelsSent.has(stream)) return;
    connection.send({ type: "streamCancel", channel, reason });
    attachment!.cancelsSent.add(stream);
  }

  // ---- an invocation-wide cancel ----

  /** Ends the delivery once every cancellation is on an accepted connection (`cancel-delivery.ts`). */
  #checkCancel(): void {
    const attachment = this.#attachment;
    if (this.#cancel === undefined || this.#done || attachment === undefined) return;
    if (cancelReachedServer(attachment, this.#inputs.feeders(), this.#outputs.streams.values(), this.#resultSeen)) {
      if (this.#resultBeforeCancel || attachment.cancelsSent.size > 0) this.#confirmCancel(attachment);
      else this.#awaitFinish(attachment);
    } else {
      this.#watchCancels(attachment);
      if (!this.#resultSeen && this.#cancelEndsInput && cancelsAnswered(attachment, this.#inputs.feeders())) {
        this.#watchReturn(attachment);
      }
    }
  }

  /**
   * The server ended the inputs the cancel ended (it answered every cancellation), and the
   * method has not returned: a method that reads them fails or returns at once, one that does
   * not never sees them end. So it gets `cancelReturnTimeoutMs` on this connection to return
   * (its result's streams are then cancelled) or fail; past that the delivery ends `not-reached`
   * with `inputsEnded`, and the runtime detaches, as for a method no cancel could reach. Waiting
   * for it held the caller for as long as the method ran (docs/protocol/client.md §10a).
   */
  #watchReturn(attachment: Attachment): void {
    if (!attachment.accepted || attachment.settled || this.#returnWatched === attachment) return;
    this.#returnWatched = attachment;
    void sleep(this.#config.cancelReturnTimeoutMs, this.#abort.signal).then(() => {
      if (this.#done || attachment.settled || this.#resultSeen) return;
      this.#endCancel({ kind: "not-reached", inputsEnded: true });
    });
  }

  /**
   * The method returned after the cancel, and its result left no stream to cancel (it has none,
   * or they had ended): nothing of the cancel can stop it any more, and the server finishes the
   * invocation at once. Rather than close, the delivery waits (`cancelConfirmTimeoutMs`) for
   * that end, so that a method that returned without being stopped is reported as what it is:
   * `invocation-succeeded` (`#onFinished`). Past the wait, the close confirms the cancellations
   * as always.
   */
  #awaitFinish(attachment: Attachment): void {
    if (this.#finishWatched === attachment) return;
    this.#finishWatched = attachment;
    void sleep(this.#config.cancelConfirmTimeoutMs, this.#abort.signal).then(() => {
      if (!this.#done && !attachment.settled) this.#confirmCancel(attachment);
    });
  }

  /**
   * While the delivery waits on an accepted connection (for the result, or for streams to be
   * mapped), the server must at least answer the cancellations it was sent within
   * `cancelConfirmTimeoutMs`. If it has not, it may not be reading this connection (an agent that
   * stopped taking input), so the connection is dropped and `run` resumes on a new one, which
   * sends the cancellations first. A server that answered them and is only slow to end the
   * invocation is waited for — unless the cancel ended none of its inputs: then nothing reached
   * the method, which may never return, and waiting for its result would hold the caller (and
   * the attachment that keeps the server from giving the invocation up) for as long: the delivery
   * ends `not-reached`.
   */
  #watchCancels(attachment: Attachment): void {
    if (!attachment.accepted || attachment.settled || this.#cancelWatched === attachment) return;
    this.#cancelWatched = attachment;
    const timeoutMs = this.#config.cancelConfirmTimeoutMs;
    // The runtime's abort (it stopped) ends the wait early, and `#done` then says so.
    void sleep(timeoutMs, this.#abort.signal).then(() => {
      if (this.#done || attachment.settled) return;
      if (!cancelsAnswered(attachment, this.#inputs.feeders())) {
        attachment.settle({ kind: "lost", cause: `the server did not answer the cancellations within ${timeoutMs} ms` });
      } else if (!this.#resultSeen && !this.#cancelEndsInput) {
        this.#endCancel({ kind: "not-reached" });
      }
    });
  }

  /**
   * The cancellations were sent on `attachment`: handed to the socket, not yet read by the server
   * (a process that exits now can lose them, in its own buffers or to the reset its unread input
   * provokes). The close that `settle` begins confirms them: the server's close frame comes after
   * it read every frame before ours, and the server applies the cancels it read even when the
   * input in front of them waits (server.md). `run` waits for that: `delivered`, or, if no close
   * frame comes within `cancelConfirmTimeoutMs` or the connection drops, a resume on a new
   * connection (within the reconnect policy), which sends the cancellations first; the server
   * reads them there at once, whatever the old connection is stuck behind.
   */
  #confirmCancel(attachment: Attachment): void {
    if (this.#done || this.#confirming !== undefined) return;
    this.#confirming = confirmedByClose(attachment.closed, this.#config.cancelConfirmTimeoutMs);
    attachment.settle({ kind: "released" });
  }

  /** The runtime stops after an invocation-wide cancel, with its outcome: no connection, timer or source is left. */
  #endCancel(outcome: Exclude<CancelOutcome, { kind: "already-over" }>): void {
    const cancel = this.#cancel;
    if (this.#done || cancel === undefined) return;
    this.#done = true;
    for (const feeder of this.#inputs.feeders()) feeder.stop();
    this.#attachment?.settle({ kind: "released" });
    this.#abort.abort();
    cancel.settle(outcome);
    this.#callbacks.onEvent(
      outcome.kind === "undelivered"
        ? { type: "cancel-undelivered", error: outcome.error }
        : outcome.kind === "not-reached"
          ? { type: "cancel-not-reached", inputsEnded: outcome.inputsEnded === true }
          : { type: outcome.kind === "delivered" ? "cancel-delivered" : "cancel-invocation-succeeded" },
    );
  }

  // ---- descriptors ----

  /** A new start attempt: fresh attempt id and provisional references (protocol 3.2). */
  #freshStart(): InvocationStart {
    if (this.#start.kind === "start") {
      return { ...this.#start.template, attemptId: randomUUID(), methodParameters: this.#inputs.bindStart(this.#start.params) };
    }
    // A start frozen by another process, whose retry was rejected as retryable: its inputs have no
    // source here either.
    const previous = this.#operation.message;
    if (previous.type !== "invocationStart") throw new Error("unreachable: a fresh start after a resume");
    const renewed = renewedStart(previous);
    this.#inputs.adoptSourcelessStart(renewed.methodParameters);
    return renewed;
  }

  #freshAttach(operation: "resume" | "takeover"): ResumeAttach {
    if (this.#sessionToken === undefined) throw new Error("unreachable: resume without a session token");
    return freshResume(operation, this.#sessionToken, this.#outputs.cursorSet());
  }
}

function isOutputItem(message: ServerMessage): boolean {
  return message.type === "outputStreamItem" || message.type === "output-u8" || message.type === "output-binary";
}

/**
 * Waits for the close of a connection this side is closing: undefined when the server's close
 * frame came (it read everything before ours), otherwise why the cancellations are unconfirmed.
 */
async function confirmedByClose(closed: Promise<CloseInfo | undefined>, timeoutMs: number): Promise<string | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<"timeout">((resolve) => (timer = setTimeout(resolve, timeoutMs, "timeout")));
  const info = await Promise.race([closed, timeout]).finally(() => clearTimeout(timer));
  if (info === "timeout") return `the server did not confirm the cancellations within ${timeoutMs} ms (no close frame)`;
  if (info === undefined || info.code === 1006) return "the connection dropped before the server confirmed the cancellations";
  return undefined;
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
