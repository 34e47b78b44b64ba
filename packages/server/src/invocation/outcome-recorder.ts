/**
 * How a live session's invocation ends, recorded once: a success, a failure
 * (every open stream ended first, then the outcome; a store that refuses is
 * tried again until it takes it or the server shuts down), or a session
 * found running after a restart. It owns whether the invocation is failing,
 * the failure and the finish under way, so a second failure or finish waits
 * for the first instead of recording over it.
 *
 * Apart from `LiveSession` because ending well under failure (the store
 * failing too, a drain's deadline, another node's claim) is its own set of
 * rules, read together.
 */
import { canonicalJson, type InvocationOutcome, type JsonValue, type ServerCancelReason } from "@golem-stream/wire";
import { sessionFields } from "../observability/log-observer.js";
import { identityOf } from "../observability/server-observer.js";
import type { SessionRecord, StreamRecord } from "../store/session-store.js";
import { isOwnershipLost } from "../store/ownership.js";
import { failureOutcome, INVOCATION_FAILED } from "./failure-outcome.js";
import type { OutputProducers } from "./output-producers.js";
import { ReplayDivergence } from "./replay-divergence.js";
import type { SessionDeps } from "./session-deps.js";
import type { StreamState } from "./stream-state.js";
import { errorLogFields } from "../error-text.js";

/** After the store refused to record a failure: the first wait before trying again, growing by this much per attempt. */
const RECORD_FAILURE_RETRY_MS = 2_000;
const MAX_RECORD_FAILURE_RETRY_MS = 60_000;

/** Writes an outcome (its canonical text, its time) in place of the store's `finish`. */
export type RecordFinish = (outcome: string, at: number) => Promise<void>;

/** What the recorder needs from its session. */
export interface OutcomeHost {
  readonly deps: SessionDeps;
  readonly sessionId: string;
  /** The output side: settled before a failure's terminals, and ending the outputs. */
  readonly producers: OutputProducers;
  record(): SessionRecord;
  finished(): boolean;
  /** The epoch the invocation's writes carry (store/ownership.ts). */
  ownerEpoch(): bigint;
  /** Streams in creation order. */
  streams(): StreamState[];
  /** Forgets a stream whose introducing write the store refused (stream-registry.ts). */
  forget(stream: StreamState, reason: ServerCancelReason): void;
  cancelInputByServer(stream: StreamState, reason: ServerCancelReason): Promise<void>;
  /** Aborts the method's signal: the agent stops. */
  abortInvocation(reason: Error): void;
  /** The store refused a write for a stale ownership epoch: another node claimed the session. */
  lostOwnership(error: unknown): void;
  /** The outcome is committed: the session's copy of its record, the observers and the attachment learn it. */
  finishCommitted(outcome: InvocationOutcome, text: string, at: number): void;
}

export class OutcomeRecorder {
  readonly #host: OutcomeHost;
  #failing = false;
  /** The server is shutting down: nothing more is recorded (`shutDown`). */
  #shutDown = false;
  /** The failure being recorded (see `fail`). */
  #failure: Promise<void> | undefined;
  /** The outcome being recorded (see `finish`). */
  #finishing: Promise<void> | undefined;

  constructor(host: OutcomeHost) {
    this.#host = host;
  }

  /** The invocation is failing or was stopped: nothing it does from now on counts as its success. */
  get failing(): boolean {
    return this.#failing;
  }

  /** An outcome of this node's is being recorded. */
  get finishing(): boolean {
    return this.#finishing !== undefined;
  }

  /** The invocation stopped here without an outcome of this node's (another node records it). */
  stop(): void {
    this.#failing = true;
  }

  /** The server shuts down: nothing more is recorded, a failure being recorded is not tried again. */
  shutDown(): void {
    this.#failing = true;
    this.#shutDown = true;
  }

