/**
 * A count of things under way (producers running, events whose commit has
 * not settled), and who waits for it to fall to zero: how the output side
 * knows when every producer is done (output-producers.ts). Its own file
 * because it is a small tool with no knowledge of streams.
 */
export /** A count of things under way, and who waits for it to fall to zero. */
class Tally {
  #count = 0;
  readonly #waiters: (() => void)[] = [];

  get count(): number {
    return this.#count;
  }

  add(): void {
    this.#count++;
  }

  remove(): void {
    this.#count--;
    if (this.#count === 0 && this.#waiters.length > 0) for (const waiter of this.#waiters.splice(0)) waiter();
  }

  /** Resolves when the count is (or next falls to) zero. */
  zero(): Promise<void> {
    if (this.#count === 0) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }
}
