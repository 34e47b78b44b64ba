/**
 * The payload bytes each principal keeps in the store (input chunks and
 * output items of sessions within retention), against
 * `limits.maxStoredBytesPerPrincipal`, so one token holder cannot fill the
 * disk every other caller's sessions are written to.
 *
 * The store is the truth: the table is replaced by the store's own sums
 * (`SessionStore.storedBytesByPrincipal`) when the server starts and after
 * every retention sweep, which is how purged sessions give their bytes back
 * and, in a cluster, how each node learns what the others wrote. In between
 * each node adds what it hands to the store itself. So in a cluster a
 * principal writing through several nodes at once may go past the bound by
 * what the other nodes wrote since the last sweep (at most a minute's
 * worth); on one node the bound is exact, up to the writes in flight while
 * the sums are read (docs/protocol/server.md, "Per-principal bounds").
 *
 * Only principals with bytes are remembered: the table is bounded by the
 * principals that have sessions in the store.
 */
import { CountLimitError } from "../count-limit-error.js";
import type { StoredBytes } from "../store/session-store.js";

/** Whose bytes: the session's account and principal. */
export interface BytesOwner {
  readonly account: string;
  readonly principal: string;
}

/**
 * A write that would take its principal past `limits.maxStoredBytesPerPrincipal`:
 * public code `limit-exceeded` (not retryable), and a refused start closes
 * 1002 like every refusal whose message is not itself too large.
 */
export class StoredBytesExceeded extends CountLimitError {
  constructor(limit: number) {
    super(`this caller may keep at most ${limit} bytes in the store, and this would go past them; finished sessions give theirs back when their retention ends`);
  }
}

export class StoredBytesTable {
  readonly #limit: number;
  readonly #used = new Map<string, number>();
  readonly #reached: () => void;

  /** `reached` is told of every refusal (metrics and logs). */
  constructor(limit: number, reached: () => void) {
    this.#limit = limit;
    this.#reached = reached;
  }

  /** Bytes `owner` keeps, as this node knows. */
  usedBy(owner: BytesOwner): number {
    return this.#used.get(keyOf(owner)) ?? 0;
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
    if (bytes === 0) return undefined;
    const key = keyOf(owner);
    const used = this.#used.get(key) ?? 0;
    if (used + bytes > this.#limit) {
      this.#reached();
      return new StoredBytesExceeded(this.#limit);
    }
    this.#used.set(key, used + bytes);
    return undefined;
  }

  /** Replaces every count by the store's sums. */
  replace(totals: readonly StoredBytes[]): void {
    this.#used.clear();
    for (const total of totals) if (total.bytes > 0) this.#used.set(keyOf(total), total.bytes);
  }
}

/** Unambiguous: JSON escapes whatever the names hold. */
function keyOf(owner: BytesOwner): string {
  return JSON.stringify([owner.account, owner.principal]);
}
