/**
 * The durable state of invocation sessions, behind a small interface so a
 * deployment can put it in its own database. `SqliteSessionStore` is the
 * embedded default.
 *
 * Contract: every mutating call is atomic and durable when its promise
 * resolves, and mutations take effect and resolve in the order they were
 * called (the runtime hands an output stream's items and then its terminal
 * to the store without waiting in between). The runtime sends
 * `invocationAccepted`, an `inputStreamAck` or an output event only after
 * the call that recorded it has resolved. A mutation that does not continue
 * its stream (wrong sequence, after a terminal) rejects and changes nothing.
 * Payload bytes are opaque to the store: UTF-8 canonical JSON for values,
 * raw bytes for direct-binary items.
 *
 * Fencing (ownership.ts): the writes of a session's owner carry the
 * ownership epoch it holds (`epoch`); a write whose epoch is not the
 * session's current one rejects with an `OwnershipLostError` and changes
 * nothing. A write without an epoch is not fenced. A store of one node keeps
 * every session at `FIRST_EPOCH`.
 */
import type { ServerCancelReason, StreamDirection } from "@golem-stream/wire";
import type { StoreOutageListener } from "./outage-grace.js";

/** How items of a stream travel: JSON values, packed u8 or binary blobs. */
export type ElementKind = "value" | "u8" | "binary";

/** Which message exposed a stream first (for re-announcement on resume). */
export type StreamParent =
  | { readonly kind: "params" }
  | { readonly kind: "result" }
  | { readonly kind: "item"; readonly streamId: string; readonly sequence: bigint };

export type InputTerminal =
  { readonly kind: "end" } | { readonly kind: "cancelled"; readonly reason: ServerCancelReason; readonly by: "client" | "server" };

export interface StreamRecord {
  readonly streamId: string;
  readonly sessionId: string;
  /** Creation order within the session; mappings are listed in this order. */
  readonly ordinal: number;
  readonly direction: StreamDirection;
  readonly elementKind: ElementKind;
  /** Canonical JSON of the self-contained element SchemaGraph. */
  readonly elementGraph: string;
  readonly coordinate: string;
  /** The client's provisional reference, for input streams it introduced. */
  readonly provisionalRef: string | undefined;
  readonly parent: StreamParent;
  /** The stable stream token (minted once, never re-signed). */
  readonly token: string;
  /** Input: durably accepted logical items. Output: items produced. */
  readonly count: bigint;
  readonly inputTerminal: InputTerminal | undefined;
  readonly outputTerminal: boolean;
}

export type NewStream = Omit<StreamRecord, "ordinal" | "count" | "inputTerminal" | "outputTerminal">;

export type SessionState = "running" | "finished";

export interface SessionRecord {
  readonly sessionId: string;
  readonly account: string;
  readonly principal: string;
  readonly application: string;
  readonly environment: string;
  readonly agentType: string;
  readonly agentIdentity: string;
  readonly method: string;
  readonly idempotencyKey: string;
  /** Canonical JSON of the selector, config and method parameters (stable tokens substituted). */
  readonly selector: string;
  readonly config: string;
  readonly parameters: string;
  readonly generation: bigint;
  /** The session token of the current generation. */
  readonly sessionToken: string;
  readonly streamKeyId: string;
  readonly state: SessionState;
  /** Canonical JSON of the `invocationResult.result` body, once produced. */
  readonly result: string | undefined;
  /** Canonical JSON of the `invocationFinished.outcome`, once finished. */
  readonly outcome: string | undefined;
  readonly createdAt: number;
  readonly finishedAt: number | undefined;
}

export type AttemptOperation = "start" | "resume" | "takeover";

export interface AttemptRecord {
  readonly attemptId: string;
  readonly operation: AttemptOperation;
  /** SHA-256 of the canonical descriptor (protocol section 9). */
  readonly descriptorDigest: string;
  readonly sessionId: string;
  /** The attachment generation this attempt created (or, for a start, 0). */
  readonly generation: bigint;
}