  /**
   * Fatal failure (section 6.9): every open stream is terminalized first,
   * then the invocation finishes with `invocation-failed`. Fails the
   * invocation once; a second call waits for the first (a drain counts what
   * it failed). Never rejects.
   */
  fail(error: unknown): Promise<void> {
    // Refused for a stale ownership epoch: nothing may be recorded, so nothing is tried again.
    if (isOwnershipLost(error)) {
      this.#host.lostOwnership(error);
      return Promise.resolve();
    }
    if (this.#failing || this.#host.finished()) return this.#failure ?? Promise.resolve();
    this.#failing = true;
    this.#failure = this.#recordFailure(error);
    return this.#failure;
  }

  /**
   * Records the failure: the producers stop, the events already handed to
   * the store settle (so each output's terminal continues what the store
   * has), every open stream ends, then the outcome. A store that refuses
   * that (it is failing, which may be why the invocation failed) is tried
   * again, every few seconds up to a minute apart, until it takes it or the
   * server shuts down; nothing recorded is recorded twice. Without that the
   * session hung, neither running nor finished, until a restart.
   */
  async #recordFailure(error: unknown): Promise<void> {
    // The divergence first: the `invocation.failed` line after it says where.
    if (error instanceof ReplayDivergence) this.#host.deps.observer.replayDiverged(identityOf(this.#host.record()));
    this.#host.deps.logger.warn("invocation failed", {
      event: "invocation.failed",
      ...sessionFields(this.#host.record()),
      // A divergence is the server's own finding (where the re-run differed), with no stack worth reading.
      ...(error instanceof ReplayDivergence ? { error: `${error.message}: ${error.detail}` } : errorLogFields(error)),
    });
    this.#host.abortInvocation(new Error(INVOCATION_FAILED));
    for (let attempt = 1; !this.#shutDown; attempt++) {
      try {
        await this.#host.producers.settled();
        await this.terminalizeAll("invocation-failed");
        await this.finish(failureOutcome(error));
        return;
      } catch (storeError) {
        if (isOwnershipLost(storeError)) {
          this.#host.lostOwnership(storeError);
          return;
        }
        const retryInMs = Math.min(RECORD_FAILURE_RETRY_MS * attempt, MAX_RECORD_FAILURE_RETRY_MS);
        this.#host.deps.logger.error("could not record an invocation failure", {
          event: "invocation.record-failed",
          session: this.#host.sessionId,
          error: String(storeError),
          attempt,
          retryInMs,
        });
        await new Promise<void>((resolve) => setTimeout(resolve, retryInMs).unref());
      }
    }
  }

  /** Cancels every open input and output with `reason` (used by failure, a give-up and restart recovery). */
  async terminalizeAll(reason: ServerCancelReason): Promise<void> {
    // Every output's producer stops before any input ends: ending an input wakes the agent, and an
    // agent that fails on it would otherwise end an output first with its own outcome (producer-error
    // instead of `reason`), whenever the input's commit and the agent's failure beat this loop.
    for (const stream of this.#host.streams()) if (stream.direction === "output") stream.producer?.abort(new Error(reason));
    for (const stream of this.#host.streams()) {
      // A client's end on its way is refused when it follows an item whose commit failed (the
      // store keeps it where its items are): then the input is still open, and is cancelled here.
      if (stream.direction === "input" && stream.inputTerminalWrite !== undefined) await stream.inputTerminalWrite;
      if (stream.terminal) continue;
      // After a refused write (a result, or an item that introduced streams), its new streams are
      // known here but not in the store: there is nothing to end, and the store would refuse it.
      const stored = this.#failing ? await this.#host.deps.store.getStream(stream.streamId) : undefined;
      if (this.#failing && stored === undefined) {
        this.#host.forget(stream, reason);
        continue;
      }
      if (stored !== undefined && stream.direction === "output" && !this.#continueStored(stream, stored)) continue;
      if (stream.direction === "output") await this.#host.producers.appendTerminal(stream, { kind: "cancelled", reason });
      else await this.#host.cancelInputByServer(stream, reason);
    }
  }

  /**
   * Failing, nothing in flight: an output's end goes where the store's stream ends. This copy may be
   * behind it (it learned of another node's output late), and an end at a count the store is past
   * would be refused at every attempt: the session would stay running for good. Resolves to
   * whether the output is still open.
   */
  #continueStored(stream: StreamState, stored: StreamRecord): boolean {
    if (stored.count > stream.count) stream.count = stored.count;
    if (stored.count > stream.outputCommitted) stream.outputCommitted = stored.count;
    if (stored.outputTerminal) stream.outputTerminal = true;
    return !stream.outputTerminal;
  }

  /** Marks a session that was running when the process stopped as failed (embedded host; see docs). */
  async failInterrupted(): Promise<void> {
    this.#failing = true;
    try {
      await this.terminalizeAll("invocation-failed");
      await this.finish({ kind: "failure", code: "invocation-failed", message: INVOCATION_FAILED });
    } catch (error) {
      // Claimed by another node meanwhile: that node finishes it.
      if (!isOwnershipLost(error)) throw error;
      this.#host.lostOwnership(error);
    }
  }

  /**
   * Records the outcome once. A success being committed when a failure
   * arrives (a drain's deadline) stays the outcome, here as in the store:
   * the later call waits for the first instead of overwriting the record.
   * `record` writes it in place of the store's `finish` (the result with
   * it, method-run.ts).
   */
  finish(outcome: InvocationOutcome, record?: RecordFinish): Promise<void> {
    if (this.#finishing !== undefined) return this.#finishing;
    const attempt = this.#recordFinish(outcome, record);
    this.#finishing = attempt;
    // A finish the store failed to record may be tried again (as a failure).
    attempt.catch(() => {
      if (this.#finishing === attempt) this.#finishing = undefined;
    });
    return attempt;
  }

  async #recordFinish(outcome: InvocationOutcome, record: RecordFinish | undefined): Promise<void> {
    if (this.#host.finished()) return;
    // The client hears of every server cancel of an input before the finish (decisions section 8).
    await Promise.all(this.#host.streams().map((stream) => stream.serverCancelSent));
    if (this.#host.finished()) return;
    const text = canonicalJson(outcome as unknown as JsonValue);
    const at = this.#host.deps.now();
    if (record === undefined) await this.#host.deps.store.finish(this.#host.sessionId, text, at, this.#host.ownerEpoch());
    else await record(text, at);
    this.#host.finishCommitted(outcome, text, at);
  }
}
