/**
 * The SQLite store's write queue: mutations issued in the same turn of the
 * event loop share one transaction, so one sync covers many of them. Each is
 * atomic on its own (a single statement, or a savepoint), so one that fails
 * (a stale sequence, say) rolls back alone. Every promise resolves only
 * after the shared commit, and mutations commit in the order they were
 * issued.
 *
 * Writes whose rows point into payload files (`payload-files.ts`) have their
 * bytes written and synced first, off the event loop; writes issued
 * meanwhile wait for the next group. Nothing here knows SQL: the store hands
 * in the function that commits a group.
 *
 * With `syncCommitted` (the SQLite store at `synchronous: "full"`), a commit
 * itself does not sync: the store's journal is synced afterwards by that
 * function, off the event loop, and a write's promise resolves only once a
 * sync that began after its commit has completed. Up to two syncs run at
 * once; groups committed while both run share the next one. Reads go through
 * `durable()`, so that nothing a read returns can be lost to a power failure
 * either.
 *
 * With `checkpoints` (the SQLite store), a checkpoint of the WAL that is
 * due runs between two groups, the next group waiting for it
 * (`wal-checkpoints.ts`). One whose database file could not be synced
 * leaves the store taking no more writes: each fails with that error.
 *
 * A group whose transaction fails with a transient error (busy, locked, I/O:
 * `sqlite-errors.ts`) rolled back as a whole: it is committed again, with
 * backoff, within the store's outage grace, before any later write (which
 * waits); past the grace its writes fail. A failed sync is never retried, and
 * leaves the store taking no more writes: the kernel may have dropped the
 * pages it could not write, so a second sync could succeed without them.
 *
 * Why one file: the write queue, the wait for a group's payload files, the
 * sync slots and the checkpoint between groups all turn on the same private
 * state (the group in flight, the committed groups waiting for a sync, the
 * counts `durable()` compares); split, each part would reach into the others.
 */
import { performance } from "node:perf_hooks";
import type { PayloadFiles, PendingPayload } from "./payload-files.js";
import type { CommitListener } from "./session-store.js";
import { OutageGrace } from "./outage-grace.js";
import { isTransientSqliteError } from "./sqlite-errors.js";
import { CheckpointSyncError, type Checkpoints } from "./wal-checkpoints.js";

/** An input chunk or output item that introduces no stream: one row at the end of its log. */
export interface LogAppend {
  readonly log: "input" | "output";
  readonly streamId: string;
  readonly sequence: bigint;
  readonly itemCount: bigint;
  /**
   * Its rows, each the values in its table's column order (the count is
   * advanced by the caller), made only for an append written on its own: most
   * small appends share a packed row and never need theirs. One row, or
   * packed rows of at most `maxPackedRowBytes` for an append that holds
   * several chunks (`InputAppendTask.join`).
   */
  rows(maxPackedRowBytes: number): readonly (readonly unknown[])[];
  /** The row's bytes, when they may share a packed row with the appends around it (`packed-rows.ts`). */
  readonly packable: Uint8Array | undefined;
}

/** Told of one write's outcome instead of a promise (`GroupCommit.writeWatched`). */
export interface WriteWatcher {
  inputSettled(error: Error | undefined): void;
}

/** A write as an object (one per write, instead of a closure and its context). */
export interface WriteTask {
  run(): unknown;
  /**
   * Called at most once, as its group is taken from the queue (nothing joins the write after
   * that), unless the group holds output (`placePayloads`): bytes its rows will point at, given
   * their place now, or undefined. A run of small input chunks that joined one write while it
   * waited only knows at that moment whether it is large enough for a payload file
   * (`InputAppendTask.placePayload`).
   */
  placePayload?(): PendingPayload | undefined;
}

