/**
 * Packed log rows (`src/store/packed-rows.ts`): how a run of appends is cut
 * into rows, and that a packed row splits back into exactly its appends or
 * fails with `PackedRowError` when its part list does not describe it.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { joinParts, packRun, PackedRowError, splitPacked, splitPackedRange, type PackableAppend } from "../src/store/packed-rows.js";

const U64_MAX = (1n << 64n) - 1n;

/** An append of `length` bytes (or one kept out of packing) with a recognisable content. */
const append = (itemCount: bigint, length: number, packable = true, seed = 0): PackableAppend => ({
  itemCount,
  packable: packable ? Uint8Array.from({ length }, (_, i) => (seed * 31 + i) & 0xff) : undefined,
});

const arbitraryRun = fc.array(
  fc.record({ itemCount: fc.bigInt({ min: 1n, max: 1n << 60n }), length: fc.nat(300), packable: fc.boolean(), seed: fc.nat(1000) }),
  { minLength: 1, maxLength: 40 },
);

describe("packRun", () => {
  it("covers the run in order; a row of several appends holds only packable ones, its bytes and part list within the bound", () => {
    /** What a store writes for `run[start..end)` packed: its data and its part list. */
    const rowBytes = (run: readonly PackableAppend[], start: number, end: number): number => {
      const { data, parts } = joinParts(run, start, end);
      return data.byteLength + parts.byteLength;
    };
    fc.assert(
      fc.property(arbitraryRun, fc.integer({ min: 1, max: 1000 }), (spec, maxBytes) => {
        const run = spec.map((a) => append(a.itemCount, a.length, a.packable, a.seed));
        const rows = packRun(run, maxBytes);
        expect(rows.flatMap(([start, end]) => Array.from({ length: end - start }, (_, k) => start + k))).toEqual(run.map((_, i) => i));
        for (const [start, end] of rows) {
          if (end - start === 1) continue;
          expect(run.slice(start, end).every((a) => a.packable !== undefined)).toBe(true);
          expect(rowBytes(run, start, end)).toBeLessThanOrEqual(maxBytes);
        }
        // Greedy: a row ends only where the next append could not have joined it.
        for (let r = 0; r + 1 < rows.length; r++) {
          const [start, end] = rows[r] as [number, number];
          const next = run[end] as PackableAppend;
          const joinable =
            next.packable !== undefined &&
            run.slice(start, end).every((a) => a.packable !== undefined) &&
            rowBytes(run, start, end + 1) <= maxBytes;
          expect(joinable).toBe(false);
        }
      }),
    );
  });

  it("packs nothing with a bound of 0, not even empty appends", () => {
    const run = [append(1n, 0), append(1n, 0), append(1n, 10), append(1n, 0)];
    expect(packRun(run, 0)).toEqual([
      [0, 1],
      [1, 2],
      [2, 3],
      [3, 4],
    ]);
  });

  it("keeps an append larger than the bound, and every unpackable one, in a row of its own", () => {
    const run = [append(1n, 10), append(1n, 10), append(1n, 500), append(1n, 10), append(1n, 10, false), append(1n, 10), append(1n, 10)];
    expect(packRun(run, 100)).toEqual([
      [0, 2],
      [2, 3],
      [3, 4],
      [4, 5],
      [5, 7],
    ]);
  });
});

