/**
 * Property: whatever batching the server chooses and however often the
 * connection is replaced, a consumer of a packed `stream<u8>` sees every byte
 * exactly once, in order — as long as the server replays from the retained
 * cursor (protocol section 9: at-least-once at the batch boundary).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { OutputStream, type OutputStreamHost } from "../src/output-stream.js";

/** Cursor tokens of this model name the position just after their batch. */
const cursorAt = (end: number): string => `c${end}`;
const positionOf = (cursor: string | undefined): number => (cursor === undefined ? 0 : Number(cursor.slice(1)));

describe("output stream dedupe", () => {
  it("delivers each byte once across replays with arbitrary batch splits", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 1, maxLength: 400 }),
        fc.array(fc.integer({ min: 1, max: 64 }), { minLength: 1, maxLength: 40 }),
        fc.array(fc.integer({ min: 0, max: 6 }), { minLength: 1, maxLength: 10 }),
        async (data, splits, pullsPerConnection) => {
          let queued = 0;
          const host: OutputStreamHost = {
            onQueueChange: (entries) => void (queued += entries),
            onCommit: () => undefined,
            sendCancel: () => undefined,
            onItemDropped: () => undefined,
            inputFailure: () => undefined,
            awayNote: () => undefined,
            invocationOutcome: () => undefined,
          };
          const stream = new OutputStream("s", host);
          const iterator = stream[Symbol.asyncIterator]();
          const seen: number[] = [];
          let split = 0;
          /** One connection: the server sends everything after the retained cursor, batched its own way. */
          const connection = (): void => {
            let at = positionOf(stream.retainedCursor);
            while (at < data.length) {
              const size = Math.min(splits[split++ % splits.length]!, data.length - at);
              stream.pushItem(BigInt(at), BigInt(size), data.subarray(at, at + size), cursorAt(at + size), size);
              at += size;
            }
          };
          for (const pulls of pullsPerConnection) {
            connection();
            for (let i = 0; i < pulls && queued > 0; i++) {
              const result = await iterator.next();
              if (!result.done) seen.push(...(result.value as Uint8Array));
            }
          }
          connection();
          stream.pushEnd(BigInt(data.length), { kind: "ok" }, "end");
          for (let result = await iterator.next(); !result.done; result = await iterator.next()) seen.push(...(result.value as Uint8Array));
          expect(Uint8Array.from(seen)).toEqual(data);
          // The end is observed before its cursor is retained; coming back after it retains it.
          expect(stream.retainedCursor).toBe(cursorAt(data.length));
          expect((await iterator.next()).done).toBe(true);
          expect(stream.retainedCursor).toBe("end");
        },
      ),
      { numRuns: 200 },
    );
  });
});
