/**
 * Whether this node may claim other nodes' sessions (docs/cluster.md,
 * *Leases across a store outage*).
 *
 * A lease lapses by the database's clock. When the database was unavailable
 * for longer than a lease, every node's lease lapsed together, though no node
 * stopped: the first node to reach the database again would find the others'
 * leases expired and claim (fail) every invocation they run. So a node claims
 * only after it has itself seen the store available, through its own
 * heartbeats, for a full lease without a break. Every other live node then had
 * the same lease's time to renew its own, three heartbeats' worth; a lease
 * still expired after that belongs to a node that is really gone (or cut off
 * from the database for longer than a lease, which is what a lease is for).
 *
 * A break is a heartbeat that failed, or two successful ones answered more
 * than two heartbeat periods apart (a connection that hung through an outage,
 * a process that was paused): either may hide an outage this node did not see
 * fail. The node starting counts as a break: a node that just joined waits a
 * lease before its first claim.
 *
 * Times are milliseconds of a monotonic clock, given by the caller.
 */
export class StoreAvailability {
  readonly #leaseTtlMs: number;
  readonly #maxGapMs: number;
  /** When the unbroken run of successful heartbeats started (its first answer). */
  #since: number | undefined;
  /** When the last successful heartbeat was answered. */
  #last: number | undefined;

  constructor(leaseTtlMs: number, heartbeatPeriodMs: number) {
    this.#leaseTtlMs = leaseTtlMs;
    this.#maxGapMs = 2 * heartbeatPeriodMs;
  }

  /** A heartbeat was answered (renewed the lease) at `at`. */
  succeeded(at: number): void {
    if (this.#since === undefined || this.#last === undefined || at - this.#last > this.#maxGapMs) this.#since = at;
    this.#last = Math.max(at, this.#last ?? at);
  }

  /** A heartbeat failed: the store may have been unavailable to every node. */
  failed(): void {
    this.#since = undefined;
    this.#last = undefined;
  }

  /** Whether at `now` this node has seen the store available for a full lease, and heard from it lately. */
  mayClaim(now: number): boolean {
    if (this.#since === undefined || this.#last === undefined) return false;
    return now - this.#since >= this.#leaseTtlMs && now - this.#last <= this.#maxGapMs;
  }
}
