/**
 * `mapAsyncIterable`: the one-step mapping that replaced an async generator
 * per layer on the agent's input path. It must keep what `for await … yield`
 * gave: every item in order, the end, and the source's iteration ended when
 * the reader stops early or the conversion throws (the input queue reports
 * consumer-drop from there).
 */
import { describe, expect, it } from "vitest";
import { mapAsyncIterable } from "../src/invocation/mapped-iterable.js";
import { InputCancelledError } from "../src/agent-host.js";
import { BytePermits } from "../src/invocation/byte-permits.js";
import { InputQueue } from "../src/invocation/input-queue.js";

/** A source that records whether its iteration was ended (its generator's `finally`). */
function source(items: number[]): { iterable: AsyncIterable<number>; ended: () => boolean } {
  let ended = false;
  return {
    iterable: (async function* () {
      try {
        for (const item of items) yield item;
      } finally {
        ended = true;
      }
    })(),
    ended: () => ended,
  };
}

describe("mapAsyncIterable", () => {
  it("maps every item in order and ends", async () => {
    const { iterable, ended } = source([1, 2, 3]);
    const seen: string[] = [];
    for await (const item of mapAsyncIterable(iterable, (n) => `#${n}`)) seen.push(item);
    expect(seen).toEqual(["#1", "#2", "#3"]);
    expect(ended()).toBe(true);
  });

  it("a reader that stops early ends the source's iteration", async () => {
    const { iterable, ended } = source([1, 2, 3, 4]);
    const seen: number[] = [];
    for await (const item of mapAsyncIterable(iterable, (n) => n * 10)) {
      seen.push(item);
      if (item === 20) break;
    }
    expect(seen).toEqual([10, 20]);
    expect(ended()).toBe(true);
  });

  it("a conversion that throws ends the source's iteration and reaches the reader", async () => {
    const { iterable, ended } = source([1, 2, 3]);
    const seen: number[] = [];
    const read = async (): Promise<void> => {
      for await (const item of mapAsyncIterable(iterable, (n) => {
        if (n === 2) throw new Error("not convertible");
        return n;
      }))
        seen.push(item);
    };
    await expect(read()).rejects.toThrow("not convertible");
    expect(seen).toEqual([1]);
    expect(ended()).toBe(true);
  });

  it("a source that fails fails the reader", async () => {
    const failing: AsyncIterable<number> = (async function* () {
      yield 1;
      throw new Error("source failed");
    })();
    const seen: number[] = [];
    const read = async (): Promise<void> => {
      for await (const item of mapAsyncIterable(failing, (n) => n)) seen.push(item);
    };
    await expect(read()).rejects.toThrow("source failed");
    expect(seen).toEqual([1]);
  });

  it("a mapping of a mapping applies both conversions in order, and a throw in the first still ends the source", async () => {
    const { iterable, ended } = source([1, 2, 3]);
    const inner = mapAsyncIterable(iterable, (n) => {
      if (n === 3) throw new Error("not convertible");
      return n * 10;
    });
    const seen: string[] = [];
    const read = async (): Promise<void> => {
      for await (const item of mapAsyncIterable(inner, (n) => `#${n}`)) seen.push(item);
    };
    await expect(read()).rejects.toThrow("not convertible");
    expect(seen).toEqual(["#10", "#20"]);
    expect(ended()).toBe(true);
  });
});

describe("mapAsyncIterable over the input queue (items taken at once when queued)", () => {
  function queueOf(): { queue: InputQueue<number>; permits: BytePermits; drops: () => number } {
    const permits = new BytePermits(1000);
    let drops = 0;
    return { queue: new InputQueue<number>(8, permits, () => drops++), permits, drops: () => drops };
  }
  function push(queue: InputQueue<number>, permits: BytePermits, item: number): void {
    expect(permits.tryAcquire(10)).toBe(true);
    queue.push(item, 10);
  }

  it("a queued item is taken without the source's next; items stay in order across waits; permits go back at each take", async () => {
    const { queue, permits } = queueOf();
    const source = queue.consume();
    const iterator = source[Symbol.asyncIterator]();
    let sourceNexts = 0;
    const next = iterator.next.bind(iterator);
    iterator.next = () => (sourceNexts++, next());
    const mapped = mapAsyncIterable({ [Symbol.asyncIterator]: () => iterator }, (n) => `#${n}`)[Symbol.asyncIterator]();
    push(queue, permits, 1);
    push(queue, permits, 2);
    expect(await mapped.next()).toEqual({ done: false, value: "#1" });
    expect(permits.available).toBe(990); // the first taken, its permits back
    expect(await mapped.next()).toEqual({ done: false, value: "#2" });
    expect(sourceNexts).toBe(0); // both were queued: taken at once
    const waiting = mapped.next(); // nothing queued: waits on the source
    const after = mapped.next(); // and a call behind it, answered after it
    expect(sourceNexts).toBe(2);
    push(queue, permits, 3);
    push(queue, permits, 4);
    queue.end();
    expect(await waiting).toEqual({ done: false, value: "#3" });
    expect(await after).toEqual({ done: false, value: "#4" });
    expect(await mapped.next()).toEqual({ done: true, value: undefined });
    expect(permits.available).toBe(1000);
  });

  it("a cancellation taken at once rejects the call (never throws from next), once; a conversion that throws ends the queue's iteration", async () => {
    const { queue, permits, drops } = queueOf();
    const mapped = mapAsyncIterable(queue.consume(), (n) => n)[Symbol.asyncIterator]();
    queue.cancel("transport-detached");
    let answer: Promise<IteratorResult<number>> | undefined;
    expect(() => (answer = mapped.next())).not.toThrow();
    await expect(answer).rejects.toBeInstanceOf(InputCancelledError);
    expect(await mapped.next()).toEqual({ done: true, value: undefined });

    const other = queueOf();
    const failing = mapAsyncIterable(other.queue.consume(), (n) => {
      if (n === 2) throw new Error("not convertible");
      return n;
    })[Symbol.asyncIterator]();
    push(other.queue, other.permits, 1);
    push(other.queue, other.permits, 2);
    push(other.queue, other.permits, 3);
    expect(await failing.next()).toEqual({ done: false, value: 1 });
    await expect(failing.next()).rejects.toThrow("not convertible");
    expect(other.drops()).toBe(1); // the reader stopped: consumer-drop, and what was queued is dropped
    expect(other.permits.available).toBe(1000);
    expect(drops()).toBe(0);
  });
});
