/**
 * An interleaved burst, the shape of a round-trip method's writes: input
 * item, output item, input item, ... of one session, issued together (one
 * group commit), and every read the runtime makes of it compared with
 * `MemorySessionStore` at every range boundary. For stores that pack or
 * regroup appends (the SQLite store, @golem-stream/store-postgres).
 */
import { randomUUID } from "node:crypto";
import type { expect as Expect } from "vitest";
import type { SessionStore } from "../store/session-store.js";
import { bytes, session, startAttempt, stream } from "./store-records.js";

export interface BurstStreams {
  readonly input: { readonly streamId: string };
  readonly output: { readonly streamId: string };
}

/** A session with one input and one output stream, created alike in every store given. */
export async function burstStreams(stores: readonly SessionStore[]): Promise<BurstStreams> {
  const s = session({ idempotencyKey: randomUUID() });
  const input = stream(s.sessionId, "input");
  const output = stream(s.sessionId, "output", { parent: { kind: "result" } });
  const attempt = startAttempt(s);
  for (const store of stores) {
    await store.createSession(s, [input], attempt);
    await store.setResult(s.sessionId, '{"kind":"none"}', [output]);
  }
  return { input, output };
}

/** The value text of item `i`: 9 to 58 bytes, different for every item. */
export const burstItemText = (i: number): string => `"item ${i}${"x".repeat(i % 50)}"`;

/** Items `first .. first + n - 1` on both logs, input and output alternating, issued together. */
export function writeBurst(store: SessionStore, ids: BurstStreams, first: number, n: number): Promise<unknown> {
  const writes: Promise<void>[] = [];
  for (let i = first; i < first + n; i++) {
    const data = bytes(burstItemText(i));
    writes.push(store.acceptInput({ streamId: ids.input.streamId, sequence: BigInt(i), itemCount: 1n, data, mimeType: undefined }, []));
    writes.push(
      store.appendOutput(
        { event: "item", streamId: ids.output.streamId, sequence: BigInt(i), itemCount: 1n, data, mimeType: undefined },
        [],
      ),
    );
  }
  return Promise.all(writes);
}

/**
 * `readInput` over spans of 1, 2, 7 and all from every `step`-th item, and
 * `readOutput` with small and large limits and byte bounds from the same
 * places: `real` answers each exactly as `model` does.
 */
export async function expectSameBurstReads(
  expect: typeof Expect,
  real: SessionStore,
  model: SessionStore,
  ids: BurstStreams,
  n: number,
  step = 1,
): Promise<void> {
  for (let from = 0; from <= n; from += step) {
    for (const span of [1, 2, 7, n + 1]) {
      const range = [ids.input.streamId, BigInt(from), BigInt(from + span)] as const;
      expect(await real.readInput(...range), `readInput ${from} +${span}`).toEqual(await model.readInput(...range));
    }
    for (const [limit, maxBytes] of [
      [1, Infinity],
      [5, Infinity],
      [1000, 200],
      [1000, Infinity],
    ] as const) {
      const args = [ids.output.streamId, BigInt(from), limit, maxBytes] as const;
      expect(await real.readOutput(...args), `readOutput ${from} limit ${limit} maxBytes ${maxBytes}`).toEqual(
        await model.readOutput(...args),
      );
    }
  }
}
