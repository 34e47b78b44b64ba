/**
 * Retention: purging finished sessions (their attempt ids and idempotency
 * scopes kept as tombstones, old tombstones dropped) and the payload bytes
 * each principal keeps, in all or in the sessions a purge is about to take.
 */
import type { StoredBytes } from "@golem-stream/server/store";
import type { StoreContext } from "./store-context.js";

/** Payload bytes by principal (`PostgresSessionStore.storedBytesByPrincipal` says how they are summed). */
export async function storedBytesByPrincipal(store: StoreContext, finishedBefore?: number): Promise<StoredBytes[]> {
  const rows = await store.read<{ account: string; principal: string; bytes: string }>(
    finishedBefore === undefined ? store.sql.storedBytes : store.sql.purgeableBytes,
    finishedBefore === undefined ? [] : [before(finishedBefore)],
  );
  return rows.map((row) => ({ account: row.account, principal: row.principal, bytes: Number(row.bytes) }));
}

/**
 * A purge is a run of short writes, not one statement: a backlog (a million rows of logs) deleted
 * at once outlasts the statement timeout, is cancelled and rolled back, so nothing was ever
 * purged, and it held the node's one writer, every commit behind it, for the whole timeout. Each
 * batch commits on its own, with the writes queued meanwhile: at most `PURGE_BATCH_SESSIONS`
 * sessions, and no more once their logs hold `PURGE_BATCH_ITEMS` items (an item is at most one
 * row; measured, a million rows go in about two seconds), at least one session (whose logs go in
 * one statement, however long).
 */
export const PURGE_BATCH_SESSIONS = 200;
export const PURGE_BATCH_ITEMS = 100_000;
/** Tombstones dropped by one write (a row each, no cascade). */
export const DROP_BATCH_TOMBSTONES = 5_000;

/**
 * Purges in batches until none is left finished before `finishedBefore`; resolves to how many it
 * purged. Stopped by a failure, the batches before it stay purged.
 */
export async function purgeFinished(store: StoreContext, finishedBefore: number, now: number, tombstonesBefore: number): Promise<number> {
  if ([finishedBefore, now, tombstonesBefore].some(Number.isNaN) || !Number.isFinite(now)) {
    throw new RangeError(`purgeFinished needs times in milliseconds, got ${finishedBefore}, ${now}, ${tombstonesBefore}`);
  }
  const sql = store.sql;
  // Old tombstones go first, so the ones this purge leaves are kept whatever `now` is.
  for (;;) {
    const dropped = await store.write(
      async (tx) => (await tx.query(sql.dropTombstones, [before(tombstonesBefore), DROP_BATCH_TOMBSTONES])).rowCount,
    );
    // Fewer than a batch: none is left (another node's purge may have taken some of this one's).
    if ((dropped ?? 0) < DROP_BATCH_TOMBSTONES) break;
  }
  let total = 0;
  for (;;) {
    const { purged, more } = await store.write(async (tx) => {
      const { rows } = await tx.query<{ purged: string; more: boolean }>(sql.purge, [
        before(finishedBefore),
        Math.round(now),
        PURGE_BATCH_SESSIONS,
        PURGE_BATCH_ITEMS,
      ]);
      return { purged: Number(rows[0]?.purged ?? 0), more: rows[0]?.more === true };
    });
    total += purged;
    // None purged although some were left: another node's purge took them; its sweep goes on.
    if (!more || purged === 0) return total;
  }
}

/**
 * A "before" bound in whole milliseconds for a bigint column: `x < t` is
 * `x < ceil(t)` for integers; an infinite retention (-Infinity) purges nothing.
 */
function before(time: number): number {
  if (time === Number.NEGATIVE_INFINITY) return Number.MIN_SAFE_INTEGER;
  if (time === Number.POSITIVE_INFINITY) return Number.MAX_SAFE_INTEGER;
  return Math.min(Math.max(Math.ceil(time), Number.MIN_SAFE_INTEGER), Number.MAX_SAFE_INTEGER);
}
