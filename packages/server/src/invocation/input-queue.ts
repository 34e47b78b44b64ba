/**
 * The bounded queue between durable acceptance of input and the agent that
 * reads it. At most `capacity` entries wait here (protocol section 12: 256
 * per stream); the connection waits for space before it accepts the next
 * item, which stops it reading the socket, which backpressures the client.
 * A feeder that found it full goes on once half of it is free.
 *
 * Each entry holds the session byte permits of the message that carried it;
 * they are released when the agent takes the entry, or when the queue is
 * discarded (cancellation, consumer drop, failure), and not before the
 * entry's commit when one is given: until then the store holds its own copy
 * of the bytes, which the permits cover too.
 */
import type { BytePermits } from "./byte-permits.js";
import type { ReadyIterator } from "./mapped-iterable.js";
import { InputCancelledError } from "../agent-host.js";

interface Entry<T> {
  readonly item: T;
  readonly permitBytes: number;
  /** Settles when the store no longer holds the entry's bytes (its commit). */
  readonly committed: Promise<unknown> | undefined;
}

type Ending = { kind: "end" } | { kind: "cancelled"; reason: string };

export class InputQueue<T> {
  readonly #entries: Entry<T>[] = [];
  readonly #capacity: number;
  /** Where a waiting feeder is woken (#wakeSpaceWaiters). */
  readonly #lowWater: number;
  readonly #permits: BytePermits;
  /** Called once when the consumer stops reading before the end. */
  readonly #onConsumerDrop: () => void;
  #ending: Ending | undefined;
  #discarded = false;
  #taken = false;
  #wakeConsumer: (() => void) | undefined;
  readonly #spaceWaiters: (() => void)[] = [];

  constructor(capacity: number, permits: BytePermits, onConsumerDrop: () => void) {
    this.#capacity = capacity;
    this.#lowWater = Math.floor(capacity / 2);
    this.#permits = permits;
    this.#onConsumerDrop = onConsumerDrop;
  }

  get length(): number {
    return this.#entries.length;
  }

  /** True once the consumer went away or the queue was cancelled: pushes are dropped by the caller's choice. */
  get closed(): boolean {
    return this.#discarded || this.#ending !== undefined;
  }

  /** Resolves when one more entry fits (or the queue no longer takes entries). */
  /** Whether `waitForSpace()` would resolve at once (lets the hot path skip the wait). */
  get hasSpace(): boolean {
    return this.#entries.length < this.#capacity || this.#discarded;
  }

  async waitForSpace(): Promise<void> {
    while (this.#entries.length >= this.#capacity && !this.#discarded) {
      await new Promise<void>((resolve) => this.#spaceWaiters.push(resolve));
    }
  }

  /** Adds an accepted entry; its permits are released when consumed (and `committed` has settled). */
  push(item: T, permitBytes: number, committed?: Promise<unknown>): void {
    const entry = { item, permitBytes, committed };
    if (this.#discarded || this.#ending !== undefined) {
      this.#release(entry);
      return;
    }
    this.#entries.push(entry);
    this.#wake();
  }

  #release(entry: Entry<T>): void {
    // Runs for every item the agent takes: the closure only when there is a commit to wait for.
    if (entry.committed === undefined) {
      this.#permits.release(entry.permitBytes);
      return;
    }
    const release = (): void => this.#permits.release(entry.permitBytes);
    entry.committed.then(release, release);
  }

