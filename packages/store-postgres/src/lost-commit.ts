/**
 * What became of a group of writes whose answer was lost (its connection
 * cut, PostgreSQL restarted): asked once PostgreSQL answers again, so the
 * writer neither writes a group twice nor reports a lost one durable.
 *
 * A group of several statements (`write-queue.ts`) writes a commit marker
 * inside its transaction: its writer's row of `writer_groups` takes the
 * group's number (`CommitMarker`). The marker commits with the group or not
 * at all, so after a lost COMMIT a marker at or past the number says the
 * group committed, anything less that it did not.
 *
 * Why not the transaction's id alone (`pg_xact_status`): PostgreSQL does not
 * log the assignment of an id. A server that crashes before the group's
 * records reach its WAL restarts with its next id at or before the group's,
 * and hands that id to the next transaction that writes (another node's, or
 * this writer's own next group); once that one commits, the id's status
 * says "committed" about somebody else's transaction. The status still
 * tells one thing the marker cannot: the old connection's transaction is
 * still running on a server that did not crash ("in progress"; its marker
 * is not visible yet), so it is asked first, and the marker is read after
 * that transaction ended.
 *
 * A group statement of appends (`append-group.ts`) has no marker: the
 * streams' counts tell (`appendsCommitted`).
 */
import { randomUUID } from "node:crypto";
import type pg from "pg";
import type { OutageGrace } from "@golem-stream/server/store";
import type { RunAppend } from "./append-runs.js";
import { isUnavailable } from "./store-error.js";

/** What became of a group whose connection was lost. */
export type Verdict = "committed" | "not-committed" | "pending" | "unknown";

/**
 * A writer's commit marker: one row of `writer_groups` per writer (a store
 * instance), keyed by a random id of its own so no two writers ever share
 * one (a shared row would make each wait on the other's transaction, and
 * tell one writer's numbers for the other's). The row is deleted when the
 * store closes; a writer that crashed leaves its row, deleted at a later
 * store's open once unused for `STALE_MARKER_SECONDS`.
 */
export class CommitMarker {
  readonly #table: string;
  /** This writer's key in the table. */
  readonly writer: string;
  #last = 0;

  /** `table`: the schema-qualified `writer_groups`. */
  constructor(table: string, writer: string = randomUUID()) {
    this.#table = table;
    this.writer = writer;
  }

  /** The next group's number: one more than the last, for every group, so a marker never goes back. */
  next(): number {
    return ++this.#last;
  }

  /**
   * The statement, inside the group's transaction, setting the marker to
   * `group`; it also answers the transaction's id (`xid`, assigned now). One
   * row per writer, updated in place (no index column changes: a heap-only
   * update), so the table does not grow with the groups.
   */
  statement(client: Pick<pg.ClientBase, "escapeLiteral">, group: number): string {
    return `INSERT INTO ${this.#table} (writer, group_seq) VALUES (${client.escapeLiteral(this.writer)}, ${group}) ON CONFLICT (writer) DO UPDATE SET group_seq = excluded.group_seq, written_at = now() RETURNING pg_current_xact_id()::text AS xid`;
  }

  /**
   * Whether the group numbered `group`, of transaction `xid`, committed: a
   * transaction still in progress is asked about again (`pending`); once it
   * ended (or the server no longer runs it), the marker tells.
   */
  async committed(client: pg.ClientBase, xid: string | undefined, group: number): Promise<Verdict> {
    // Without the id a transaction still running cannot be told from one that ended.
    if (xid === undefined) return "unknown";
    if ((await transactionStatus(client, xid)) === "in progress") return "pending";
    // Read after the status said the transaction ended: its marker, if it committed, is visible now.
    const { rows } = await client.query<{ group_seq: string }>(`SELECT group_seq FROM ${this.#table} WHERE writer = $1`, [this.writer]);
    const marked = rows[0]?.group_seq;
    return marked !== undefined && BigInt(marked) >= BigInt(group) ? "committed" : "not-committed";
  }

  /** Deletes this writer's row (the store is closing): best effort, a row left behind is swept later. */
  async forget(client: pg.ClientBase): Promise<void> {
    await client.query(`DELETE FROM ${this.#table} WHERE writer = $1`, [this.writer]).catch(() => undefined);
  }
}

/**
 * A writer's row unused for this long (one day) is deleted at a store's
 * open: its writer crashed. Far longer than any group waits for its
 * verdict (the outage grace), which is added to it.
 */
export const STALE_MARKER_SECONDS = 86_400;

/** Deletes the rows of writers gone for `STALE_MARKER_SECONDS` plus `graceMs`. */
export async function sweepMarkers(client: pg.ClientBase, table: string, graceMs: number): Promise<void> {
  await client.query(`DELETE FROM ${table} WHERE written_at < now() - make_interval(secs => $1)`, [
    STALE_MARKER_SECONDS + Math.ceil(graceMs / 1000),
  ]);
}

/**
 * The status of transaction `xid` by PostgreSQL's commit log: "in progress",
 * "committed", "aborted", or null for one too old to be known. An id "in
 * the future" (22023) is one a crashed server handed out but never logged:
 * no transaction has it yet, so none is running with it.
 */
