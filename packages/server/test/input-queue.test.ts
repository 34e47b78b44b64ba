/**
 * The input queue's consumer iterator (written out instead of an async
 * generator, for speed): items in order, the end, the
 * cancellation's error, permits released as items are taken, consumer-drop
 * when the agent stops reading, and `next` calls answered in call order.
 */
import { describe, expect, it } from "vitest";
import { InputCancelledError } from "../src/agent-host.js";
import { BytePermits } from "../src/invocation/byte-permits.js";
import { InputQueue } from "../src/invocation/input-queue.js";

function queueOf(capacity = 4): { queue: InputQueue<number>; permits: BytePermits; drops: () => number } {
  const permits = new BytePermits(1000);
  let drops = 0;
  const queue = new InputQueue<number>(capacity, permits, () => drops++);
  return { queue, permits, drops: () => drops };
}

function push(queue: InputQueue<number>, permits: BytePermits, item: number, bytes = 10): void {
  expect(permits.tryAcquire(bytes)).toBe(true);
  queue.push(item, bytes);
}

describe("InputQueue consumer", () => {
  it("hands over queued and later items in order, then ends; permits go back as items are taken", async () => {
    const { queue, permits, drops } = queueOf();
    push(queue, permits, 1);
    push(queue, permits, 2);
    const seen: number[] = [];
    const reading = (async () => {
      for await (const item of queue.consume()) seen.push(item);
    })();
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen).toEqual([1, 2]);
    expect(permits.available).toBe(1000);
    push(queue, permits, 3);
    queue.end();
    await reading;
    expect(seen).toEqual([1, 2, 3]);
    expect(drops()).toBe(0);
    expect(permits.available).toBe(1000);
  });

  it("a cancellation reaches the reader as InputCancelledError, once; then the iterator is done", async () => {
    const { queue, permits } = queueOf();
    push(queue, permits, 1);
    const iterator = queue.consume()[Symbol.asyncIterator]();
    expect(await iterator.next()).toEqual({ done: false, value: 1 });
    const waiting = iterator.next();
    queue.cancel("client-cancelled");
    await expect(waiting).rejects.toBeInstanceOf(InputCancelledError);
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
  });

  it("a reader that stops early drops what is queued and reports consumer-drop", async () => {
    const { queue, permits, drops } = queueOf();
    for (const item of [1, 2, 3]) push(queue, permits, item);
    for await (const item of queue.consume()) if (item === 1) break;
    expect(drops()).toBe(1);
    expect(permits.available).toBe(1000);
    expect(queue.closed).toBe(true);
  });

  it("answers calls to next in call order, also while waiting", async () => {
    const { queue, permits } = queueOf();
    const iterator = queue.consume()[Symbol.asyncIterator]();
    const first = iterator.next();
    const second = iterator.next();
    push(queue, permits, 1);
    push(queue, permits, 2);
    queue.end();
    expect(await Promise.all([first, second, iterator.next()])).toEqual([
      { done: false, value: 1 },
      { done: false, value: 2 },
      { done: true, value: undefined },
    ]);
  });

  it("a reader that stops while a next waits gets done for it, and consumer-drop is reported", async () => {
    const { queue, drops } = queueOf();
    const iterator = queue.consume()[Symbol.asyncIterator]();
    const waiting = iterator.next();
    await iterator.return?.();
    expect(await waiting).toEqual({ done: true, value: undefined });
    expect(drops()).toBe(1);
  });

  it("a second consumer is refused", () => {
    const { queue } = queueOf();
    queue.consume();
    expect(() => queue.consume()).toThrow("this input stream was read already: an input stream is read once");
  });

  it("a feeder that found the queue full is woken once it is half empty, not at each entry taken", async () => {
    const { queue, permits } = queueOf(8);
    for (let item = 0; item < 8; item++) push(queue, permits, item);
    expect(queue.hasSpace).toBe(false);
    let woken = false;
    const space = queue.waitForSpace().then(() => (woken = true));
    const iterator = queue.consume()[Symbol.asyncIterator]();
    for (let taken = 0; taken < 3; taken++) await iterator.next();
    await new Promise((resolve) => setImmediate(resolve));
    // Five left: there is space, but the feeder waits on until half the queue is free.
    expect(queue.hasSpace).toBe(true);
    expect(woken).toBe(false);
    await iterator.next();
    await space;
    expect(queue.length).toBe(4);
  });
});
