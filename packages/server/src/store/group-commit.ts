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
 */
import { performance } from "node:perf_hooks";
import type { PayloadFiles, PendingPayload } from "./payload-files.js";
import type { CommitListener } from "./session-store.js";

/** An input chunk or output item that introduces no stream: one row at the end of its log. */
export interface LogAppend {
  readonly log: "input" | "output";
  readonly streamId: string;
  readonly sequence: bigint;
  readonly itemCount: bigint;
  /** Inserts the row (the count is advanced by the caller). */
  readonly insert: () => void;
}

export interface PendingWrite {
  readonly work: () => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: Error) => void;
  /** Set when the write only appends one row at the end of a log (the store writes runs of them together). */
  readonly append: LogAppend | undefined;
  /** Bytes the write's row points at, to be on disk before the commit. */
  readonly payload: PendingPayload | undefined;
}

export type WriteOutcome = { ok: true; value: unknown } | { ok: false; error: Error };

/** Commits one group in one transaction, recording each write's outcome at its index; throws if the commit itself fails. */
export type CommitGroup = (batch: readonly PendingWrite[], outcomes: WriteOutcome[]) => void;

export class GroupCommit {
  readonly #commitGroup: CommitGroup;
  readonly #payloads: PayloadFiles;
  readonly #queue: PendingWrite[] = [];
  #flushScheduled = false;
  /** The group whose payloads are being written; the next one waits for it. */
  #flushing: Promise<void> | undefined;
  #listener: CommitListener | undefined;

  constructor(commitGroup: CommitGroup, payloads: PayloadFiles) {
    this.#commitGroup = commitGroup;
    this.#payloads = payloads;
  }

  /** Queues `work` for the next group; resolves with its value once the group has committed. */
  write<T>(work: () => T, append?: LogAppend, payload?: PendingPayload): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ work, resolve: resolve as (value: unknown) => void, reject, append, payload });
      this.#scheduleFlush();
    });
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
    const batch = this.#queue.splice(0);
    if (batch.length === 0) return;
    // The latency reported covers the payload files' writes and syncs as well as the transaction.
    const began = this.#listener === undefined ? 0 : performance.now();
    const payloads = batch.flatMap((item) => (item.payload === undefined ? [] : [item.payload]));
    if (payloads.length === 0) {
      this.#commit(batch, began);
      return;
    }
    this.#flushing = this.#payloads
      .writeDurably(payloads)
      .then(
        () => this.#commit(batch, began),
        // Nothing of this group commits: its rows would point at bytes that may not be on disk.
        (error: unknown) => {
          for (const item of batch) item.reject(toError(error));
        },
      )
      .finally(() => {
        this.#flushing = undefined;
        if (this.#queue.length > 0) this.#scheduleFlush();
      });
  }

  #commit(batch: readonly PendingWrite[], began: number): void {
    const outcomes: WriteOutcome[] = [];
    try {
      this.#commitGroup(batch, outcomes);
    } catch (error) {
      // The commit itself failed: nothing of this batch is durable.
      for (const item of batch) item.reject(toError(error));
      return;
    }
    this.#listener?.((performance.now() - began) / 1000, batch.length);
    batch.forEach((item, index) => {
      const outcome = outcomes[index];
      if (outcome?.ok === true) item.resolve(outcome.value);
      else item.reject(outcome?.error ?? new Error("store write lost"));
    });
  }
}

/** Runs one write, capturing its outcome (it rolled back alone if it threw). */
export function runWrite(item: PendingWrite | undefined): WriteOutcome {
  if (item === undefined) return { ok: false, error: new Error("store write lost") };
  try {
    return { ok: true, value: item.work() };
  } catch (error) {
    return { ok: false, error: toError(error) };
  }
}

export function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
