/**
 * `mapAsyncIterable`: the one-step mapping that replaced an async generator
 * per layer on the agent's input path. It must keep what `for await … yield`
 * gave: every item in order, the end, and the source's iteration ended when
 * the reader stops early or the conversion throws (the input queue reports
 * consumer-drop from there).
 */
import { describe, expect, it } from "vitest";
import { mapAsyncIterable } from "../src/invocation/mapped-iterable.js";

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
