/**
 * The journal of replayable invocations and their run counts
 * (@golem-stream/server's docs/durable-execution.md): entries by position,
 * written only while the session runs and at the owner's epoch, and
 * idempotent, so a write retried after its COMMIT's answer was lost
 * recognises its own entry instead of failing the step.
 */
import type { JournalEntry, RecordedRun } from "@golem-stream/server/store";
import { checkEpoch } from "./fencing.js";
import type { StoreContext } from "./store-context.js";

/**
 * Inserts the entry if its position is free. Otherwise: refused for a stale epoch; done when
 * the position holds this very entry (the same name and outcome: an earlier write of it
 * committed); else refused, the position being another entry's or the session not running.
 */
export function appendJournal(store: StoreContext, entry: JournalEntry, epoch?: bigint): Promise<void> {
  const sql = store.sql;
  return store.write(async (tx) => {
    const added = await tx.query(sql.appendJournal, [entry.sessionId, entry.position, entry.name, entry.outcome, epoch ?? null]);
    if (added.rowCount === 1) return;
    await checkEpoch(tx, sql.sessionEpoch, entry.sessionId, epoch);
    const taken = (await tx.query<{ name: string; outcome: string }>(sql.journalEntry, [entry.sessionId, entry.position])).rows[0];
    if (taken !== undefined && taken.name === entry.name && taken.outcome === entry.outcome) return;
    throw new Error(taken === undefined ? "the session is not running" : "the journal position is already taken");
  });
}

export async function readJournal(store: StoreContext, sessionId: string): Promise<JournalEntry[]> {
  const rows = await store.read<{ position: number; name: string; outcome: string }>(store.sql.readJournal, [sessionId]);
  return rows.map((row) => ({ sessionId, position: row.position, name: row.name, outcome: row.outcome }));
}

/**
 * Counts one more run of a running session (2 on the first call), and the re-runs in a row that
 * found no more `progress` than the one before; an owner's only at its epoch. On a database whose
 * role could not add the progress columns, every re-run counts as one without progress.
 */
export function recordRun(store: StoreContext, sessionId: string, epoch?: bigint, progress?: bigint): Promise<RecordedRun> {
  const sql = store.sql;
  const withProgress = store.features.runProgress;
  return store.write(async (tx) => {
    const counted = withProgress
      ? await tx.query<{ runs: number; stalled: number }>(sql.recordRunWithProgress, [sessionId, epoch ?? null, progress ?? null])
      : await tx.query<{ runs: number; stalled?: undefined }>(sql.recordRun, [sessionId, epoch ?? null]);
    const row = counted.rows[0];
    if (row === undefined) {
      // No row: the session is not running, or the epoch is stale (refused).
      await checkEpoch(tx, sql.sessionEpoch, sessionId, epoch);
      throw new Error("the session is not running");
    }
    return { run: row.runs, withoutProgress: row.stalled ?? row.runs - 1 };
  });
}

/**
 * Marks a running session's run as stopped by a drain: its next re-run counts as one that found
 * progress. On a database whose role could not add the progress columns there is nothing to
 * mark (the re-run counts as any other); what the mark would refuse is refused all the same.
 */
export function recordHandOver(store: StoreContext, sessionId: string, epoch?: bigint): Promise<void> {
  const sql = store.sql;
  const statement = store.features.runProgress ? sql.recordHandOver : sql.runningAtEpoch;
  return store.write(async (tx) => {
    const marked = await tx.query(statement, [sessionId, epoch ?? null]);
    if (marked.rowCount === 1) return;
    await checkEpoch(tx, sql.sessionEpoch, sessionId, epoch);
    throw new Error("the session is not running");
  });
}
