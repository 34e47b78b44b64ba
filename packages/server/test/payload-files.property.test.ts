/**
 * Model-based: for any sequence of log writes — payloads on both sides of the
 * file threshold, issued together or awaited one by one, with reopenings of
 * the directory in between — the SQLite store with payload files answers every
 * read exactly as `MemorySessionStore` does.
 */
import { afterEach, expect, it } from "vitest";
import fc from "fast-check";
import { randomUUID } from "node:crypto";
import { MemorySessionStore, SqliteSessionStore, type SessionStore } from "../src/index.js";
import { removeStoreDirs, session, sqliteDir, stream } from "./support/store-records.js";

afterEach(removeStoreDirs);

const THRESHOLD = 256;

type Op =
  | { kind: "input"; sizes: number[] }
  | { kind: "output"; sizes: number[] }
  | { kind: "reopen" }
  | { kind: "readInput"; from: number; span: number }
  | { kind: "readOutput"; from: number; limit: number; maxBytes: number };

const sizes = fc.array(fc.oneof(fc.integer({ min: 1, max: THRESHOLD - 1 }), fc.integer({ min: THRESHOLD, max: 3 * THRESHOLD })), { minLength: 1, maxLength: 4 });
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: sizes.map((s) => ({ kind: "input" as const, sizes: s })) },
  { weight: 4, arbitrary: sizes.map((s) => ({ kind: "output" as const, sizes: s })) },
  { weight: 1, arbitrary: fc.constant({ kind: "reopen" as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("readInput" as const), from: fc.nat(4000), span: fc.integer({ min: 1, max: 4000 }) }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant("readOutput" as const), from: fc.nat(20), limit: fc.integer({ min: 1, max: 8 }), maxBytes: fc.integer({ min: 1, max: 2000 }) }),
  },
);

/** Deterministic bytes, different for every write. */
let counter = 0;
function bytes(size: number): Uint8Array {
  counter++;
  return Uint8Array.from({ length: size }, (_, i) => (counter * 131 + i * 7) & 0xff);
}

it("reads back the same as the in-memory model after any writes and reopenings", async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), async (ops) => {
      const dataDir = sqliteDir();
      const open = () => new SqliteSessionStore({ dataDir, payloadFileThreshold: THRESHOLD, synchronous: "normal" });
      let real: SqliteSessionStore = open();
      const model = new MemorySessionStore();
      const s = session();
      const input = stream(s.sessionId, "input");
      const output = stream(s.sessionId, "output", { elementKind: "binary" });
      const attempt = { attemptId: randomUUID(), operation: "start" as const, descriptorDigest: "d", sessionId: s.sessionId, generation: 1n };
      const both = async (run: (store: SessionStore) => Promise<unknown>) => Promise.all([run(real), run(model)]);
      try {
        await both((store) => store.createSession(s, [input, output], attempt));
        let inputCount = 0n;
        let outputCount = 0n;
        for (const step of ops) {
          switch (step.kind) {
            case "input": {
              // Issued together: one group commit, payload bytes written before its rows.
              const chunks = step.sizes.map((size) => {
                const chunk = { streamId: input.streamId, sequence: inputCount, itemCount: BigInt(size), data: bytes(size), mimeType: undefined };
                inputCount += BigInt(size);
                return chunk;
              });
              await both((store) => Promise.all(chunks.map((chunk) => store.acceptInput(chunk, []))));
              break;
            }
            case "output": {
              const events = step.sizes.map((size) => ({
                event: "item" as const,
                streamId: output.streamId,
                sequence: outputCount++,
                itemCount: 1n,
                data: bytes(size),
                mimeType: size % 2 === 0 ? "application/octet-stream" : undefined,
              }));
              await both((store) => Promise.all(events.map((event) => store.appendOutput(event, []))));
              break;
            }
            case "reopen":
              await real.close();
              real = open();
              break;
            case "readInput": {
              const from = BigInt(step.from);
              const [got, want] = await both((store) => store.readInput(input.streamId, from, from + BigInt(step.span)));
              expect(got).toEqual(want);
              break;
            }
            case "readOutput": {
              const [got, want] = await both((store) => store.readOutput(output.streamId, BigInt(step.from), step.limit, step.maxBytes));
              expect(got).toEqual(want);
              break;
            }
          }
        }
        const [all, allModel] = await both((store) => store.readInput(input.streamId, 0n, inputCount + 1n));
        expect(all).toEqual(allModel);
        const [streams, streamsModel] = await both((store) => store.listStreams(s.sessionId));
        expect(streams).toEqual(streamsModel);
      } finally {
        await real.close();
      }
    }),
    { numRuns: 40 },
  );
});
