/**
 * A group's payloads of one session are written as runs of adjacent payloads, one positional
 * `writev` each (`src/store/payload-files.ts`): every payload in exactly one run, in order, each
 * run contiguous on disk and within the kernel's buffer limit, and a short write resumed at the
 * first byte not yet down. The bytes landing at their places across reopenings are the model
 * test's (`payload-files-model.slow.test.ts`).
 */
import { expect, it } from "vitest";
import fc from "fast-check";
import { adjacentRuns, MAX_BUFFERS_PER_WRITE, remainderAfter, type PendingPayload } from "../src/store/payload-files.js";

/** Payloads of the given lengths, each placed `gap` bytes after the one before it. */
function placed(layout: readonly { length: number; gap: number }[]): PendingPayload[] {
  let offset = 0;
  return layout.map(({ length, gap }) => {
    offset += gap;
    const payload = { ref: { sessionId: "s", offset, length }, data: new Uint8Array(length) };
    offset += length;
    return payload;
  });
}

it("splits payloads into contiguous runs exactly where a gap or the buffer limit falls", () => {
  fc.assert(
    fc.property(
      fc.array(fc.record({ length: fc.integer({ min: 1, max: 9 }), gap: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 5 })) }), {
        maxLength: 60,
      }),
      (layout) => {
        const payloads = placed(layout);
        const runs = adjacentRuns(payloads);
        expect(runs.flat()).toEqual(payloads);
        for (const run of runs) {
          expect(run.length).toBeGreaterThan(0);
          for (let i = 1; i < run.length; i++) expect(run[i]!.ref.offset).toBe(run[i - 1]!.ref.offset + run[i - 1]!.ref.length);
        }
        // A new run starts only at a gap: as few runs as the gaps allow (the first payload's gap is no break).
        const gaps = layout.slice(1).filter(({ gap }) => gap > 0).length;
        expect(runs.length).toBe(payloads.length === 0 ? 0 : gaps + 1);
      },
    ),
  );
});

it("cuts a run of more than MAX_BUFFERS_PER_WRITE adjacent payloads into calls the kernel takes", () => {
  const payloads = placed(Array.from({ length: 2 * MAX_BUFFERS_PER_WRITE + 3 }, () => ({ length: 1, gap: 0 })));
  expect(adjacentRuns(payloads).map((run) => run.length)).toEqual([MAX_BUFFERS_PER_WRITE, MAX_BUFFERS_PER_WRITE, 3]);
});

it("after a short write, what is left is exactly the bytes not yet written", () => {
  fc.assert(
    fc.property(fc.array(fc.uint8Array({ minLength: 0, maxLength: 12 }), { maxLength: 8 }), fc.nat(), (buffers, cut) => {
      const all = Buffer.concat(buffers);
      const written = all.length === 0 ? 0 : cut % (all.length + 1);
      const rest = remainderAfter(buffers, written);
      expect(Buffer.concat(rest)).toEqual(all.subarray(written));
      // Nothing empty is handed to the next call.
      for (const buffer of rest) expect(buffer.byteLength).toBeGreaterThan(0);
    }),
  );
});
