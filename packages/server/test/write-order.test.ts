/**
 * `store/write-order.ts`: the order a group commit writes in (appends stream
 * by stream between other writes), and where a run continues.
 */
import { expect, it } from "vitest";
import fc from "fast-check";
import { continuesRun, writeOrder, type OrderedAppend } from "../src/store/write-order.js";

const append = (streamId: string, sequence: number, log: "input" | "output" = "input"): OrderedAppend => ({
  log,
  streamId,
  sequence: BigInt(sequence),
  itemCount: 1n,
});

/** A group: appends of a few streams (either log), and other writes (undefined). */
const arbitraryGroup = fc
  .array(
    fc.option(fc.record({ stream: fc.constantFrom("a", "b", "c"), log: fc.constantFrom("input" as const, "output" as const) }), {
      nil: undefined,
    }),
    { maxLength: 40 },
  )
  .map((entries) => {
    const next = new Map<string, number>();
    return entries.map((entry) => {
      if (entry === undefined) return undefined;
      const key = `${entry.log}:${entry.stream}`;
      const sequence = next.get(key) ?? 0;
      next.set(key, sequence + 1);
      return append(entry.stream, sequence, entry.log);
    });
  });

it("writeOrder is a permutation that keeps every other write in place and each stream's appends in order, across no barrier", () => {
  fc.assert(
    fc.property(arbitraryGroup, (group) => {
      const order = writeOrder(group);
      expect([...order].sort((a, b) => a - b)).toEqual(group.map((_, i) => i));
      order.forEach((index, at) => {
        if (group[index] === undefined) expect(at).toBe(index);
      });
      // Between two barriers the same set of writes, and per stream the same order.
      const position = new Map(order.map((index, at) => [index, at]));
      for (let i = 0; i < group.length; i++) {
        for (let j = i + 1; j < group.length; j++) {
          const [x, y] = [group[i], group[j]];
          const barrierBetween = group.slice(i, j + 1).some((w) => w === undefined);
          if (barrierBetween || (x !== undefined && y !== undefined && x.log === y.log && x.streamId === y.streamId)) {
            expect(position.get(i)!).toBeLessThan(position.get(j)!);
          }
        }
      }
    }),
  );
});

it("a run continues on the same log of the same stream, right where the last append ended", () => {
  const last: OrderedAppend = { log: "input", streamId: "s", sequence: 5n, itemCount: 3n };
  expect(continuesRun(last, { ...last, sequence: 8n, itemCount: 1n })).toBe(true);
  expect(continuesRun(last, { ...last, sequence: 7n })).toBe(false);
  expect(continuesRun(last, { ...last, sequence: 9n })).toBe(false);
  expect(continuesRun(last, { ...last, sequence: 8n, streamId: "t" })).toBe(false);
  expect(continuesRun(last, { ...last, sequence: 8n, log: "output" })).toBe(false);
  expect(continuesRun(last, undefined)).toBe(false);
});
