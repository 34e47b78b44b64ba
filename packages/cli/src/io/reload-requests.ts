/**
 * SIGUSR2 for `serve` (`CliIo.reload`, commands/serve-reload.ts), listened
 * to from the executable's first line (bin.ts), long before `serve` has
 * loaded and can listen for it itself. A request made before anything
 * listens is kept, and the first listener gets it: a signal sent while
 * `serve` is still loading is carried out once it listens, not lost.
 *
 * Imports nothing: bin.ts loads it before any other module of the CLI.
 */
export class ReloadRequests extends EventTarget {
  /** Whether a `reload` listener was ever added. */
  #heard = false;
  /** A request made before then. */
  #kept = false;

  /** A reload was asked for (SIGUSR2): `reload` is dispatched, or kept for the first listener. */
  request(): void {
    if (this.#heard) this.dispatchEvent(new Event("reload"));
    else this.#kept = true;
  }

  override addEventListener(...args: Parameters<EventTarget["addEventListener"]>): void {
    super.addEventListener(...args);
    const [type, listener] = args;
    if (type !== "reload" || listener === null || this.#heard) return;
    this.#heard = true;
    if (!this.#kept) return;
    this.#kept = false;
    this.dispatchEvent(new Event("reload"));
  }
}
