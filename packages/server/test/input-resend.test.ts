/** `sameInput` against a naive reference: accepted bytes split into arbitrary chunks, resends of arbitrary ranges. */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { sameInput } from "../src/invocation/input-resend.js";
import type { InputChunk } from "../src/store/session-store.js";

/** Splits `bytes` into chunks at `cuts` (as the store holds them). */
function chunked(bytes: Uint8Array, cuts: number[]): InputChunk[] {
  const bounds = [...new Set([0, ...cuts.map((c) => c % (bytes.length + 1)), bytes.length])].sort((a, b) => a - b);
  const chunks: InputChunk[] = [];
  for (let i = 0; i + 1 < bounds.length; i++) {
    const [from, to] = [bounds[i]!, bounds[i + 1]!];
    if (to > from)
      chunks.push({
        streamId: "s",
        sequence: BigInt(from),
        itemCount: BigInt(to - from),
        data: bytes.slice(from, to),
        mimeType: undefined,
      });
  }
  return chunks;
}

/** What the store's range query returns for `[from, to)`. */
function overlapping(chunks: readonly InputChunk[], from: bigint, to: bigint): InputChunk[] {
  return chunks.filter((c) => c.sequence < to && c.sequence + c.itemCount > from);
}

describe("sameInput (packed u8)", () => {
  it("agrees with comparing the accepted bytes directly", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 1, maxLength: 64 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        fc.nat(),
        fc.nat(),
        fc.boolean(),
        fc.nat(),
        (accepted, cuts, a, b, mutate, at) => {
          const from = a % accepted.length;
          const to = from + 1 + (b % (accepted.length - from));
          const resent = accepted.slice(from, to);
          if (mutate) resent[at % resent.length] = (resent[at % resent.length]! + 1) & 0xff;
          const chunks = chunked(accepted, cuts);
          const verdict = sameInput(overlapping(chunks, BigInt(from), BigInt(to)), BigInt(from), BigInt(to), resent, true, undefined);
          expect(verdict).toBe(!mutate);
        },
      ),
    );
  });

  it("a range the store does not fully hold is not the same", () => {
    const chunks = chunked(new Uint8Array([1, 2, 3, 4]), [2]);
    // Only the second chunk is given: the first two bytes are missing.
    expect(sameInput([chunks[1]!], 0n, 4n, new Uint8Array([1, 2, 3, 4]), true, undefined)).toBe(false);
  });
});

describe("sameInput (one item)", () => {
  const item = (data: number[], mimeType?: string): InputChunk => ({
    streamId: "s",
    sequence: 5n,
    itemCount: 1n,
    data: new Uint8Array(data),
    mimeType,
  });
  it("compares bytes and MIME type", () => {
    expect(sameInput([item([1, 2], "a/b")], 5n, 6n, new Uint8Array([1, 2]), false, "a/b")).toBe(true);
    expect(sameInput([item([1, 2], "a/b")], 5n, 6n, new Uint8Array([1, 2]), false, undefined)).toBe(false);
    expect(sameInput([item([1, 2])], 5n, 6n, new Uint8Array([1, 3]), false, undefined)).toBe(false);
    expect(sameInput([], 5n, 6n, new Uint8Array([1]), false, undefined)).toBe(false);
  });
});
