/**
 * The node's byte budget (`limits.maxQueuedBytesPerNode`): one count, across
 * every session and connection of a server, of the bytes they hold in
 * memory between the socket and their consumer — received messages not yet
 * decoded, and everything the sessions' byte permits hold in memory (input
 * queued or uncommitted; not output recorded and unsent, which is in the
 * store: see `BytePermits.chargeUncounted`).
 *
 * Nothing ever waits on it and nothing fails on it: holders only *charge*
 * and *release* it, and while it is spent every connection stops reading its
 * socket (transport/connection.ts), so clients are held back by TCP, as a
 * full inbound queue holds back one client. Waiting on it per message would
 * let one session's waiting message block the rest of its connection's
 * stream traffic behind another session's; pausing the sockets leaves the
 * sessions' own rules (permits, order) exactly as they were.
 */
export class NodeBudget {
  readonly capacity: number;
  #held = 0;
  #peak = 0;
  #onRelief: (() => void)[] = [];

  constructor(capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity <= 0) throw new RangeError("node byte budget must be a positive safe integer");
    this.capacity = capacity;
  }

  get held(): number {
    return this.#held;
  }

  /** Whether the budget is spent: connections stop reading until it is not. */
  get spent(): boolean {
    return this.#held >= this.capacity;
  }

  charge(bytes: number): void {
    this.#held += bytes;
    if (this.#held > this.#peak) this.#peak = this.#held;
  }

  /** The highest `held` since the previous call (or since the start); the next period starts from `held` now. */
  takePeak(): number {
    const peak = this.#peak;
    this.#peak = this.#held;
    return peak;
  }

  release(bytes: number): void {
    if (bytes > this.#held) throw new RangeError("released more of the node budget than was held");
    const wasSpent = this.spent;
    this.#held -= bytes;
    if (wasSpent && !this.spent) for (const listener of this.#onRelief.splice(0)) listener();
  }

  /** Calls `listener` once, the next time the budget stops being spent. */
  onceRelieved(listener: () => void): void {
    this.#onRelief.push(listener);
  }
}
