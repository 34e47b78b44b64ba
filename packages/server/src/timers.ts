/**
 * The timers the server's time-dependent behaviour runs on, as one small
 * interface: by default Node's own, unref'd (a timer of a session never
 * keeps a process alive); a test passes `ManualTimers`
 * (`@golem-stream/server/testing`) and moves time itself, so a timeout is
 * checked by what happens when it fires, never by racing a real clock.
 */

/** What `setTimeout`/`setInterval` returned; only ever handed back to `clearTimeout`/`clearInterval`. */
export type TimerHandle = unknown;

export interface Timers {
  setTimeout(callback: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
  setInterval(callback: () => void, ms: number): TimerHandle;
  clearInterval(handle: TimerHandle): void;
}

/** Node's timers, unref'd. */
export const SYSTEM_TIMERS: Timers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout | undefined),
  setInterval: (callback, ms) => setInterval(callback, ms).unref(),
  clearInterval: (handle) => clearInterval(handle as NodeJS.Timeout | undefined),
};
