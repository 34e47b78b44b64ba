/**
 * Model-based check of a `SessionStore`: for any sequence of log writes
 * (small and large payloads, issued together or awaited one by one, with
 * reopenings in between where the store supports them) the store answers
 * every read exactly as `MemorySessionStore` does. The caller hands in
 * fast-check and its `expect` (types only here: no runtime dependency).
 *
 *   import fc from "fast-check";
 *   it("matches the model", () => checkAgainstModel({ fc, expect, open: () => MyStore.open(...) }));
 */
import { randomUUID } from "node:crypto";
import type fcModule from "fast-check";
import type { expect as Expect } from "vitest";
import { MemorySessionStore } from "../store/memory-store.js";
import type { SessionStore } from "../store/session-store.js";
import { session, startAttempt, stream } from "./store-records.js";

export interface ModelCheckOptions {
  readonly fc: typeof fcModule;
  readonly expect: typeof Expect;
  /** A fresh store for one run (fresh ids are used in every run, so one database may serve all). */
  readonly open: () => Promise<SessionStore>;
  /** Closes `store` and opens the same durable state again; without it, reopenings are skipped. */
  readonly reopen?: (store: SessionStore) => Promise<SessionStore>;
  /** Payload sizes are drawn below and from this size up to three times it (default 256). */
  readonly threshold?: number;
  /** Appends issued together at most, per log write step (default 4). */
  readonly maxBurst?: number;
  readonly numRuns?: number;
}

type Op =
  | { kind: "input"; sizes: number[] }
  | { kind: "output"; sizes: number[] }
  | { kind: "reopen" }
  | { kind: "readInput"; from: number; span: number }
  | { kind: "readOutput"; from: number; limit: number; maxBytes: number };

/** Deterministic bytes, different for every write. */
let counter = 0;
function bytes(size: number): Uint8Array {
  counter++;
  return Uint8Array.from({ length: size }, (_, i) => (counter * 131 + i * 7) & 0xff);
}

export async function checkAgainstModel(options: ModelCheckOptions): Promise<void> {
  const { fc, expect } = options;
  const threshold = options.threshold ?? 256;
  const sizes = fc.array(fc.oneof(fc.integer({ min: 1, max: threshold - 1 }), fc.integer({ min: threshold, max: 3 * threshold })), {
    minLength: 1,
    maxLength: options.maxBurst ?? 4,
  });
  const op: fcModule.Arbitrary<Op> = fc.oneof(
    { weight: 4, arbitrary: sizes.map((s) => ({ kind: "input" as const, sizes: s })) },
    { weight: 4, arbitrary: sizes.map((s) => ({ kind: "output" as const, sizes: s })) },
    { weight: 1, arbitrary: fc.constant({ kind: "reopen" as const }) },
    {
      weight: 2,
      arbitrary: fc.record({ kind: fc.constant("readInput" as const), from: fc.nat(4000), span: fc.integer({ min: 1, max: 4000 }) }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant("readOutput" as const),
        from: fc.nat(20),
        limit: fc.integer({ min: 1, max: 8 }),
        maxBytes: fc.integer({ min: 1, max: 2000 }),
      }),
    },
  );
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), async (ops) => {
      let real = await options.open();
      const model = new MemorySessionStore();
      const s = session({ idempotencyKey: randomUUID() });
      const input = stream(s.sessionId, "input");
      const output = stream(s.sessionId, "output", { elementKind: "binary" });
      const attempt = startAttempt(s);
      const both = async (run: (store: SessionStore) => Promise<unknown>) => Promise.all([run(real), run(model)]);
      try {
        await both((store) => store.createSession(s, [input, output], attempt));
        let inputCount = 0n;
        let outputCount = 0n;
        for (const step of ops) {
          switch (step.kind) {
            case "input": {
              // Issued together: one group commit where the store has one.
              const chunks = step.sizes.map((size) => {
                const chunk = {
                  streamId: input.streamId,
                  sequence: inputCount,
                  itemCount: BigInt(size),
                  data: bytes(size),
                  mimeType: undefined,
                };
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
              if (options.reopen !== undefined) real = await options.reopen(real);
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
    { numRuns: options.numRuns ?? 40 },
  );
}