  /** Natural end: the consumer sees the end after the queued entries. */
  end(): void {
    if (this.#ending === undefined) this.#ending = { kind: "end" };
    this.#wake();
  }

  /** Cancellation: queued entries are dropped and the consumer sees an error. */
  cancel(reason: string): void {
    if (this.#ending === undefined) this.#ending = { kind: "cancelled", reason };
    this.#discard();
    this.#wake();
  }

  #discard(): void {
    this.#discarded = true;
    for (const entry of this.#entries.splice(0)) this.#release(entry);
    this.#wakeSpaceWaiters();
  }

  /**
   * A feeder that found the queue full waits until it is half empty, not for one free entry:
   * woken per entry, it handed over one item and waited again, a promise and several microtask
   * hops for every item while the agent was the slower side (about one item in twenty of a
   * `tally` burst).
   */
  #wakeSpaceWaiters(): void {
    for (const waiter of this.#spaceWaiters.splice(0)) waiter();
  }

  #wake(): void {
    const consumer = this.#wakeConsumer;
    this.#wakeConsumer = undefined;
    consumer?.();
  }

  /** The single consumer's view. A second call throws: an input stream is read once. */
  consume(): AsyncIterable<T> {
    if (this.#taken)
      throw new Error("this input stream was read already: an input stream is read once (its items are not kept for a second reader)");
    this.#taken = true;
    const iterator = this.#iterator();
    return { [Symbol.asyncIterator]: () => iterator };
  }

  /**
   * The consumer's iterator, written out rather than an async generator: an
   * item already queued (the common case under load) is handed over in one
   * settled promise, where a generator's `yield` cost its own await, request
   * queue and extra microtask turns for every item (docs/performance.md).
   * It keeps the generator's behaviour: items in order, then the end or the
   * cancellation's error once, then `done`; calls to `next` answer in call
   * order; and an iteration the consumer stops (`return`, as `break` or a
   * throw in `for await` do) after it started drops what is queued and
   * reports consumer-drop.
   */
  #iterator(): AsyncIterator<T, void, undefined> & ReadyIterator<T> {
    let started = false;
    let finished = false;
    /** Calls to `next` waiting for an entry, answered in call order. */
    const waiting: { resolve: (result: IteratorResult<T, void>) => void; reject: (error: unknown) => void }[] = [];
    const take = (): IteratorResult<T, void> | undefined => {
      if (finished) return DONE;
      const entry = this.#entries.shift();
      if (entry !== undefined) {
        this.#release(entry);
        if (this.#spaceWaiters.length > 0 && this.#entries.length <= this.#lowWater) this.#wakeSpaceWaiters();
        return { done: false, value: entry.item };
      }
      const ending = this.#ending;
      if (ending?.kind === "end") {
        finished = true;
        return DONE;
      }
      if (ending?.kind === "cancelled") {
        finished = true;
        throw new InputCancelledError(ending.reason);
      }
      return undefined;
    };
    /** Answers the waiting calls at a wake (an entry, the end, the cancellation), as far as it goes. */
    const serve = (): void => {
      while (waiting.length > 0) {
        let result: IteratorResult<T, void> | undefined;
        try {
          result = take();
        } catch (error) {
          waiting.shift()?.reject(error);
          continue;
        }
        if (result === undefined) {
          this.#wakeConsumer = serve;
          return;
        }
        waiting.shift()?.resolve(result);
      }
    };
    const next = (): Promise<IteratorResult<T, void>> => {
      started = true;
      if (waiting.length === 0) {
        let result: IteratorResult<T, void> | undefined;
        try {
          result = take();
        } catch (error) {
          return Promise.reject(error);
        }
        if (result !== undefined) return Promise.resolve(result);
      }
      // One promise per wait, settled by the wake itself.
      return new Promise((resolve, reject) => {
        waiting.push({ resolve, reject });
        this.#wakeConsumer = serve;
      });
    };
    return {
      next,
      // The same answer as `next` without its promise, when it would not wait (mapped-iterable.ts).
      takeNow: (): IteratorResult<T, void> | undefined => {
        if (waiting.length > 0) return undefined;
        started = true;
        return take();
      },
      return: (): Promise<IteratorResult<T, void>> => {
        if (started && !finished) {
          // The agent stopped reading (break, return, throw): drop what is
          // queued and let the session cancel the input with consumer-drop.
          this.#discard();
          this.#onConsumerDrop();
        }
        finished = true;
        // A `next` still waiting answers `done`.
        this.#wake();
        return Promise.resolve(DONE);
      },
    };
  }
}

/** The iterator's end (one shared object: nothing reads it but `done`). */
const DONE: IteratorReturnResult<void> = Object.freeze({ done: true, value: undefined });
