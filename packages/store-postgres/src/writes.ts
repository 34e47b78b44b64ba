/**
 * What the writer (`write-queue.ts`) is given: a write and what it may do
 * inside its group's transaction, an append it may write together with its
 * neighbours, and the statements that write runs of appends.
 */
import type pg from "pg";
import type { RunAppend } from "./append-runs.js";

/** Thrown by a write to undo its statements and still resolve with `value` (e.g. `attempt-exists`). */
export class Rollback<T> {
  constructor(readonly value: T) {}
}

/** What a write may do inside the group's transaction. */
export interface WriteContext {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: readonly unknown[]): Promise<pg.QueryResult<R>>;
  /** Queues a notification sent (with the write's others) only if the write commits. */
  notify(payload: string): void;
}

/**
 * A write that only appends one row at the end of a stream's log (an input
 * chunk, an output item, introducing no stream). Appends of one stream in a
 * group that continue one another (other streams' appends between them do
 * not count, `writeOrder`) are written as one run: one
 * statement that advances the count by their sum and inserts every row, in
 * one savepoint, instead of four round trips per row (SAVEPOINT, UPDATE,
 * INSERT, RELEASE). A run whose stream does not continue where its first
 * row says is written again one write at a time, so each failure stays its own.
 */
export interface LogAppend extends RunAppend {
  /** The change notification for the run, given the stream's session id. */
  note(sessionId: string): string;
}

/** The run statements, by log (the store's schema is in them), and how runs are packed. */
export interface RunStatements {
  readonly input: string;
  readonly output: string;
  /** A group of runs, one per stream, with its notifications (`append-group.ts`). */
  readonly group: string;
  /** Bytes per packed row for the run being written now (0: a row per append; @golem-stream/server's `packRun`). */
  readonly packedRowBytes: () => number;
  /** The count of each stream of `$1` (text[]): `stream_id`, `count`; tells whether a group statement whose answer was lost committed. */
  readonly counts?: string;
}
