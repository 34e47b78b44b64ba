/**
 * The Web Locks API in memory, for the page's modules in happy-dom (which
 * has none): locks by name, each request granted once the ones before it on
 * that name are released (every lock exclusive: the page's shared ones never
 * wait on each other in these tests), with `query()` as the browser answers.
 */
export class FakeLocks {
  /** Per name: the last request's end (requests on a name run one after another). */
  readonly #tails = new Map<string, Promise<void>>();
  /** Per name: requests not yet released (the first holds the lock, the rest wait). */
  readonly #open = new Map<string, number>();

  request(name: string, options: { mode?: string } | (() => Promise<unknown>), maybeCallback?: () => Promise<unknown>): Promise<unknown> {
    const callback = typeof options === "function" ? options : maybeCallback!;
    this.#open.set(name, (this.#open.get(name) ?? 0) + 1);
    const running = (this.#tails.get(name) ?? Promise.resolve()).then(callback);
    const done = running.then(
      () => this.#close(name),
      () => this.#close(name),
    );
    this.#tails.set(name, done);
    return running;
  }

  async query(): Promise<{ held: { name: string }[]; pending: { name: string }[] }> {
    const open = [...this.#open];
    return {
      held: open.map(([name]) => ({ name })),
      pending: open.flatMap(([name, count]) => Array.from({ length: count - 1 }, () => ({ name }))),
    };
  }

  /** Resolves once every request made so far on `name` has been released. */
  async released(name: string): Promise<void> {
    await this.#tails.get(name);
  }

  #close(name: string): void {
    const count = (this.#open.get(name) ?? 1) - 1;
    if (count === 0) this.#open.delete(name);
    else this.#open.set(name, count);
  }
}

/** Gives happy-dom's `navigator` these locks (or none); returns them. */
export function installLocks<T extends FakeLocks | undefined>(locks: T): T {
  Object.defineProperty(navigator, "locks", { value: locks, configurable: true });
  return locks;
}