export interface InputChunk {
  readonly streamId: string;
  readonly sequence: bigint;
  readonly itemCount: bigint;
  readonly data: Uint8Array;
  readonly mimeType: string | undefined;
}

export type OutputEvent =
  | {
      readonly event: "item";
      readonly streamId: string;
      readonly sequence: bigint;
      readonly itemCount: bigint;
      readonly data: Uint8Array;
      readonly mimeType: string | undefined;
    }
  | {
      readonly event: "terminal";
      readonly streamId: string;
      /** The next expected sequence, i.e. the stream's item count. */
      readonly sequence: bigint;
      /** Canonical JSON of the `outputStreamEnd.outcome`. */
      readonly outcome: string;
    };

export type CreateSessionResult =
  | { readonly kind: "created" }
  | { readonly kind: "idempotency-conflict" }
  | { readonly kind: "attempt-exists" }
  /** The attempt id or the idempotency key belonged to a purged session whose tombstone is kept. */
  | { readonly kind: "purged" };

export type AttachResult =
  { readonly kind: "attached"; readonly generation: bigint } | { readonly kind: "superseded" } | { readonly kind: "attempt-exists" };

/**
 * One entry of an invocation's journal (docs/durable-execution.md): the
 * outcome of a `ctx.step` (or `ctx.now`, `ctx.random`), so a re-run of a
 * replayable method gets it back instead of running the step again.
 * Written by the session's owner with its ownership epoch, which
 * `appendJournal` checks like every other write of an owner (fencing).
 */
export interface JournalEntry {
  /** The session whose invocation ran the step. */
  readonly sessionId: string;
  /** The order in which the method called its journaled steps, from 0. */
  readonly position: number;
  /** The step's name; a re-run checks that the step at this position has the same one. */
  readonly name: string;
  /** Canonical JSON: `{"value":…}` (without `value` for undefined) or `{"error":"message"}`. */
  readonly outcome: string;
}

/** The bytes one principal keeps in a store: its logs' payloads and its sessions' records (`storedBytesByPrincipal`). */
export interface StoredBytes {
  readonly account: string;
  readonly principal: string;
  readonly bytes: number;
}

/** Told after each committed group of writes: how long the commit took and how many writes it held. */
export type CommitListener = (seconds: number, writes: number) => void;

/** Told of one input chunk's commit (`SessionStore.acceptInputWatched`). Must not throw. */
export interface InputCommitWatcher {
  /** The chunk is committed (`error` undefined), or its commit failed. */
  inputSettled(error: Error | undefined): void;
}

/** What `SessionStore.recordRun` resolves to. */
export interface RecordedRun {
  /** Runs of the invocation so far, this one included: 2 at the first re-run (`ctx.attempt`). */
  readonly run: number;
  /**
   * Re-runs in a row, this one included, that found no more progress than
   * the re-run before them (or, for the first, than nothing): what
   * `limits.maxReplays` bounds. 0 for a re-run that found progress.
   */
  readonly withoutProgress: number;
}

export interface SessionStore {
  /**
   * Atomically records a new session, its parameter streams and its start
   * attempt. Checked in this order: the attempt id exists (`attempt-exists`),
   * the attempt id or idempotency key is tombstoned (`purged`), the
   * idempotency key is bound (`idempotency-conflict`).
   */
  createSession(session: SessionRecord, streams: readonly NewStream[], attempt: AttemptRecord): Promise<CreateSessionResult>;

  getAttempt(attemptId: string): Promise<AttemptRecord | undefined>;
  getSession(sessionId: string): Promise<SessionRecord | undefined>;
  listStreams(sessionId: string): Promise<StreamRecord[]>;
  getStream(streamId: string): Promise<StreamRecord | undefined>;

  /**
   * Records a resume or takeover: moves the session to `attempt.generation`
   * and stores `sessionToken` for it. With `expectedGeneration` (resume) the
   * move happens only if that is still the current generation.
   */
  attach(attempt: AttemptRecord, sessionToken: string, expectedGeneration: bigint | undefined): Promise<AttachResult>;

