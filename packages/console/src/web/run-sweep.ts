/**
 * Which stored runs no open tab will resume (orphans), decided at every
 * page's start. IndexedDB is shared by every tab of the origin while the
 * run a tab shows is named in that tab's sessionStorage, so a run whose tab
 * was closed stays in IndexedDB with no page left to remove it: the next
 * page to start does.
 *
 * A record is kept while a tab may still need it:
 * - it is this tab's own run (the reload about to resume it);
 * - another open tab holds its Web Lock (run-lock.ts): that tab shows it;
 * - it was written within `graceMs`: a tab reloading right now has let go of
 *   its lock and not yet taken it again.
 *
 * Otherwise it is swept when its session is
 * - finished: it has an outcome (its tab went before it could remove it);
 * - unknown: no session was ever accepted for it, or the record is not one
 *   this page can read (another version's);
 * - expired: not written for `retentionMs`, after which the server answers
 *   `session-expired` anyway;
 * - abandoned: where the browser has Web Locks (secure contexts: https and
 *   loopback), no tab holds it.
 * Without Web Locks nobody can tell an open tab's quiet run from an
 * abandoned one: those are kept until they expire.
 */
import { heldRuns } from "./run-lock.js";
import { deleteRuns, listRuns } from "./run-store.js";

/** Defaults of `SweepPolicy`. */
export const SWEEP_DEFAULTS = {
  /** 60 s: far longer than a reload takes, shorter than anyone waits to come back to a closed tab. */
  graceMs: 60_000,
  /** 24 h: the server's default `sessionRetentionMs`. */
  retentionMs: 24 * 60 * 60 * 1000,
} as const;

export interface SweepPolicy {
  /** `Date.now()` of the sweep. */
  readonly now: number;
  /** The run this tab shows (its sessionStorage), kept whatever it is. */
  readonly current: string | undefined;
  /** Runs whose lock an open tab holds or awaits; `undefined`: this browser cannot tell. */
  readonly held: ReadonlySet<string> | undefined;
  readonly graceMs?: number;
  readonly retentionMs?: number;
}

export type SweepReason = "finished" | "unknown" | "expired" | "abandoned";

/** The stored records to remove, each with why. `records` are as stored: anything at all. */
export function orphans(records: readonly unknown[], policy: SweepPolicy): { id: IDBValidKey; reason: SweepReason }[] {
  const graceMs = policy.graceMs ?? SWEEP_DEFAULTS.graceMs;
  const retentionMs = policy.retentionMs ?? SWEEP_DEFAULTS.retentionMs;
  const swept: { id: IDBValidKey; reason: SweepReason }[] = [];
  for (const record of records) {
    if (typeof record !== "object" || record === null || !("id" in record)) continue; // not keyed by `id`: not in the store
    const id = record.id as IDBValidKey;
    if (id === policy.current || (typeof id === "string" && policy.held?.has(id) === true)) continue;
    const touchedAt = "touchedAt" in record && typeof record.touchedAt === "number" ? record.touchedAt : 0;
    const age = policy.now - touchedAt;
    if (age < graceMs) continue;
    const reason = reasonFor(record, age, retentionMs, policy.held !== undefined);
    if (reason !== undefined) swept.push({ id, reason });
  }
  return swept;
}

function reasonFor(record: object, age: number, retentionMs: number, locksKnown: boolean): SweepReason | undefined {
  if (typeof (record as { id: unknown }).id !== "string" || !("streams" in record) || !("cursors" in record)) return "unknown";
  if ("outcome" in record && record.outcome !== undefined) return "finished";
  const state = "state" in record ? record.state : undefined;
  if (typeof state !== "object" || state === null) return "unknown";
  if (age >= retentionMs) return "expired";
  return locksKnown ? "abandoned" : undefined;
}

/** Removes the orphans from IndexedDB (one transaction), as of `now`; returns what was swept. */
export async function sweepOrphans(current: string | undefined, now = Date.now()): Promise<{ id: IDBValidKey; reason: SweepReason }[]> {
  const [records, held] = await Promise.all([listRuns(), heldRuns()]);
  const swept = orphans(records, { now, current, held });
  await deleteRuns(swept.map((orphan) => orphan.id));
  return swept;
}