describe("joinParts and splitPacked", () => {
  it("split back into exactly the appends joined, with their sequences", () => {
    fc.assert(
      fc.property(arbitraryRun, fc.bigInt({ min: 0n, max: 1n << 62n }), (spec, first) => {
        const run = spec.map((a) => append(a.itemCount, a.length, true, a.seed));
        const { data, parts, itemCount } = joinParts(run, 0, run.length);
        const total = run.reduce((sum, a) => sum + a.itemCount, 0n);
        expect(itemCount).toBe(total);
        const split = splitPacked(first, total, data, parts);
        let sequence = first;
        expect(split.map((part) => [part.sequence, part.itemCount, [...part.data]])).toEqual(
          run.map((a) => {
            const row = [sequence, a.itemCount, [...(a.packable as Uint8Array)]];
            sequence += a.itemCount;
            return row;
          }),
        );
      }),
    );
  });

  it("splitPackedRange gives exactly the parts splitPacked gives that overlap the range, for any range", () => {
    // Item counts of a few (the number path: under 2^53 items in the row) and of up to 2^60 (the bigint path).
    const smallCounts = fc.array(
      fc.record({ itemCount: fc.bigInt({ min: 1n, max: 5n }), length: fc.nat(30), packable: fc.constant(true), seed: fc.nat(1000) }),
      { minLength: 1, maxLength: 40 },
    );
    fc.assert(
      fc.property(
        fc.oneof(smallCounts, arbitraryRun),
        fc.bigInt({ min: 0n, max: 1n << 62n }),
        fc.oneof(fc.bigInt({ min: -3n, max: 60n }), fc.bigInt({ min: -3n, max: 1n << 62n })),
        fc.oneof(fc.bigInt({ min: 0n, max: 10n }), fc.bigInt({ min: 0n, max: 1n << 62n })),
        (spec, first, fromOffset, span) => {
          const run = spec.map((a) => append(a.itemCount, a.length, true, a.seed));
          const { data, parts, itemCount } = joinParts(run, 0, run.length);
          // Ranges inside the row, around its ends and beyond them, of every length.
          const from = first + fromOffset;
          const to = from + span;
          const whole = splitPacked(first, itemCount, data, parts);
          const wanted = whole.filter((part) => part.sequence < to && part.sequence + part.itemCount > from);
          const show = (list: typeof whole) => list.map((part) => [part.sequence, part.itemCount, [...part.data]]);
          expect(show(splitPackedRange(first, itemCount, data, parts, from, to))).toEqual(show(wanted));
        },
      ),
    );
    // Rows of few items, where a range of one item is the common read.
    const small = [1n, 1n, 2n, 1n].map((count, i) => append(count, 3, true, i));
    const row = joinParts(small, 0, small.length);
    expect(splitPackedRange(10n, row.itemCount, row.data, row.parts, 12n, 13n).map((p) => [p.sequence, p.itemCount])).toEqual([[12n, 2n]]);
    expect(splitPackedRange(10n, row.itemCount, row.data, row.parts, 15n, 16n)).toEqual([]);
  });

  /** The part list `joinParts` writes for parts of these item counts and byte lengths (any, valid or not). */
  const partList = (parts: readonly { itemCount: bigint; length: number }[]): Uint8Array =>
    joinParts(
      parts.map(({ itemCount, length }) => ({ itemCount, packable: new Uint8Array(length) })),
      0,
      parts.length,
    ).parts;

  it("encode item counts up to 2^64 - 1 (LEB128, at most 10 bytes each)", () => {
    const parts = partList([
      { itemCount: U64_MAX, length: 0 },
      { itemCount: 1n, length: 3 },
    ]);
    expect(parts.byteLength).toBe(10 + 1 + 1 + 1);
    const split = splitPacked(0n, U64_MAX + 1n, Uint8Array.of(7, 8, 9), parts);
    expect(split.map((p) => [p.sequence, p.itemCount, [...p.data]])).toEqual([
      [0n, U64_MAX, []],
      [U64_MAX, 1n, [7, 8, 9]],
    ]);
  });

  it("counts a row's items exactly where a sum of numbers would round (past 2^53)", () => {
    const counts = [(1n << 53n) - 1n, 1n, 1n, 1n << 60n, 3n, U64_MAX - (1n << 61n)];
    const run = counts.map((itemCount) => append(itemCount, 2));
    expect(joinParts(run, 0, run.length).itemCount).toBe(counts.reduce((sum, count) => sum + count, 0n));
    expect(joinParts(run, 0, 3).itemCount).toBe((1n << 53n) + 1n);
  });

  it("refuses a part list that does not describe its row", () => {
    const data = Uint8Array.of(1, 2, 3, 4);
    const damaged: [string, bigint, Uint8Array][] = [
      ["empty", 0n, new Uint8Array(0)],
      ["truncated varint", 1n, Uint8Array.of(0x81)],
      ["length missing", 1n, Uint8Array.of(1)],
      ["varint longer than a u64", 1n, Uint8Array.of(0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 4)],
      ["part past the bytes", 1n, partList([{ itemCount: 1n, length: 5 }])],
      ["bytes left over", 1n, partList([{ itemCount: 1n, length: 3 }])],
      [
        "items do not add up",
        3n,
        partList([
          { itemCount: 1n, length: 2 },
          { itemCount: 1n, length: 2 },
        ]),
      ],
      [
        "more items than the row, the last part empty",
        1n,
        partList([
          { itemCount: 1n, length: 4 },
          { itemCount: 1n, length: 0 },
        ]),
      ],
      [
        "a part of no items",
        1n,
        partList([
          { itemCount: 0n, length: 2 },
          { itemCount: 1n, length: 2 },
        ]),
      ],
    ];
    for (const [name, itemCount, parts] of damaged) {
      expect(() => splitPacked(5n, itemCount, data, parts), name).toThrow(PackedRowError);
      // A read of any range of the row walks the whole list: the damage is found wherever it is.
      for (const [from, to] of [
        [5n, 6n],
        [5n, 5n + itemCount],
        [100n, 101n],
      ] as const) {
        expect(() => splitPackedRange(5n, itemCount, data, parts, from, to), `${name}, range ${from}..${to}`).toThrow(PackedRowError);
      }
    }
  });
});
