/**
 * The events of one output stream that were committed while its pump was
 * live, kept so the pump can send them without reading them back from the
 * store. A cache, never a source of truth: it holds only events the store
 * has committed, exactly as they were handed to it, in one contiguous run
 * of the log; whatever it does not hold the pump reads from the store. For
 * small items this skips a store query per commit (about a tenth of the
 * server's time per `reverse` item: docs/performance.md).
 */
import type { OutputEvent } from "../store/session-store.js";

/**
 * Events one tail holds at most: the default window of unsent events per
 * stream (`limits.maxQueuedEntriesPerStream`), since a producer commits
 * whole groups of items at once and the pump takes them as they come.
 */
export const TAIL_EVENTS = 256;

/** Bytes the tails of one attachment hold at most, together. */
export const TAIL_BYTES_PER_ATTACHMENT = 256 * 1024;

/** The shared byte allowance of one attachment's tails. */
export class TailAllowance {
  #free: number;
  constructor(bytes: number = TAIL_BYTES_PER_ATTACHMENT) {
    this.#free = bytes;
  }
  take(bytes: number): boolean {
    if (bytes > this.#free) return false;
    this.#free -= bytes;
    return true;
  }
  give(bytes: number): void {
    this.#free += bytes;
  }
}

const sizeOf = (event: OutputEvent): number => (event.event === "item" ? event.data.length : 0);
const endOf = (event: OutputEvent): bigint => event.sequence + (event.event === "item" ? event.itemCount : 1n);

export class CommittedTail {
  readonly #allowance: TailAllowance;
  #events: OutputEvent[] = [];

  constructor(allowance: TailAllowance) {
    this.#allowance = allowance;
  }

  /**
   * Offers an event the store has just committed. Kept only if it continues
   * the run already held (or starts one) and fits the bounds; an event that
   * does not continue the run replaces it, and one that does not fit empties
   * it (a gap would make the run lie about what follows it).
   */
  offer(event: OutputEvent, from: bigint): void {
    const last = this.#events.at(-1);
    if (last !== undefined && endOf(last) !== event.sequence) this.clear();
    if (endOf(event) <= from) return;
    if (this.#events.length >= TAIL_EVENTS || !this.#allowance.take(sizeOf(event))) {
      this.clear();
      return;
    }
    this.#events.push(event);
  }

  /**
   * The held events from `from` on, up to `limit`, taken out of the tail;
   * undefined when the tail does not start at `from` (the pump reads from
   * the store). Events before `from` were sent and are dropped.
   */
  take(from: bigint, limit: number): OutputEvent[] | undefined {
    let sent = 0;
    while (sent < this.#events.length && endOf(this.#events[sent] as OutputEvent) <= from) sent++;
    if (sent > 0) this.#drop(sent);
    if (this.#events[0]?.sequence !== from) return undefined;
    const taken = this.#events.slice(0, limit);
    this.#drop(taken.length);
    return taken;
  }

  get size(): number {
    return this.#events.length;
  }

  clear(): void {
    this.#drop(this.#events.length);
  }

  #drop(count: number): void {
    for (let i = 0; i < count; i++) this.#allowance.give(sizeOf(this.#events[i] as OutputEvent));
    this.#events = count === this.#events.length ? [] : this.#events.slice(count);
  }
}
