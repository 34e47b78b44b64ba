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

/** Counts calls (a store method a scenario wraps); `after(n)` resolves once n more have been made. */
export class CallCount {
  #count = 0;
  readonly #conditions = new Conditions();

  get count(): number {
    return this.#count;
  }

  made(): void {
    this.#count++;
    this.#conditions.check();
  }

  after(calls: number): Promise<void> {
    const at = this.#count + calls;
    return this.#conditions.until(() => this.#count >= at);
  }
}
