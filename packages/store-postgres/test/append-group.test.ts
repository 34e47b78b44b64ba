/**
 * `append-group.ts`: which groups of appends one statement may write, and
 * its parameters.
 */
import { expect, it } from "vitest";
import { appendGroupValues, distinctRuns } from "../src/append-group.js";
import { RUN_BYTES, RUN_ROW_BYTES, type RunAppend } from "../src/append-runs.js";

const append = (streamId: string, sequence: number, length = 10, log: "input" | "output" = "input"): RunAppend => ({
  log,
  streamId,
  sequence: BigInt(sequence),
  itemCount: 1n,
  data: new Uint8Array(length).fill(sequence & 0xff),
  mimeType: undefined,
});

it("one run per stream: the runs; a stream with a second run (a gap), a large append or more than RUN_BYTES in all: none", () => {
  expect(distinctRuns([append("in", 0), append("in", 1), append("out", 0, 10, "output")])).toEqual([
    [0, 2],
    [2, 3],
  ]);
  expect(distinctRuns([append("in", 0), append("in", 2)])).toBeUndefined();
  expect(distinctRuns([append("in", 0), append("out", 0, RUN_ROW_BYTES + 1, "output")])).toBeUndefined();
  const many = Array.from({ length: RUN_BYTES / RUN_ROW_BYTES + 1 }, (_, i) => append(`s${i}`, 0, RUN_ROW_BYTES));
  expect(distinctRuns(many.slice(1))).toHaveLength(RUN_BYTES / RUN_ROW_BYTES);
  expect(distinctRuns(many)).toBeUndefined();
});

it("the parameters name each row's run and slice of one binary payload; packed rows carry their parts", () => {
  const group = [append("in", 0), append("in", 1), append("out", 5, 10, "output")];
  const [runs, logs, streams, starts, totals, rowRuns, sequences, counts, offsets, lengths, , parts, payload, channel] = appendGroupValues(
    group,
    distinctRuns(group)!,
    8192,
    "ch",
  );
  expect([runs, logs, streams, starts, totals]).toEqual([
    [0, 1],
    ["input", "output"],
    ["in", "out"],
    ["0", "5"],
    ["2", "1"],
  ]);
  expect([rowRuns, sequences, counts, offsets, lengths]).toEqual([
    [0, 1],
    ["0", "5"],
    ["2", "1"],
    [0, 20],
    [20, 10],
  ]);
  // A Buffer parameter is what `pg` sends in binary (a bytea[] goes as hex text).
  expect(Buffer.isBuffer(payload)).toBe(true);
  expect([...(payload as Buffer)]).toEqual([...new Uint8Array(10).fill(0), ...new Uint8Array(10).fill(1), ...new Uint8Array(10).fill(5)]);
  expect((parts as (Buffer | null)[]).map((p) => p !== null)).toEqual([true, false]);
  expect(channel).toBe("ch");
});
