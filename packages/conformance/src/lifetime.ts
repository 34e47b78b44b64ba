/**
 * A check's resources live as long as the check. The pool races each check against its deadline,
 * and a race does not stop the loser: a check cut off mid-handshake keeps running and would open
 * its socket after the suite had cleaned up, leaving the process (and the server's session) open.
 * So every socket, probe, child process and sleep a check starts listens to one AbortSignal that
 * fires when the check ends, whichever way, and releases itself at that moment.
 */
import { setTimeout as delay } from "node:timers/promises";

/** Why a resource was released: the check it belonged to ended (its deadline passed, or it returned). */
export class CheckEnded extends Error {
  constructor() {
    super("the check has ended: what it was still doing was abandoned");
  }
}

/**
 * Calls `release` when `signal` aborts, at once if it already has. Returns the function that stops
 * listening: call it once the resource is gone, so a long-lived signal does not collect listeners.
 */
export function releaseOnAbort(signal: AbortSignal | undefined, release: () => void): () => void {
  if (signal === undefined) return () => undefined;
  if (signal.aborted) {
    release();
    return () => undefined;
  }
  signal.addEventListener("abort", release, { once: true });
  return () => signal.removeEventListener("abort", release);
}

/** Waits `ms`, or rejects as soon as `signal` aborts (the timer goes with it). */
export async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  await delay(ms, undefined, signal === undefined ? {} : { signal });
}

/** An AbortController whose abort reason is `CheckEnded`: one per check. */
export class CheckLifetime {
  readonly #controller = new AbortController();

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Releases everything bound to the signal; later resources are released as soon as they are bound. */
  end(): void {
    if (!this.#controller.signal.aborted) this.#controller.abort(new CheckEnded());
  }
}
