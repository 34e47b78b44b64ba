/**
 * `PendingValues` against the plainest model of it, an array of (sequence,
 * text, charge): whatever is pushed and dropped, it holds exactly the items
 * after the last drop, in order, with their texts unchanged (any Unicode, as
 * UTF-8 and back) and their charges summed right. Small blocks and per-item
 * arrays make it start blocks, let go of them, and move and grow its arrays,
 * in every order.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PendingValues } from "../src/pending-values.js";

type Step =
  { readonly kind: "push"; readonly text: string; readonly charge: number } | { readonly kind: "drop"; readonly fraction: number };

const text = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: "grapheme", maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: "binary", minLength: 100, maxLength: 400 }) },
);
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("push" as const), text, charge: fc.integer({ min: 0, max: 9_000_000 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("drop" as const), fraction: fc.double({ min: 0, max: 1.2, noNaN: true }) }) },
);

function held(values: PendingValues): { sequence: bigint; text: string }[] {
  const items: { sequence: bigint; text: string }[] = [];
  values.forEach((sequence, text) => items.push({ sequence, text }));
  return items;
}

describe("PendingValues", () => {
  it("holds exactly the items after the last drop, texts and charges unchanged", () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 2n ** 60n }),
        fc.array(step, { minLength: 10, maxLength: 200, size: "max" }),
        (first, steps) => {
          // Small blocks and per-item arrays: most runs fill blocks, let go of them, and move and grow the arrays.
          const values = new PendingValues(first, { maxBlockBytes: 64, items: 2 });
          let model: { sequence: bigint; text: string; charge: number }[] = [];
          let next = first;
          for (const s of steps) {
            if (s.kind === "push") {
              values.push(s.text, s.charge);
              model.push({ sequence: next++, text: s.text, charge: s.charge });
              continue;
            }
            // Up to a little beyond the last pushed item: a drop never takes more than is held.
            const before = model[0]?.sequence ?? next;
            const upTo = before + BigInt(Math.floor((model.length + 1) * s.fraction));
            const dropped = model.filter((item) => item.sequence < upTo);
            expect(values.dropBefore(upTo)).toBe(dropped.reduce((sum, item) => sum + item.charge, 0));
            model = model.filter((item) => item.sequence >= upTo);
          }
          expect(values.length).toBe(model.length);
          expect(held(values)).toEqual(model.map(({ sequence, text }) => ({ sequence, text })));
        },
      ),
      { numRuns: 200 },
    );
  });

  it("writes an item that does not fit what is left of a block into the next, and one larger than a block into its own", () => {
    // Blocks of 16 bytes, room reserved at 3 bytes a character: a block takes up to two items of
    // two characters; "klmnopq" (21 bytes reserved) takes a block of its own.
    const values = new PendingValues(0n, { maxBlockBytes: 16, items: 2 });
    for (const text of ["ab", "cd", "ef", "klmnopq", "rs", "é€", "😀"]) values.push(text, 1);
    expect(values.dropBefore(3n)).toBe(3);
    expect(held(values)).toEqual(["klmnopq", "rs", "é€", "😀"].map((text, i) => ({ sequence: 3n + BigInt(i), text })));
    for (let i = 0; i < 40; i++) values.push(`t${i}`, 2);
    expect(values.dropBefore(30n)).toBe(4 + 23 * 2);
    expect(held(values).map((item) => item.text)).toEqual(Array.from({ length: 17 }, (_, i) => `t${i + 23}`));
  });

  it("numbers items from the sequence it is cleared to", () => {
    const values = new PendingValues(5n);
    values.push("a", 1);
    values.push("b", 1);
    values.clear(9n);
    expect(values.length).toBe(0);
    expect(values.dropBefore(100n)).toBe(0);
    values.push("c", 3);
    expect(held(values)).toEqual([{ sequence: 9n, text: "c" }]);
    expect(values.dropBefore(9n)).toBe(0);
    expect(values.dropBefore(10n)).toBe(3);
    expect(values.length).toBe(0);
  });

  it("lets go of a block once every item in it is acknowledged", () => {
    const values = new PendingValues(0n, { maxBlockBytes: 1024, items: 16 });
    let next = 0n;
    for (let turn = 0; turn < 500; turn++) {
      for (let i = 0; i < 20; i++) values.push(`item ${next++}`, 1);
      values.dropBefore(next - 30n);
      // 30 items of at most 10 characters (30 bytes reserved each) span at most two blocks; one more may be spare.
      expect(values.retainedBytes).toBeLessThanOrEqual(3 * 1024);
    }
    // Nothing held, nothing kept: a stream that sends now and then holds no block while idle.
    values.dropBefore(next);
    expect(values.length).toBe(0);
    expect(values.retainedBytes).toBe(0);
    // An item larger than a block has a block of its own, which takes no other item and is let go
    // of with it (not kept as the spare); blocks start small again.
    values.push("x".repeat(10_000), 1);
    values.push("y", 1);
    values.dropBefore(next + 1n);
    expect(held(values)).toEqual([{ sequence: next + 1n, text: "y" }]);
    expect(values.retainedBytes).toBeLessThanOrEqual(1024);
  });

  it("starts with a small block and doubles them up to the largest while items are held", () => {
    const values = new PendingValues(0n, { maxBlockBytes: 8192, items: 16 });
    values.push("a", 1);
    expect(values.retainedBytes).toBe(1024);
    // Items of 100 characters reserve 300 bytes each: blocks of 2, 4 and 8 KiB follow, then 8 KiB again.
    const added: number[] = [];
    for (let i = 0; i < 150; i++) {
      const before = values.retainedBytes;
      values.push("b".repeat(100), 1);
      if (values.retainedBytes > before) added.push(values.retainedBytes - before);
    }
    expect(added.slice(0, 4)).toEqual([2048, 4096, 8192, 8192]);
    values.dropBefore(151n);
    expect(values.retainedBytes).toBe(0);
  });

  it("keeps a window of small items through many turns of its blocks", () => {
    // A sender's steady state: items pushed and acknowledged in turns, thousands held at once.
    const values = new PendingValues(0n);
    let next = 0n;
    let acked = 0n;
    for (let turn = 0; turn < 200; turn++) {
      for (let i = 0; i < 700; i++) values.push(`{"kind":"string","value":"item ${next++} ✓"}`, 60);
      acked += 650n;
      values.dropBefore(acked);
    }
    const items = held(values);
    expect(items.length).toBe(Number(next - acked));
    expect(items[0]).toEqual({ sequence: acked, text: `{"kind":"string","value":"item ${acked} ✓"}` });
    expect(items.at(-1)).toEqual({ sequence: next - 1n, text: `{"kind":"string","value":"item ${next - 1n} ✓"}` });
  });
});
