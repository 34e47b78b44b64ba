/**
 * The server's backpressure pauses as events a test can wait for.
 */
import type { BackpressureReason, PartialObserver } from "../observability/server-observer.js";
import { Conditions } from "./conditions.js";

/**
 * Records the server's backpressure pauses in order (pass `observer` in the
 * `observers` of one or more servers): a test waits for "the producer paused" or "the
 * queue is full" as an event, instead of polling a counter until it looks
 * quiet.
 */
export class Pauses {
  /** Every pause since `reset`, in order. */
  readonly #log: BackpressureReason[] = [];
  get log(): readonly BackpressureReason[] {
    return this.#log;
  }
  readonly #conditions = new Conditions();
  readonly observer: PartialObserver = {
    backpressure: (reason) => {
      this.#log.push(reason);
      this.#conditions.check();
    },
  };

  count(reason: BackpressureReason): number {
    return this.#log.filter((r) => r === reason).length;
  }

  /** Resolves once the server has paused for `reason` since `reset` (at once if it has). */
  reached(reason: BackpressureReason): Promise<void> {
    return this.#until(() => this.#log.includes(reason));
  }

  /** Resolves once the server has paused for `reason` at least `times` times since `reset` (e.g. once per session). */
  reachedTimes(reason: BackpressureReason, times: number): Promise<void> {
    return this.#until(() => this.count(reason) >= times);
  }

  /** Resolves once the server has paused for `then` after its first pause for `first` since `reset`. */
  reachedAfter(first: BackpressureReason, then: BackpressureReason): Promise<void> {
    return this.#until(() => {
      const at = this.#log.indexOf(first);
      return at >= 0 && this.#log.indexOf(then, at + 1) > at;
    });
  }

  reset(): void {
    this.#log.length = 0;
  }

  #until(done: () => boolean): Promise<void> {
    return this.#conditions.until(done);
  }
}
