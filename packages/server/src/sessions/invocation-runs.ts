/**
 * The invocations this process runs, and the starts being decided: what a
 * drain waits for before it fails what is left (node-lifecycle.ts). A new
 * invocation and a re-run after owner loss are launched the same way here,
 * so both are counted (`invocationsRunning`), both hold one of their
 * principal's running slots until they end, and both leave memory when finished.
 */
import type { LiveSession } from "../invocation/live-session.js";
import type { ServerObserver } from "../observability/server-observer.js";

/**
 * One of a principal's running slots (`limits.maxRunningSessionsPerPrincipal`), held while its
 * invocation runs; `PrincipalSlots` (admission/principal-slots.ts, above) hands them out.
 */
export interface RunningSlot {
  /** Idempotent. */
  release(): void;
}

export class InvocationRuns {
  readonly #observer: ServerObserver;
  readonly #finished: (live: LiveSession) => void;
  /** Invocations this process runs, until they finish. */
  readonly #runs = new Set<Promise<void>>();
  /** Starts being decided or opened (see `trackStart`). */
  readonly #starting = new Set<Promise<void>>();

  /** `finished` is told of every session whose run ended (it may leave memory). */
  constructor(observer: ServerObserver, finished: (live: LiveSession) => void) {
    this.#observer = observer;
    this.#finished = finished;
  }

  /** Runs `run` for `live` and keeps it until it ends; `slot` (its principal's running slot) is released then. */
  launch(live: LiveSession, run: () => Promise<void>, slot: RunningSlot): void {
    this.#observer.invocationsRunning(1);
    const running = run().finally(() => {
      slot.release();
      this.#observer.invocationsRunning(-1);
      this.#runs.delete(running);
      this.#finished(live);
    });
    this.#runs.add(running);
  }

  /**
   * A start in flight: a drain fails what this node owns, so it first waits
   * for these, whose sessions may be committed (owned here) before they run.
   */
  trackStart(starting: Promise<unknown>): void {
    const settled = starting.then(
      () => undefined,
      () => undefined,
    );
    this.#starting.add(settled);
    void settled.then(() => this.#starting.delete(settled));
  }

  /** Resolves when the starts in flight now have been decided. */
  async startsDecided(): Promise<void> {
    await Promise.all([...this.#starting]);
  }

  /** Resolves when the invocations running now have ended. */
  async ended(): Promise<void> {
    await Promise.all([...this.#runs]);
  }
}
