/**
 * A value built in memory may reference one object many times (a DAG): a few
 * objects in memory, and text that doubles with each level that shares. The
 * writers bound their text while they write it, so the work done for such a
 * value is bounded by the limit, never by the text it would have made.
 * Counted, not timed: getters count how often a shared leaf is read.
 */
import { describe, expect, it } from "vitest";
import { LIMITS, ProtocolError, canonicalJson, encodeClientMessage, type JsonValue, type SchemaValueJson } from "../src/index.js";
import { encodeInputStreamItemValue } from "../src/internal.js";
import { outcome, viaParts, viaTable } from "./support/input-item-encodings.js";

/** `levels` of `[x, x]` over `leaf`: 2^levels references to it, in `levels + 1` arrays. */
function shared(leaf: unknown, levels: number): JsonValue {
  let value = leaf;
  for (let i = 0; i < levels; i++) value = [value, value];
  return value as JsonValue;
}

/** A leaf that counts how often the writer reads it: `{"s": text}`. */
function countedLeaf(text: string): { leaf: JsonValue; reads: () => number } {
  let reads = 0;
  const leaf = Object.defineProperty({}, "s", {
    enumerable: true,
    get() {
      reads++;
      return text;
    },
  });
  return { leaf: leaf as JsonValue, reads: () => reads };
}

function refusal(run: () => unknown): ProtocolError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ProtocolError);
    return error as ProtocolError;
  }
  throw new Error("expected a ProtocolError");
}

const KiB64 = "x".repeat(64 * 1024);
const ATTEMPT = "ca7e5a82-2064-4c18-8359-806145c1562f";

function start(config: JsonValue, parameters: JsonValue) {
  return {
    type: "invocationStart" as const,
    attemptId: ATTEMPT,
    config: [{ path: ["a"], value: config }],
    idempotencyKey: "k",
    methodParameters: { kind: "x", value: parameters },
    selector: { agentType: "a", application: "b", constructorParameters: { kind: "x", value: 1 }, environment: "e", method: "m" },
  };
}

describe("canonicalJson of a value that shares objects", () => {
  it("stops as soon as its text passes maxBytes, having read the shared leaf only as often as fits", () => {
    // 1024 references to one 64 KiB string: 64 MiB of text. 8 MiB hold fewer than 128 of them.
    const { leaf, reads } = countedLeaf(KiB64);
    const error = refusal(() => canonicalJson(shared(leaf, 10)));
    expect(error.code).toBe("limit-exceeded");
    expect(reads()).toBeLessThanOrEqual(2 * 128);
  });

  it("takes maxBytes as the bound, exactly, in UTF-8 bytes", () => {
    const value = shared(1, 3); // [[[1,1],[1,1]],[[1,1],[1,1]]]
    const text = canonicalJson(value);
    expect(canonicalJson(value, { maxBytes: text.length })).toBe(text);
    expect(refusal(() => canonicalJson(value, { maxBytes: text.length - 1 })).code).toBe("limit-exceeded");
    // Three bytes for one UTF-16 unit: the units fit, the bytes do not.
    expect(canonicalJson("€", { maxBytes: 5 })).toBe('"€"');
    expect(refusal(() => canonicalJson("€", { maxBytes: 4 })).code).toBe("limit-exceeded");
    const { leaf, reads } = countedLeaf("y");
    expect(refusal(() => canonicalJson(shared(leaf, 16), { maxBytes: 1024 })).code).toBe("limit-exceeded");
    expect(reads()).toBeLessThan(2 * 1024);
  });

  it("refuses a maxBytes that is not a non-negative integer as the caller's bug, never as no bound", () => {
    for (const options of [{ maxBytes: Number.NaN }, { maxBytes: -1 }, { maxBytes: 1.5 }, { maxBytes: "8" }, "big", 7]) {
      expect(refusal(() => canonicalJson([], options as never)).code).toBe("internal-error");
    }
    expect(canonicalJson([], null as never)).toBe("[]");
    expect(canonicalJson([], {})).toBe("[]");
  });
});

describe("message encoders given a value that shares objects", () => {
  it("refuse it as too large for a message, having read the shared leaf only as often as fits in one", () => {
    const { leaf, reads } = countedLeaf(KiB64);
    const error = refusal(() => encodeClientMessage(start(1, shared(leaf, 10))));
    expect([error.code, error.path]).toEqual(["limit-exceeded", ""]);
    expect(reads()).toBeLessThanOrEqual(2 * 128);
  });

  it("bound the walk over configuration values by the text limit: each value visited is at least a byte of it", () => {
    // 2^23 references to 1: 2^24 - 1 values to visit, more than a message has bytes.
    const error = refusal(() => encodeClientMessage(start(shared(1, 23), 1)));
    expect([error.code, error.path]).toEqual(["limit-exceeded", "config[0].value"]);
    expect(2 ** 24 - 1).toBeGreaterThan(LIMITS.maxTextMessageBytes);
  });

  it("give the same answer for an input item's value in parts as for the whole message", () => {
    const { leaf, reads } = countedLeaf(KiB64);
    const value = { kind: "x", value: shared(leaf, 10) } as SchemaValueJson;
    const parts = outcome(viaParts(3, 7n, value));
    expect(parts).toBe(outcome(viaTable(3, 7n, value)));
    expect(parts).toMatch(/^limit-exceeded /);
    // Two encodings, each reading the leaf twice for each of the fewer than 128 references that fit.
    expect(reads()).toBeLessThanOrEqual(2 * 2 * 128);
    expect(() => encodeInputStreamItemValue(3, 7n, value)).toThrow(expect.objectContaining({ code: "limit-exceeded" }));
  });
});
