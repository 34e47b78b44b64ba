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

export function purgeFinished(store: StoreContext, finishedBefore: number, now: number, tombstonesBefore: number): Promise<number> {
  if ([finishedBefore, now, tombstonesBefore].some(Number.isNaN) || !Number.isFinite(now)) {
    return Promise.reject(new RangeError(`purgeFinished needs times in milliseconds, got ${finishedBefore}, ${now}, ${tombstonesBefore}`));
  }
  const sql = store.sql;
  return store.write(async (tx) => {
    // Old tombstones go first, so the ones this purge leaves are kept whatever `now` is.
    await tx.query(sql.dropTombstones, [before(tombstonesBefore)]);
    const purged = await tx.query<{ purged: string }>(sql.purge, [before(finishedBefore), Math.round(now)]);
    return Number(purged.rows[0]?.purged ?? 0);
  });
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