async function transactionStatus(client: pg.ClientBase, xid: string): Promise<string | null> {
  try {
    const { rows } = await client.query<{ status: string | null }>("SELECT pg_xact_status($1::xid8) AS status", [xid]);
    return rows[0]?.status ?? null;
  } catch (error) {
    if (isFutureTransaction(error)) return null;
    throw error;
  }
}

function isFutureTransaction(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === "22023" && error instanceof Error && / is in the future$/.test(error.message);
}

/** What became of a group statement of appends: its verdict, and when it committed, the runs that moved their stream. */
export interface AppendGroupOutcome {
  readonly verdict: Verdict;
  /** The runs (their index) that moved their stream; only meaningful when committed. */
  readonly moved: ReadonlySet<number>;
}

/** A stream as `counts` reads it after a lost answer. */
interface StreamNow {
  readonly count: bigint;
  readonly epoch: bigint;
  readonly direction: string;
  /** Whether the stream no longer takes appends: its input ended, or its output did. */
  readonly terminal: boolean;
}

/**
 * What became of a group statement of appends whose answer was lost, from
 * the streams now (`counts`: `stream_id`, `count`, `owner_epoch`,
 * `direction`, `terminal` of each stream of `$1`). One statement commits all
 * its runs or none, and only this writer appends to these streams, in order
 * (the rest of the queue waits). A run may not move its stream although the
 * statement committed: its stream's input or output had ended, the stream is
 * of the other direction, or it moved to another ownership epoch (another
 * node claimed the session). Such a run is no evidence either way, and it
 * cannot start moving later: a terminal stays, an epoch only grows. So:
 *
 * - a run at its start that could move now proves nothing committed (had it
 *   committed, it would have moved, and a count never goes back), whatever
 *   the other runs show;
 * - else a run at or past its end, at its own epoch, proves the statement
 *   committed: that run moved;
 * - every run at its start and none able to move: nothing moved either way,
 *   settled as committed with no run moved (each goes the careful way for
 *   its own outcome);
 * - any other count (between, or past the start at another epoch: another
 *   node may have appended in place of the lost run) cannot be told apart:
 *   unknown.
 *
 * No transaction id is involved, so a crash that hands ids out again cannot fool it.
 */
export async function appendsCommitted(
  client: pg.Client,
  counts: string,
  appends: readonly RunAppend[],
  runs: readonly [number, number][],
): Promise<AppendGroupOutcome> {
  const firsts = runs.map(([start]) => appends[start]!);
  const { rows } = await client.query<{ stream_id: string; count: string; owner_epoch: string; direction: string; terminal: boolean }>(
    counts,
    [firsts.map((append) => append.streamId)],
  );
  const now = new Map<string, StreamNow>(
    rows.map((row) => [
      row.stream_id,
      { count: BigInt(row.count), epoch: BigInt(row.owner_epoch), direction: row.direction, terminal: row.terminal },
    ]),
  );
  const moved = new Set<number>();
  let notCommitted = false;
  let unknown = false;
  for (const [index, [start, end]] of runs.entries()) {
    const first = firsts[index]!;
    const stream = now.get(first.streamId);
    const total = appends.slice(start, end).reduce((sum, append) => sum + append.itemCount, 0n);
    const ownEpoch = first.epoch === undefined || stream?.epoch === first.epoch;
    if (stream === undefined) unknown = true;
    else if (stream.count === first.sequence) {
      if (ownEpoch && stream.direction === first.log && !stream.terminal) notCommitted = true;
    } else if (stream.count >= first.sequence + total && ownEpoch) moved.add(index);
    else unknown = true;
  }
  if (notCommitted) return { verdict: "not-committed", moved: new Set() };
  if (unknown) return { verdict: "unknown", moved: new Set() };
  return { verdict: "committed", moved };
}

/** What `resolveLostGroup` needs of the writer. */
export interface LostGroupWriter {
  readonly grace: OutageGrace;
  /** Forgets the writer connection (ending it): the next use connects again. */
  dropWriter(): void;
  /** The writer connection, connecting if there is none. */
  writer(): Promise<pg.Client>;
}

/**
 * The group's connection was lost, or could not be made (`error`). Within
 * the outage grace: waits (backoff), then, when the group may have
 * committed (`committed` given), asks PostgreSQL whether it did, again
 * until it answers. `committed`: settle the group as committed; `again`:
 * write it again, before every later write; `failed`: the grace is spent,
 * or its outcome cannot be known. The connection is dropped either way.
 */
export async function resolveLostGroup(
  writer: LostGroupWriter,
  error: Error,
  committed: ((client: pg.Client) => Promise<Verdict>) | undefined,
): Promise<"committed" | "again" | "failed"> {
  writer.dropWriter();
  if (!isUnavailable(error)) return "failed";
  let failure: unknown = error;
  while (await writer.grace.retry(failure)) {
    if (committed === undefined) return "again";
    let verdict: Verdict;
    try {
      verdict = await committed(await writer.writer());
    } catch (next) {
      writer.dropWriter();
      if (!isUnavailable(next)) return "failed";
      failure = next;
      continue;
    }
    if (verdict === "pending") continue; // the old connection's transaction is still open: ask again
    if (verdict === "unknown") return "failed";
    if (verdict === "committed") {
      writer.grace.available();
      return "committed";
    }
    return "again";
  }
  return "failed";
}
