/**
 * The 8 MiB text limit applied by the encoders that build a message from
 * parts (`encodeOutputStreamItemWithCanonicalValue`, `encodeInputStreamItemValue`)
 * at the same byte as the whole-message encoders. Pure, but each case
 * encodes several 8 MiB messages (the protocol's fixed limit): seconds on a
 * loaded machine, so these run with the end-to-end tests, one package at a
 * time (vitest.shared.ts).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  CHANNEL_MAX,
  LIMITS,
  ProtocolError,
  U64_MAX,
  canonicalJson,
  encodeServerMessage,
  encodeUtf8,
  type JsonValue,
  type OutputStreamItem,
  type OutputStreamItemHead,
  type SchemaValueJson,
} from "../src/index.js";
import {
  INPUT_ITEM_TAIL,
  encodeInputStreamItemValue,
  encodeOutputStreamItemWithCanonicalValue,
  inputStreamItemHead,
} from "../src/internal.js";
import { outcome, viaParts, viaTable } from "./support/input-item-encodings.js";
import { outputStreamItem } from "./support/arbitraries.js";

function split(message: OutputStreamItem): { head: OutputStreamItemHead; stored: Uint8Array } {
  const { value, ...head } = message;
  // What a server stores when it records the value.
  return { head, stored: encodeUtf8(canonicalJson(value as unknown as JsonValue)) };
}

/** The call's result, or the ProtocolError it threw as a plain record (anything else fails the test). */
function outcomeOf(encode: () => string | Uint8Array): unknown {
  try {
    return encode();
  } catch (error) {
    if (!(error instanceof ProtocolError)) throw error;
    return { code: error.code, message: error.message, path: error.path };
  }
}

describe("encodeOutputStreamItemWithCanonicalValue", () => {
  it("applies the text limit at the same byte, whatever the value's characters", () => {
    const max = LIMITS.maxTextMessageBytes;
    fc.assert(
      fc.property(outputStreamItem, fc.constantFrom("a", "é", "€", "😀"), fc.integer({ min: -4, max: 4 }), (message, unit, over) => {
        const unitBytes = encodeUtf8(unit).length;
        const envelope = encodeUtf8(encodeServerMessage({ ...message, value: { kind: "s", value: "" } })).length;
        const target = max + over; // the message's size in bytes, give or take one unit
        const units = Math.floor((target - envelope) / unitBytes);
        const value: SchemaValueJson = { kind: "s", value: unit.repeat(units) };
        const whole = { ...message, value };
        const { head, stored } = split(whole);
        const expected = outcomeOf(() => encodeServerMessage(whole));
        const actual = outcomeOf(() => encodeOutputStreamItemWithCanonicalValue(head, stored));
        // Compared as they are: an 8 MiB string, or the error.
        expect(actual === expected || (typeof actual !== "string" && JSON.stringify(actual) === JSON.stringify(expected))).toBe(true);
        // Both sides of the limit are reached.
        return envelope + units * unitBytes <= max === (typeof expected === "string");
      }),
      { numRuns: 24, endOnFailure: true }, // shrinking 8 MiB values takes minutes
    );
  });
});

describe("encodeInputStreamItemValue", () => {
  it("applies the 8 MiB text limit to the whole message, counting UTF-8 bytes", () => {
    const max = LIMITS.maxTextMessageBytes;
    const frame = (c: number, s: bigint) => inputStreamItemHead(c, s).length + INPUT_ITEM_TAIL.length;
    // The characters of `{"kind":"s","value":"…"}` around the string.
    const around = '{"kind":"s","value":""}'.length;
    for (const [c, s] of [
      [1, 0n],
      [CHANNEL_MAX, U64_MAX - 1n],
    ] as const) {
      const room = max - frame(c, s) - around;
      for (const text of [
        "a".repeat(room),
        "a".repeat(room + 1),
        "é".repeat(Math.floor(room / 2)),
        "é".repeat(Math.floor(room / 2)) + "a".repeat((room % 2) + 1),
        "\u{1F600}".repeat(Math.floor(room / 4)),
      ]) {
        const v = { kind: "s", value: text } as SchemaValueJson;
        const expected = outcome(viaTable(c, s, v));
        expect(outcome(viaParts(c, s, v))).toBe(expected);
      }
      expect(outcome(viaTable(c, s, { kind: "s", value: "a".repeat(room) } as SchemaValueJson)).startsWith("ok")).toBe(true);
      expect(outcome(viaTable(c, s, { kind: "s", value: "a".repeat(room + 1) } as SchemaValueJson))).toMatch(/^limit-exceeded/);
    }
  });
});
