/**
 * Promises that a test's recorder resolves once a condition on what it recorded holds: the
 * recorder calls `check()` after each record, and waits never poll.
 */
export class Conditions {
  readonly #waiters: { readonly done: () => boolean; readonly resolve: () => void }[] = [];

  /** Resolves once `done()` holds: at once if it holds now, otherwise at the `check()` that finds it. */
  until(done: () => boolean): Promise<void> {
    if (done()) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ done, resolve }));
  }

  /** Resolves every wait whose condition now holds. */
  check(): void {
    for (const waiter of this.#waiters.filter((w) => w.done())) {
      this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  }
}
