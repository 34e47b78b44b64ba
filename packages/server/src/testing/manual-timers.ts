/**
 * `Timers` whose time moves only when a test says so: pass it as a
 * `createSessionServer` option, then `advance(ms)` fires what falls due, in
 * order. A test of a timeout then checks what happens when it fires (and
 * that an event before it cancelled it), never how fast a loaded machine is.
 */
import type { TimerHandle, Timers } from "../timers.js";

interface Scheduled {
  readonly id: number;
  due: number;
  readonly callback: () => void;
  /** For an interval: its period. */
  readonly every: number | undefined;
}

export class ManualTimers implements Timers {
  #now = 0;
  #nextId = 1;
  readonly #scheduled = new Map<number, Scheduled>();

  /** Milliseconds this clock has advanced since it was made. */
  get now(): number {
    return this.#now;
  }

  /** Timers and intervals set and not yet fired (a timeout) or cleared. */
  get pending(): number {
    return this.#scheduled.size;
  }

  setTimeout(callback: () => void, ms: number): TimerHandle {
    return this.#add(callback, ms, undefined);
  }

  setInterval(callback: () => void, ms: number): TimerHandle {
    return this.#add(callback, ms, Math.max(1, ms));
  }

  clearTimeout(handle: TimerHandle): void {
    if (typeof handle === "number") this.#scheduled.delete(handle);
  }

  clearInterval(handle: TimerHandle): void {
    this.clearTimeout(handle);
  }

  /** Moves time by `ms`, firing every timer that falls due on the way, earliest first (an interval as often as it falls due). */
  advance(ms: number): void {
    const until = this.#now + ms;
    for (;;) {
      let next: Scheduled | undefined;
      for (const timer of this.#scheduled.values()) if (timer.due <= until && (next === undefined || timer.due < next.due)) next = timer;
      if (next === undefined) break;
      this.#now = next.due;
      if (next.every === undefined) this.#scheduled.delete(next.id);
      else next.due += next.every;
      next.callback();
    }
    this.#now = until;
  }

  #add(callback: () => void, ms: number, every: number | undefined): number {
    const id = this.#nextId++;
    this.#scheduled.set(id, { id, due: this.#now + Math.max(0, ms), callback, every });
    return id;
  }
}