  /**
   * Appends the next input chunk (its sequence must equal the stream's count) and the streams it introduced.
   * `epoch`: the owner's ownership epoch when the owner accepts it (fenced); none at a node that only serves the attachment.
   */
  acceptInput(chunk: InputChunk, introduced: readonly NewStream[], epoch?: bigint): Promise<void>;
  /**
   * Optional: `acceptInput` of a chunk that introduces no stream, its outcome told to `watcher`
   * instead of a promise (a promise, its resolving functions and a reaction per 64-byte item
   * were a sixth of the server's garbage, docs/performance.md). `watcher.inputSettled` is
   * called exactly once, never before this returns, after the commit is as durable as
   * `acceptInput`'s promise would have resolved (or with the error it would have rejected with);
   * the watchers of one store are called in the order their chunks were handed over.
   */
  acceptInputWatched?(chunk: InputChunk, epoch: bigint | undefined, watcher: InputCommitWatcher): void;
  /**
   * Optional, beside `acceptInputWatched`: adds `chunk` (which continues the
   * stream of the chunk `watcher` was handed over with) to that chunk's
   * write, if it has not been committed yet and the two may be written
   * together; true if so. The chunk then commits with it, and its outcome is
   * `watcher`'s one call (after which both are committed, or neither). False
   * leaves everything as it was: the caller hands the chunk over with
   * `acceptInputWatched`.
   */
  joinInputWatched?(chunk: InputChunk, epoch: bigint | undefined, watcher: InputCommitWatcher): boolean;
  /** Chunks overlapping `[from, to)`, in order, to compare a resend with what was accepted. */
  readInput(streamId: string, from: bigint, to: bigint): Promise<InputChunk[]>;
  /**
   * Records the input's terminal unless it has one; `epoch` as for `acceptInput`. With `count`
   * (a client's natural end, at the sequence it sent), an input without a terminal that does not
   * hold exactly `count` items is refused (rejects) and keeps no terminal: the end followed items
   * whose commit failed, and recorded it would end the input short of what the client sent.
   */
  endInput(streamId: string, terminal: InputTerminal, epoch?: bigint, count?: bigint): Promise<void>;

  /** Appends the next output event and the streams it introduced; `epoch`: the owner's ownership epoch (fenced). */
  appendOutput(event: OutputEvent, introduced: readonly NewStream[], epoch?: bigint): Promise<void>;
  /**
   * Up to `limit` events of a stream with `sequence >= from` (terminal last).
   * With `maxBytes`, the events stop after the one whose payload brings their
   * total to `maxBytes` or more (so there is always at least one): a reader's
   * memory is then bounded by bytes, not by `limit` times the largest item.
   */
  readOutput(streamId: string, from: bigint, limit: number, maxBytes?: number): Promise<OutputEvent[]>;

  /** Records the result once; `epoch`: the owner's ownership epoch (fenced). */
  setResult(sessionId: string, result: string, introduced: readonly NewStream[], epoch?: bigint): Promise<void>;
  /** Records the outcome unless the session is finished already; `epoch`: the owner's ownership epoch (fenced, even when the session is finished). */
  finish(sessionId: string, outcome: string, at: number, epoch?: bigint): Promise<void>;
  /**
   * Optional: `setResult` (introducing no stream) and then `finish`, as one atomic write: both
   * are recorded or neither (it rejects as `setResult` would, and then the outcome is not
   * recorded either); a cluster store tells the other nodes of both, in that order. For a method
   * whose result is the last thing it writes, one commit instead of two. Without it the runtime
   * calls the two in turn.
   */
  finishWithResult?(sessionId: string, result: string, outcome: string, at: number, epoch?: bigint): Promise<void>;

  listRunningSessions(): Promise<SessionRecord[]>;

