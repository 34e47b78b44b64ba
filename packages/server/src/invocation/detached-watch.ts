/**
 * Giving up a running session nobody attaches to (`limits.detachedSessionTimeoutMs`,
 * docs/protocol/server.md, *Failures and closes*). Two sides, one per role:
 *
 * - The owner (the node that runs the invocation) waits while it knows of no
 *   attachment: from a local detach, or from the last sign that another node
 *   still serves one. When the wait ends, `giveUp` runs.
 * - A node serving an attachment to a session another node runs says so to
 *   the owner every quarter of the timeout (`heartbeat`, the cluster feed's
 *   `alive` change), so that an attachment with nothing flowing is not
 *   mistaken for none. A node that dies stops saying it, and the owner's wait
 *   ends as for a client that left.
 *
 * Every node of a cluster must use the same timeout: a serving node with a
 * longer one says it too rarely for an owner with a shorter one.
 */

import type { TimerHandle, Timers } from "../timers.js";

/** setTimeout's largest delay: a longer timeout means never. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export class DetachedWatch {
  readonly #timeoutMs: number;
  readonly #giveUp: () => void;
  readonly #heartbeat: () => void;
  readonly #timers: Timers;
  #waiting: TimerHandle | undefined;
  #beating: TimerHandle | undefined;

  constructor(timeoutMs: number, giveUp: () => void, heartbeat: () => void, timers: Timers) {
    this.#timeoutMs = timeoutMs;
    this.#giveUp = giveUp;
    this.#heartbeat = heartbeat;
    this.#timers = timers;
  }

  get #never(): boolean {
    return this.#timeoutMs > MAX_TIMER_MS;
  }

  /** Owner: no attachment is known from now on; the wait starts (again) now. */
  wait(): void {
    if (this.#never) return;
    this.#timers.clearTimeout(this.#waiting);
    this.#waiting = this.#timers.setTimeout(() => {
      this.#waiting = undefined;
      this.#giveUp();
    }, this.#timeoutMs);
  }

  /** Owner: an attachment is here; no wait. */
  attached(): void {
    this.#timers.clearTimeout(this.#waiting);
    this.#waiting = undefined;
  }

  /** Serving node: this node serves an attachment to a session another node runs; says so now and every quarter of the timeout. */
  serving(): void {
    if (this.#beating !== undefined) return;
    this.#heartbeat();
    this.#beating = this.#timers.setInterval(
      () => this.#heartbeat(),
      Math.max(10, Math.floor(Math.min(this.#timeoutMs, MAX_TIMER_MS) / 4)),
    );
  }

  /** Serving node: the attachment here ended. */
  notServing(): void {
    this.#timers.clearInterval(this.#beating);
    this.#beating = undefined;
  }

  /** The session is over here (finished, unloaded, shut down): no timer is left. */
  stop(): void {
    this.attached();
    this.notServing();
  }
}
