/**
 * Giving the event loop a turn from a loop that never waits for it. An input
 * source that hands its items over at once (an array, a generator) or on
 * promises alone (an async generator) never lets a timer, another socket or
 * another invocation of the process run: the feeder would send until its
 * unacknowledged window (8 MiB) is full, which is hundreds of milliseconds of
 * small items. So it counts what it sent and, past a budget, waits for a
 * macrotask (a microtask would let nothing else in).
 */

/**
 * The work between two turns: items, or bytes of their charge against the window, whichever
 * comes first. Measured with bench/compare-client.mjs (64-byte strings, 2 cores): the sender's
 * CPU per item stays within the noise of the runs (about 5.5 µs, before and after, for a turn
 * every 256, 1024 or 4096 items), and 1024 items are about 5 ms of it; 4096 let stalls of tens
 * of milliseconds through again. The bytes bound gives a source of 1 MiB chunks a turn after each.
 */
export const TURN_ITEMS = 1024;
export const TURN_BYTES = 1024 * 1024;

/** Counts the work done since the event loop last had a turn. */
export class TurnBudget {
  #items = 0;
  #bytes = 0;

  /** One item, charging `bytes`. */
  spend(bytes: number): void {
    this.#items++;
    this.#bytes += bytes;
  }

  get spent(): boolean {
    return this.#items >= TURN_ITEMS || this.#bytes >= TURN_BYTES;
  }

  /** The event loop had a turn (the caller waited for one, or for something else). */
  reset(): void {
    this.#items = 0;
    this.#bytes = 0;
  }
}

type Schedule = (callback: () => void) => void;

/** What is used of a runtime's globals (the browser build may find neither). */
interface Timers {
  readonly setImmediate?: (callback: () => void) => unknown;
  readonly MessageChannel?: new () => {
    readonly port1: { onmessage: (() => void) | null };
    readonly port2: { postMessage(message: undefined): void };
  };
}

/**
 * A macrotask, as soon as the runtime allows: `setImmediate` in Node (after the I/O and
 * timers that are due), a `MessageChannel` message in browsers (a `setTimeout` chain is
 * held to 4 ms a link there), and `setTimeout` elsewhere.
 */
function macrotask(): Schedule {
  const global = globalThis as unknown as Timers;
  const immediate = global.setImmediate;
  if (typeof immediate === "function") return (callback) => void immediate(callback);
  if (typeof global.MessageChannel === "function") {
    const channel = new global.MessageChannel();
    const waiting: (() => void)[] = [];
    channel.port1.onmessage = () => waiting.shift()?.();
    return (callback) => {
      waiting.push(callback);
      channel.port2.postMessage(undefined);
    };
  }
  return (callback) => void setTimeout(callback, 0);
}

let schedule: Schedule | undefined;

/** Resolves in a later turn of the event loop. */
export function nextTurn(): Promise<void> {
  schedule ??= macrotask();
  const run = schedule;
  return new Promise((resolve) => run(resolve));
}
