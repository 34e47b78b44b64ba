/**
 * The bytes each principal keeps in the store (input chunks and output
 * items of sessions within retention, and the sessions' own records and
 * attempts: store/record-bytes.ts), against
 * `limits.maxStoredBytesPerPrincipal`, so one token holder cannot fill the
 * disk every other caller's sessions are written to.
 *
 * The store is the truth: the table is set to the store's own sums
 * (`SessionStore.storedBytesByPrincipal`) when the server starts; then the
 * server adds what it hands to the store itself, and before each retention
 * sweep reads what the sessions it purges hold, to give that back after the
 * purge. One node alone writes its store, so there that is exact (up to the
 * writes in flight while the sums are read at start). In a cluster each
 * node sets every count to the store's sums again after each sweep instead,
 * which is how it learns what the others wrote: a principal writing through
 * several nodes at once may go past the bound by what the others wrote
 * since the last sweep (docs/protocol/server.md, "Per-principal bounds").
 * A full sum reads both logs whole, which is why one node does it once.
 *
 * Only principals with bytes are remembered: the table is bounded by the
 * principals that have sessions in the store.
 */
import { StoredBytesExceeded } from "../stored-bytes-exceeded.js";
import type { StoredBytes } from "../store/session-store.js";
import type { StoredBytesCharge } from "../invocation/session-deps.js";
import type { StoredBytesCounts } from "../sessions/retention-sweep.js";

/** Whose bytes: the session's account and principal. */
export interface BytesOwner {
  readonly account: string;
  readonly principal: string;
}

export class StoredBytesTable implements StoredBytesCharge, StoredBytesCounts {
  readonly #limit: number;
  readonly #used = new Map<string, number>();
  readonly #reached: () => void;
  /**
   * Each owner object's key, made once: a live session charges with the same
   * owner for every input chunk and output item (twice per `reverse` item),
   * and serialising the names each time was about 1 µs per round trip.
   * Weak, so an ended session's owner takes its key with it.
   */
  readonly #keys = new WeakMap<BytesOwner, string>();

  /** `reached` is told of every refusal (metrics and logs). */
  constructor(limit: number, reached: () => void) {
    this.#limit = limit;
    this.#reached = reached;
  }

  /** Bytes `owner` keeps, as this node knows. */
  usedBy(owner: BytesOwner): number {
    return this.#used.get(this.#keyOf(owner)) ?? 0;
  }

  /** Throws `limit-exceeded` when `owner` has no room left (a new start: it would be refused its first item). */
  checkRoom(owner: BytesOwner): void {
    if (this.usedBy(owner) < this.#limit) return;
    this.#reached();
    throw new StoredBytesExceeded(this.#limit);
  }

  /**
   * Counts `bytes` more for `owner` and returns undefined, or, when they
   * would take it past the bound, counts nothing and returns the refusal.
   * Called synchronously just before the store is handed the write.
   */
  charge(owner: BytesOwner, bytes: number): StoredBytesExceeded | undefined {
    return this.#chargeUpTo(owner, bytes, this.#limit);
  }

  /**
   * `charge` for the attempt record of a resume or takeover, which may go
   * past the bound by `attemptHeadroom`: a principal at its bound can still
   * reattach to its sessions (read a finished one's result, feed one that
   * waits for input) while retention has not given bytes back, and a loop
   * of takeovers still meets a bound.
   */
  chargeAttempt(owner: BytesOwner, bytes: number): StoredBytesExceeded | undefined {
    return this.#chargeUpTo(owner, bytes, this.#limit + attemptHeadroom(this.#limit));
  }

  /** Counts `bytes` more for `owner` unless that takes it past `ceiling`; the refusal (of the bound) then. */
  #chargeUpTo(owner: BytesOwner, bytes: number, ceiling: number): StoredBytesExceeded | undefined {
    if (bytes === 0) return undefined;
    const key = this.#keyOf(owner);
    const used = this.#used.get(key) ?? 0;
    if (used + bytes > ceiling) {
      this.#reached();
      return new StoredBytesExceeded(this.#limit);
    }
    this.#used.set(key, used + bytes);
    return undefined;
  }

  /** `keyOf(owner)`, made once per owner object (owners are never changed: their fields are the session's record). */
  #keyOf(owner: BytesOwner): string {
    let key = this.#keys.get(owner);
    if (key === undefined) {
      key = keyOf(owner);
      this.#keys.set(owner, key);
    }
    return key;
  }

  /** Counts `bytes` less for `owner`: what `charge` counted for a write the store did not make. */
  refund(owner: BytesOwner, bytes: number): void {
    this.giveBack([{ account: owner.account, principal: owner.principal, bytes }]);
  }

  /** Counts `totals` less: the bytes of sessions a purge deleted. A count never goes below 0. */
  giveBack(totals: readonly StoredBytes[]): void {
    for (const total of totals) {
      const key = keyOf(total);
      const left = (this.#used.get(key) ?? 0) - total.bytes;
      if (left > 0) this.#used.set(key, left);
      else this.#used.delete(key);
    }
  }

  /** Replaces every count by the store's sums. */
  replace(totals: readonly StoredBytes[]): void {
    this.#used.clear();
    for (const total of totals) if (total.bytes > 0) this.#used.set(keyOf(total), total.bytes);
  }
}

/** How far attempt records may take a principal past its bound: a sixteenth of it, at most 1 MiB (4096 attempt records). */
export function attemptHeadroom(limit: number): number {
  return Math.min(1024 * 1024, Math.floor(limit / 16));
}

/** Unambiguous: JSON escapes whatever the names hold. */
function keyOf(owner: BytesOwner): string {
  return JSON.stringify([owner.account, owner.principal]);
}