export interface PendingWrite {
  /** The write itself; let go of at the commit (see `#release`). */
  readonly work: (() => unknown) | WriteTask | undefined;
  /** A promise's resolving functions, or (`watcher`) none. */
  readonly resolve: ((value: unknown) => void) | undefined;
  readonly reject: ((error: Error) => void) | undefined;
  /** Told instead of a promise; written like any other write. */
  readonly watcher: WriteWatcher | undefined;
  /** Set when the write only appends one row at the end of a log (the store writes runs of them together). */
  readonly append: LogAppend | undefined;
  /** Bytes the write's row points at, to be on disk before the commit. */
  readonly payload: PendingPayload | undefined;
}

/** A write as the queue keeps it: what it holds for the commit is let go of once committed. */
type QueuedWrite = { -readonly [K in keyof PendingWrite]: PendingWrite[K] };

export type WriteOutcome = { ok: true; value: unknown } | { ok: false; error: Error };

/** Commits one group in one transaction, recording each write's outcome at its index; throws if the commit itself fails. */
export type CommitGroup = (batch: readonly PendingWrite[], outcomes: WriteOutcome[]) => void;

/**
 * Journal syncs that may run at once. One at a time made a commit wait up to
 * two sync times (the one running, then its own), which slowed the round-trip
 * `reverse` row; two keep a thread of libuv's pool (4 by default) free for
 * payload files.
 */
const MAX_SYNCS_IN_FLIGHT = 2;

export class GroupCommit {
  readonly #commitGroup: CommitGroup;
  readonly #payloads: PayloadFiles;
  readonly #queue: QueuedWrite[] = [];
  #flushScheduled = false;
  /** The group whose payloads are being written; the next one waits for it. */
  #flushing: Promise<void> | undefined;
  #listener: CommitListener | undefined;
  readonly #syncCommitted: (() => Promise<void>) | undefined;
  /** Committed groups whose outcomes wait for the next sync. */
  #unsynced: CommittedGroup[] = [];
  /** The syncs running, and how many committed groups the latest one started covers. */
  readonly #syncsInFlight = new Set<Promise<void>>();
  #syncStartedAt = 0;
  /** Groups committed so far, and how many of them a completed sync covers. */
  #committedGroups = 0;
  #syncedGroups = 0;
  /** `durable()` callers: each resolves once `#syncedGroups` reaches its target. */
  #durableWaiters: { readonly target: number; readonly resolve: () => void; readonly reject: (error: Error) => void }[] = [];

  readonly #outage: OutageGrace;
  readonly #checkpoints: Checkpoints | undefined;
  /** A checkpoint ran since the last group: the next group commits whatever the WAL holds (never two in a row). */
  #checkpointed = false;
  /** A checkpoint's database sync failed: every write from then on fails with this. */
  #broken: Error | undefined;

  constructor(
    commitGroup: CommitGroup,
    payloads: PayloadFiles,
    syncCommitted?: () => Promise<void>,
    outage: OutageGrace = new OutageGrace(0),
    checkpoints?: Checkpoints,
  ) {
    this.#commitGroup = commitGroup;
    this.#payloads = payloads;
    this.#syncCommitted = syncCommitted;
    this.#outage = outage;
    this.#checkpoints = checkpoints;
  }