  /**
   * Optional, with `readJournal` and `recordRun` (replayable methods,
   * docs/durable-execution.md; a store without them runs every method as
   * not replayable). Records one journal entry; resolves once it is
   * durable. Rejects, changing nothing, when the session does not exist or
   * is finished, or the position holds another entry. The same entry
   * (name and outcome) at its position again resolves: a write retried
   * after it committed (its answer lost with the connection) is done, not
   * refused. `epoch`: the owner's ownership epoch (fenced: a stale one is
   * refused with `OwnershipLostError`).
   */
  appendJournal?(entry: JournalEntry, epoch?: bigint): Promise<void>;
  /** The session's journal entries, by position. */
  readJournal?(sessionId: string): Promise<JournalEntry[]>;
  /**
   * Counts one more run of the session's invocation (a re-run: the first
   * run is never recorded) and resolves, once durable, to the runs so far
   * (`RecordedRun`). `progress` is how far the invocation's runs have got
   * as the server measures it (its committed output items and stream ends
   * and its journal entries), never less than at the call before: a re-run
   * that finds more than the one before it found (more than 0 at the first)
   * starts `withoutProgress` again at 0, any other adds one to it. Rejects
   * when the session does not exist or is finished. `epoch`: the owner's
   * ownership epoch (fenced). A store that resolves to a number (the runs
   * so far, as before progress was counted) has each re-run counted as
   * one without progress.
   */
  recordRun?(sessionId: string, epoch?: bigint, progress?: bigint): Promise<RecordedRun | number>;
  /**
   * Optional, with `recordRun`. Records that the session's run was stopped
   * by a drain, its work left to the next owner, and resolves once durable:
   * the next re-run that records its progress (as the server's always do)
   * counts as one that found some (`withoutProgress` 0), even when it
   * measures none, and the count goes on from there. A drain is the
   * operator's decision, not a failure of the method, so a rolling restart
   * does not use up `limits.maxReplays` of an invocation that commits
   * nothing between restarts (one waiting on a slow input, or a long step).
   * Rejects when the session does not exist or is finished; `epoch` fenced
   * as for `recordRun`. Without it a drain's hand-over counts as any loss.
   */
  recordHandOver?(sessionId: string, epoch?: bigint): Promise<void>;
  /**
   * Deletes sessions finished before `finishedBefore` and leaves a tombstone
   * of each, stamped `now`: its attempt ids and its idempotency key (with
   * the account and agent it is scoped to), so that `createSession` can
   * answer `purged` to a late exact replay instead of running the method
   * again. Drops tombstones stamped before `tombstonesBefore`. Returns how
   * many sessions were purged.
   */
  purgeFinished(finishedBefore: number, now: number, tombstonesBefore: number): Promise<number>;
  close(): Promise<void>;

  /**
   * Optional (metrics): the server registers one listener, told after each
   * group of writes the store committed together. A store without groups may
   * report each write as a group of one, or not implement it.
   */
  observeCommits?(listener: CommitListener): void;
  /**
   * Optional (`limits.maxStoredBytesPerPrincipal`): the bytes each
   * principal (the session's `account` and `principal`) keeps in the store:
   * the payload bytes of every input chunk and output item, and each
   * session's own record and attempts as record-bytes.ts counts them
   * (`sessionRecordBytes`, `ATTEMPT_RECORD_BYTES`); principals with no
   * session are left out. Purged sessions no longer count. With `finishedBefore`, only
   * the sessions finished before it: what `purgeFinished(finishedBefore, …)`
   * is about to delete, which should cost in proportion to them, not to the
   * whole store. The server reads every sum at start (and, in a cluster,
   * after each retention sweep) and the purged sessions' before each purge;
   * without it a server counts only what it wrote since it started.
   */
  storedBytesByPrincipal?(finishedBefore?: number): Promise<StoredBytes[]>;

  /**
   * Optional (metrics and log lines): the server registers one listener,
   * told when the store finds its database unavailable, retries, answers
   * again, or fails writes because an outage outlasted its grace
   * (`outage-grace.ts`). A store that never retries need not implement it.
   */
  observeOutages?(listener: StoreOutageListener): void;
  /**
   * Optional (`/readyz`): resolves when the store can serve requests, rejects
   * otherwise. Without it readiness reads a session that does not exist.
   */
  ping?(): Promise<void>;
}
