/**
 * `RunPacker` packs chunks as they arrive into exactly the rows that cutting the whole run at once
 * makes (`packRun`, `joinParts`): the same cuts, bytes, part lists and item counts, and a row
 * of one chunk left as that chunk.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { joinParts, packRun } from "../src/store/packed-rows.js";
import { RunPacker } from "../src/store/run-packer.js";
import type { InputChunk } from "../src/store/session-store.js";

/** Consecutive chunks of one stream with recognisable bytes. */
function chunksOf(spec: readonly { itemCount: bigint; length: number }[]): InputChunk[] {
  let sequence = 0n;
  return spec.map(({ itemCount, length }, index) => {
    const chunk = {
      streamId: "s",
      sequence,
      itemCount,
      data: Uint8Array.from({ length }, (_, i) => (index * 31 + i) & 0xff),
      mimeType: undefined,
    };
    sequence += itemCount;
    return chunk;
  });
}

/** The rows of the whole run cut at once, as the store wrote them before. */
function cutAtOnce(
  chunks: readonly InputChunk[],
  maxBytes: number,
): { first: InputChunk; itemCount: bigint; data: Uint8Array; parts: Uint8Array | undefined }[] {
  const appends = chunks.map((chunk) => ({ itemCount: chunk.itemCount, packable: chunk.data }));
  return packRun(appends, maxBytes).map(([start, end]) => {
    const first = chunks[start] as InputChunk;
    if (end - start === 1) return { first, itemCount: first.itemCount, data: first.data, parts: undefined };
    const { data, parts, itemCount } = joinParts(appends, start, end);
    return { first, itemCount, data, parts };
  });
}

const spec = fc.array(
  fc.record({
    itemCount: fc.oneof(fc.constant(1n), fc.bigInt({ min: 1n, max: 1n << 62n })),
    length: fc.oneof(fc.integer({ min: 0, max: 120 }), fc.integer({ min: 0, max: 3000 })),
  }),
  { minLength: 1, maxLength: 60 },
);

describe("RunPacker", () => {
  it("makes the rows of the whole run cut at once, for any chunks and bound", () => {
    fc.assert(
      fc.property(spec, fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 4000 })), (run, maxBytes) => {
        const chunks = chunksOf(run);
        const packer = new RunPacker(maxBytes);
        for (const chunk of chunks) packer.add(chunk);
        const rows = packer
          .rows()
          .map((row) => ({ ...row, data: [...row.data], parts: row.parts === undefined ? undefined : [...row.parts] }));
        const expected = cutAtOnce(chunks, maxBytes).map((row) => ({
          ...row,
          data: [...row.data],
          parts: row.parts === undefined ? undefined : [...row.parts],
        }));
        expect(rows).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });

  it("counts a row's items exactly past 2^53, and leaves a chunk larger than the bound in a row of its own", () => {
    const chunks = chunksOf([
      { itemCount: 1n << 60n, length: 2 },
      { itemCount: 1n << 60n, length: 2 },
      { itemCount: 3n, length: 5000 },
      { itemCount: 1n, length: 1 },
    ]);
    const packer = new RunPacker(4096);
    for (const chunk of chunks) packer.add(chunk);
    const rows = packer.rows();
    expect(rows.map((row) => row.itemCount)).toEqual([1n << 61n, 3n, 1n]);
    expect(rows[1]?.parts).toBeUndefined();
    expect(rows[1]?.data).toEqual(chunks[2]?.data);
  });

  it("holds the run's bytes back to back in one buffer: every row's data, in order, across the buffer's growths, at most twice their size", () => {
    // 3 000 chunks of 1 to 200 bytes: the run's buffer doubles several times while rows close.
    const chunks = chunksOf(Array.from({ length: 3000 }, (_, i) => ({ itemCount: 1n, length: 1 + ((i * 53) % 200) })));
    const packer = new RunPacker(1000);
    for (const chunk of chunks) packer.add(chunk);
    const rows = packer.rows();
    const bytes = packer.bytes();
    const expected = Buffer.concat(chunks.map((chunk) => chunk.data));
    expect(Buffer.from(bytes).equals(expected)).toBe(true);
    expect(Buffer.from(Buffer.concat(rows.map((row) => row.data))).equals(expected)).toBe(true);
    expect(rows.length).toBeGreaterThan(100);
    expect(packer.bytes()).toEqual(bytes);
    // Every row a view of the final buffer: none keeps a buffer the run outgrew alive, so the run holds at most twice its bytes.
    for (const row of rows) expect(row.data.buffer).toBe(bytes.buffer);
    expect(bytes.buffer.byteLength).toBeLessThanOrEqual(2 * bytes.byteLength);
  });

  it("takes no chunk once its rows are asked for, and answers the same rows again", () => {
    const packer = new RunPacker(100);
    const [a, b] = chunksOf([
      { itemCount: 1n, length: 3 },
      { itemCount: 1n, length: 3 },
    ]);
    packer.add(a as InputChunk);
    packer.add(b as InputChunk);
    const rows = packer.rows();
    expect(packer.rows()).toBe(rows);
    expect(() => packer.add(a as InputChunk)).toThrow(/finished/);
  });
});
