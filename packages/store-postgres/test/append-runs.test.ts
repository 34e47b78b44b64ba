/**
 * `append-runs.ts`: where runs end in the order @golem-stream/server's
 * `writeOrder` gives, and the rows of a run.
 */
import { expect, it } from "vitest";
import { splitPacked, writeOrder } from "@golem-stream/server/store";
import { RUN_BYTES, RUN_ROW_BYTES, runLength, runRows, type RunAppend } from "../src/append-runs.js";

const append = (streamId: string, sequence: number, length = 10, log: "input" | "output" = "input", mimeType?: string): RunAppend => ({
  log,
  streamId,
  sequence: BigInt(sequence),
  itemCount: 1n,
  data: new Uint8Array(length).fill(sequence & 0xff),
  mimeType,
});

it("an interleaved round trip becomes one run per stream", () => {
  const group = [append("in", 0), append("out", 0, 10, "output"), append("in", 1), append("out", 1, 10, "output"), append("in", 2)];
  const order = writeOrder(group);
  expect(order).toEqual([0, 2, 4, 1, 3]);
  const ordered = order.map((i) => group[i]);
  expect(runLength(ordered, 0)).toBe(3);
  expect(runLength(ordered, 3)).toBe(2);
});

it("a run ends at a gap in sequences, a large row, or RUN_BYTES", () => {
  expect(runLength([append("s", 0), append("s", 1), append("s", 3)], 0)).toBe(2);
  expect(runLength([append("s", 0), append("s", 1, RUN_ROW_BYTES + 1)], 0)).toBe(1);
  expect(runLength([append("s", 0, RUN_ROW_BYTES + 1), append("s", 1)], 0)).toBe(1);
  const many = Array.from({ length: 80 }, (_, i) => append("s", i, RUN_ROW_BYTES));
  expect(runLength(many, 0)).toBe(RUN_BYTES / RUN_ROW_BYTES);
});

it("a run holds appends of one ownership epoch: the run is checked once, for all of them", () => {
  const owned = (sequence: number, epoch: bigint | undefined): RunAppend => ({ ...append("s", sequence), epoch });
  expect(runLength([owned(0, 1n), owned(1, 1n), owned(2, 2n), owned(3, 2n)], 0)).toBe(2);
  expect(runLength([owned(0, 1n), owned(1, 1n), owned(2, 2n), owned(3, 2n)], 2)).toBe(2);
  expect(runLength([owned(0, undefined), owned(1, 1n)], 0)).toBe(1);
  expect(runLength([owned(0, undefined), owned(1, undefined)], 0)).toBe(2);
});

it("runRows packs appends without a MIME type and splits back into them; 0 packs nothing", () => {
  const run = [
    append("s", 0, 100),
    append("s", 1, 100),
    append("s", 2, 100, "input", "text/plain"),
    append("s", 3, 100),
    append("s", 4, 100),
  ];
  expect(runRows(run, 0).every((row) => row.parts === undefined)).toBe(true);
  const rows = runRows(run, 150);
  expect(rows.map((row) => [row.sequence, row.itemCount, row.parts !== undefined, row.mimeType])).toEqual([
    [0n, 1n, false, undefined],
    [1n, 1n, false, undefined],
    [2n, 1n, false, "text/plain"],
    [3n, 1n, false, undefined],
    [4n, 1n, false, undefined],
  ]);
  const packed = runRows(run, 1000);
  expect(packed.map((row) => [row.sequence, row.itemCount, row.parts !== undefined])).toEqual([
    [0n, 2n, true],
    [2n, 1n, false],
    [3n, 2n, true],
  ]);
  const first = packed[0]!;
  expect(splitPacked(first.sequence, first.itemCount, first.data, first.parts!).map((p) => [p.sequence, [...p.data]])).toEqual([
    [0n, [...run[0]!.data]],
    [1n, [...run[1]!.data]],
  ]);
});