  /**
   * Resolves once everything committed so far is synced (at once without
   * `syncCommitted`, or when nothing waits for a sync). A read taken now and
   * released after this cannot show a client anything a power failure loses.
   */
  durable(): Promise<void> {
    if (this.#broken !== undefined) return Promise.reject(this.#broken);
    if (this.#syncedGroups >= this.#committedGroups) return Promise.resolve();
    return new Promise<void>((resolve, reject) => this.#durableWaiters.push({ target: this.#committedGroups, resolve, reject }));
  }

  /** Queues `work` for the next group; resolves with its value once the group has committed. */
  write<T>(work: () => T, append?: LogAppend, payload?: PendingPayload): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ work, resolve: resolve as (value: unknown) => void, reject, watcher: undefined, append, payload });
      this.#scheduleFlush();
    });
  }

  /**
   * `write`, its outcome told to `watcher` (at the same moment and in the same order its promise
   * would have settled) instead of a promise: under a burst of small items, a promise and its
   * two resolving functions per write were garbage the group's one sync did not need.
   */
  writeWatched(work: (() => unknown) | WriteTask, watcher: WriteWatcher, append?: LogAppend, payload?: PendingPayload): void {
    this.#queue.push({ work, resolve: undefined, reject: undefined, watcher, append, payload });
    this.#scheduleFlush();
  }

  /**
   * The work of the last write queued, when `watcher` watches it: it waits
   * for its group still, so what joins it (`InputAppendTask.join`) commits
   * with it, and is told with it.
   */
  queuedWorkOf(watcher: WriteWatcher): (() => unknown) | WriteTask | undefined {
    const last = this.#queue[this.#queue.length - 1];
    return last !== undefined && last.watcher === watcher ? last.work : undefined;
  }

  /** Why no write can commit any more (a failed sync of the journal, or of the database after a checkpoint), if that happened. */
  get failure(): Error | undefined {
    return this.#broken;
  }

  /** Registers the one listener told of each committed group (metrics). */
  observe(listener: CommitListener): void {
    this.#listener = listener;
  }

  /** Commits everything queued, including a group whose payloads are being written. */
  async drain(): Promise<void> {
    for (;;) {
      if (this.#flushing !== undefined) await this.#flushing;
      else if (this.#queue.length > 0) this.#flush();
      else if (this.#syncsInFlight.size > 0) await Promise.all(this.#syncsInFlight);
      else return;
    }
  }

  #scheduleFlush(): void {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    setImmediate(() => this.#flush());
  }

  #flush(): void {
    this.#flushScheduled = false;
    if (this.#flushing !== undefined) return; // the group in flight schedules the next
    if (this.#queue.length === 0) return;
    if (this.#broken !== undefined) {
      for (const item of this.#queue.splice(0)) rejectWrite(item, this.#broken);
      return;
    }
    if (this.#checkpointDue()) {
      this.#checkpoint(this.#checkpoints as Checkpoints);
      return;
    }
    this.#checkpointed = false;
    const batch = this.#queue.splice(0);
    // The latency reported covers the payload files' writes and syncs as well as the transaction.
    const began = this.#listener === undefined ? 0 : performance.now();
    const payloads = placePayloads(batch);
    if (payloads.length === 0) {
      const retrying = this.#commit(batch, began);
      if (retrying !== undefined) {
        this.#flushing = retrying.finally(() => {
          this.#flushing = undefined;
          if (this.#queue.length > 0) this.#scheduleFlush();
        });
      }
      return;
    }
    this.#flushing = this.#payloads
      .writeDurably(payloads)
      .then(
        () => this.#commit(batch, began),
        // Nothing of this group commits: its rows would point at bytes that may not be on disk.
        (error: unknown) => {
          for (const item of batch) rejectWrite(item, toError(error));
        },
      )
      .finally(() => {
        this.#flushing = undefined;
        if (this.#queue.length > 0) this.#scheduleFlush();
      });
  }

  #checkpointDue(): boolean {
    if (this.#checkpoints === undefined || this.#checkpointed) return false;
    try {
      return this.#checkpoints.due();
    } catch {
      return false; // the commit reports what is wrong with the database
    }
  }

  /**
   * Runs a checkpoint before the next group, with no commit meanwhile: it copies the whole WAL,
   * and the next commit writes the WAL from its start again. One that failed otherwise is not
   * tried again before that commit (the WAL only grows), so commits never wait on two in a row.
   */
  #checkpoint(checkpoints: Checkpoints): void {
    this.#checkpointed = true;
    this.#flushing = checkpoints
      .run()
      .catch((error: unknown) => {
        if (error instanceof CheckpointSyncError) this.#broken = error;
      })
      .finally(() => {
        this.#flushing = undefined;
        if (this.#queue.length > 0) this.#scheduleFlush();
      });
  }

  /** Whether the store takes no more writes: then every write of `batch` has been rejected with why. */
  #refusedAsBroken(batch: readonly PendingWrite[]): boolean {
    const broken = this.#broken;
    if (broken === undefined) return false;
    for (const item of batch) rejectWrite(item, broken);
    return true;
  }

  /** Commits `batch`; a promise while it is being retried after a transient error (later groups wait for it). */
  #commit(batch: readonly QueuedWrite[], began: number): Promise<void> | undefined {
    // Broken while this group's payloads were written: its commit could never be acknowledged.
    if (this.#refusedAsBroken(batch)) return undefined;
    const outcomes: WriteOutcome[] = [];
    try {
      this.#commitGroup(batch, outcomes);
    } catch (error) {
      if (isTransientSqliteError(error)) return this.#retry(batch, began, error);
      // The commit itself failed: nothing of this batch is durable.
      for (const item of batch) rejectWrite(item, toError(error));
      return undefined;
    }
    this.#outage.available();
    this.#committed(batch, outcomes, began);
    return undefined;
  }

  /** Commits `batch` again after each wait of the outage grace, until it commits, fails otherwise, or the grace is spent. */
  async #retry(batch: readonly QueuedWrite[], began: number, error: unknown): Promise<void> {
    let failure = error;
    while (await this.#outage.retry(failure)) {
      if (this.#refusedAsBroken(batch)) return;
      const outcomes: WriteOutcome[] = [];
      try {
        this.#commitGroup(batch, outcomes);
      } catch (next) {
        if (isTransientSqliteError(next)) {
          failure = next;
          continue;
        }
        for (const item of batch) rejectWrite(item, toError(next));
        return;
      }
      this.#outage.available();
      this.#committed(batch, outcomes, began);
      return;
    }
    this.#outage.exceeded(batch.length);
    for (const item of batch) rejectWrite(item, toError(failure));
  }

  #committed(batch: readonly QueuedWrite[], outcomes: WriteOutcome[], began: number): void {
    this.#committedGroups++;
    release(batch);
    if (this.#syncCommitted === undefined) {
      this.#syncedGroups = this.#committedGroups;
      settle({ batch, outcomes, began, ordinal: this.#committedGroups }, this.#listener);
      return;
    }
    this.#unsynced.push({ batch, outcomes, began, ordinal: this.#committedGroups });
    this.#startSync();
  }

  /**
   * Starts a sync of everything committed so far, unless `MAX_SYNCS_IN_FLIGHT`
   * are running (then the next one to finish starts it). A sync covers every
   * group committed before it began, so whichever sync completes settles all
   * the groups up to its point, in commit order, even those an earlier,
   * slower sync was started for.
   */
  #startSync(): void {
    const sync = this.#syncCommitted;
    if (sync === undefined || this.#syncsInFlight.size >= MAX_SYNCS_IN_FLIGHT || this.#syncStartedAt >= this.#committedGroups) return;
    const covered = this.#committedGroups;
    this.#syncStartedAt = covered;
    const running: Promise<void> = sync()
      .then(
        () => this.#synced(covered),
        (error: unknown) => this.#syncFailed(toError(error)),
      )
      .finally(() => {
        this.#syncsInFlight.delete(running);
        this.#startSync();
      });
    this.#syncsInFlight.add(running);
  }

  /** Groups 1..covered are on disk: settle those not settled yet. */
  #synced(covered: number): void {
    if (covered <= this.#syncedGroups) return;
    this.#syncedGroups = covered;
    while (this.#unsynced.length > 0 && (this.#unsynced[0] as CommittedGroup).ordinal <= covered)
      settle(this.#unsynced.shift() as CommittedGroup, this.#listener);
    this.#wakeDurable(undefined);
  }

  /**
   * Committed, but not known to be on disk: nothing of these groups may be acknowledged, nor of
   * any group after them. The journal may have lost pages in the middle: SQLite's recovery stops
   * at the first frame it cannot read, so every later commit's frames would go with them, whatever
   * a later sync answers. The store takes no more writes (as after a checkpoint's failed sync).
   */
  #syncFailed(error: Error): void {
    this.#broken ??= new JournalSyncError("the store's journal could not be synced: it takes no more writes", { cause: error });
    for (const group of this.#unsynced.splice(0)) for (const item of group.batch) rejectWrite(item, error);
    this.#wakeDurable(error);
  }

  #wakeDurable(error: Error | undefined): void {
    const waiting = this.#durableWaiters;
    this.#durableWaiters = [];
    for (const waiter of waiting) {
      if (error !== undefined) waiter.reject(error);
      else if (waiter.target <= this.#syncedGroups) waiter.resolve();
      else this.#durableWaiters.push(waiter);
    }
  }
}

interface CommittedGroup {
  readonly batch: readonly PendingWrite[];
  readonly outcomes: readonly WriteOutcome[];
  readonly began: number;
  /** Its place in commit order (1 for the first group). */
  readonly ordinal: number;
}

/**
 * The payloads a group writes before its commit: those its writes reserved, and the runs that
 * `WriteTask.placePayload` places now. A group that holds an output append places none: its
 * output is sent only after the commit, and a run's file write ahead of it lengthened every round
 * trip (`reverse` ran about 7 % slower); such runs stay in the database's rows, as before files.
 * A loop, not `flatMap`: that made an array per write, nearly all of them empty.
 */
function placePayloads(batch: readonly QueuedWrite[]): PendingPayload[] {
  let placing = true;
  for (const item of batch) if (item.append?.log === "output") placing = false;
  const payloads: PendingPayload[] = [];
  for (const item of batch) {
    const work = item.work;
    if (placing && item.payload === undefined && typeof work === "object" && work.placePayload !== undefined) {
      item.payload = work.placePayload();
    }
    if (item.payload !== undefined) payloads.push(item.payload);
  }
  return payloads;
}

/**
 * A committed group waits for its sync holding only what settles its writes: each write's
 * closure, row and payload (the item's bytes, its chunk, the values they close over) become
 * garbage at the commit instead of surviving the sync. Under a burst of small items thousands
 * of writes wait for a sync at once, and every young-generation collection meanwhile copied
 * all they held.
 */
function release(batch: readonly QueuedWrite[]): void {
  for (const write of batch) {
    write.work = undefined;
    write.append = undefined;
    write.payload = undefined;
  }
}

/** Resolves or rejects every write of a committed (and, where it applies, synced) group. */
function settle({ batch, outcomes, began }: CommittedGroup, listener: CommitListener | undefined): void {
  listener?.((performance.now() - began) / 1000, batch.length);
  batch.forEach((item, index) => {
    const outcome = outcomes[index];
    if (outcome?.ok === true) {
      if (item.watcher !== undefined) tell(item.watcher, undefined);
      else item.resolve?.(outcome.value);
    } else rejectWrite(item, outcome?.error ?? new Error("store write lost"));
  });
}

function rejectWrite(item: PendingWrite, error: Error): void {
  if (item.watcher !== undefined) tell(item.watcher, error);
  else item.reject?.(error);
}

/**
 * Tells a watcher, which must not throw; one that does cannot keep the writes after it from
 * being told: its error surfaces as an unhandled rejection, as a promise's reaction's would.
 */
function tell(watcher: WriteWatcher, error: Error | undefined): void {
  try {
    watcher.inputSettled(error);
  } catch (thrown) {
    void Promise.reject(thrown);
  }
}

/** Runs one write, capturing its outcome (it rolled back alone if it threw). */
export function runWrite(item: PendingWrite | undefined): WriteOutcome {
  if (item === undefined) return { ok: false, error: new Error("store write lost") };
  if (item.work === undefined) return { ok: false, error: new Error("store write already committed") };
  try {
    return { ok: true, value: typeof item.work === "function" ? item.work() : item.work.run() };
  } catch (error) {
    // Not this write's own failure: the whole group rolls back and is written again, in order.
    if (isTransientSqliteError(error)) throw error;
    return { ok: false, error: toError(error) };
  }
}

/** The store's journal could not be synced: the store takes no more writes (`GroupCommit`). */
export class JournalSyncError extends Error {
  override readonly name = "JournalSyncError";
}

export function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
