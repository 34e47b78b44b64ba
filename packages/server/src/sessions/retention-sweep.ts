/**
 * The node's retention upkeep: finished sessions past
 * `limits.sessionRetentionMs` are purged (tombstones past
 * `limits.tombstoneRetentionMs` too) at least once a minute, and the
 * per-principal counts of stored bytes (`limits.maxStoredBytesPerPrincipal`)
 * follow: a single node gives back what the purge deleted, a cluster node
 * reads the store's sums again, which also count what other nodes wrote.
 */
import type { Logger, ServerLimits } from "../options.js";
import type { SessionStore, StoredBytes } from "../store/session-store.js";

/** The per-principal counts of stored bytes, as the sweep corrects them (`StoredBytesTable`, admission/stored-bytes.ts, implements it). */
export interface StoredBytesCounts {
  /** Counts `totals` less: the bytes of sessions a purge deleted. */
  giveBack(totals: readonly StoredBytes[]): void;
  /** Replaces every count by the store's sums. */
  replace(totals: readonly StoredBytes[]): void;
}

export class RetentionSweep {
  readonly #store: SessionStore;
  readonly #clustered: boolean;
  readonly #limits: ServerLimits;
  readonly #storedBytes: StoredBytesCounts;
  readonly #logger: Logger;
  readonly #now: () => number;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    store: SessionStore,
    clustered: boolean,
    limits: ServerLimits,
    storedBytes: StoredBytesCounts,
    logger: Logger,
    now: () => number,
  ) {
    this.#store = store;
    this.#clustered = clustered;
    this.#limits = limits;
    this.#storedBytes = storedBytes;
    this.#logger = logger;
    this.#now = now;
  }

  /** Sweeps every `sessionRetentionMs`, at most a minute apart, until `stop`. */
  start(): void {
    const sweepEvery = Math.min(this.#limits.sessionRetentionMs, 60_000);
    this.#timer = setInterval(() => void this.sweep(), sweepEvery);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
  }

  async sweep(): Promise<void> {
    try {
      const now = this.#now();
      const finishedBefore = now - this.#limits.sessionRetentionMs;
      // One node: the bytes of what the purge deletes, given back after it (a cluster counts anew below).
      const purgeable = this.#clustered ? undefined : await this.#store.storedBytesByPrincipal?.(finishedBefore);
      await this.#store.purgeFinished(finishedBefore, now, now - this.#limits.tombstoneRetentionMs);
      if (purgeable !== undefined) this.#storedBytes.giveBack(purgeable);
    } catch (error) {
      this.#logger.error("retention sweep failed", { event: "retention.sweep-failed", error: String(error) });
    }
    // In a cluster the store's sums, after the purge, count what the other nodes wrote since the last sweep.
    if (this.#clustered) await this.countStoredBytes();
  }

  /**
   * Replaces the per-principal counts of stored bytes with the store's sums
   * (when the store has them). A store that cannot answer leaves the counts
   * as they are, to be read again at the next sweep.
   */
  async countStoredBytes(): Promise<void> {
    try {
      const totals = await this.#store.storedBytesByPrincipal?.();
      if (totals !== undefined) this.#storedBytes.replace(totals);
    } catch (error) {
      this.#logger.error("could not read the bytes each principal keeps in the store", {
        event: "stored-bytes.count-failed",
        error: String(error),
      });
    }
  }
}
