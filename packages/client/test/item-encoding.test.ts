/**
 * The transport's fast path for input items (src/item-encoding.ts) must be
 * byte-identical to the checked encoder for every message it frames, and
 * must fall back to it (same bytes, same errors) for anything it did not check.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CHANNEL_MAX, LIMITS, ProtocolError, U64_MAX, encodeMessage, type JsonValue, type SchemaValueJson } from "@golem-stream/wire";
import {
  CheckedInputItem,
  checkInputItem,
  checkedItemLength,
  encodeClientMessage,
  framesCheckedItems,
  senderFor,
} from "../src/item-encoding.js";

const json = fc.jsonValue({ maxDepth: 4, stringUnit: "grapheme" }) as fc.Arbitrary<JsonValue>;
const value = fc.record({ kind: fc.string({ maxLength: 12, unit: "grapheme" }), value: json }) as fc.Arbitrary<SchemaValueJson>;
const channel = fc.oneof(fc.integer({ min: 1, max: 9 }), fc.integer({ min: 1, max: CHANNEL_MAX }));
/** Where a decimal gains a digit, and where a double stops being exact. */
const digitEdges = [
  ...Array.from({ length: 19 }, (_, k) => 10n ** BigInt(k + 1)).flatMap((p) => [p - 1n, p]),
  2n ** 53n - 1n,
  2n ** 53n,
  2n ** 53n + 1n,
];
const sequence = fc.oneof(
  fc.bigInt({ min: 0n, max: 20n }),
  fc.bigInt({ min: 0n, max: U64_MAX - 1n }),
  fc.constant(U64_MAX - 1n),
  fc.constantFrom(...digitEdges),
);

const item = (channelNumber: number, sequenceNumber: bigint, itemValue: SchemaValueJson) =>
  ({ type: "inputStreamItem", channel: channelNumber, sequence: sequenceNumber, value: itemValue }) as const;

/** The message the feeder sends for a value it checked at (1, 0) and now sends on `channel` at `sequence`. */
const checked = (channelNumber: number, sequenceNumber: bigint, itemValue: SchemaValueJson) =>
  new CheckedInputItem(channelNumber, sequenceNumber, checkInputItem(1, 0n, itemValue));

/** What a call throws, as comparable data (or "ok"). */
function outcome(encode: () => unknown): string {
  try {
    encode();
    return "ok";
  } catch (error) {
    return error instanceof ProtocolError ? `${error.code} ${error.path} ${error.message}` : `not a ProtocolError: ${String(error)}`;
  }
}

describe("input item encoding, checked once", () => {
  it("frames a checked value byte-identically to encodeMessage, on any channel and sequence", () => {
    fc.assert(
      fc.property(value, channel, sequence, channel, sequence, (v, checkedChannel, checkedSequence, sendChannel, sendSequence) => {
        const text = checkInputItem(checkedChannel, checkedSequence, v);
        expect(checkedItemLength(checkedChannel, checkedSequence, text)).toBe(
          encodeMessage(item(checkedChannel, checkedSequence, v)).length,
        );
        const message = new CheckedInputItem(sendChannel, sendSequence, text);
        expect(message.framed()).toBeDefined();
        expect(encodeClientMessage(message)).toBe(encodeMessage(item(sendChannel, sendSequence, v)));
        // What a transport that encodes messages itself sees: the same value, and the same bytes.
        expect(message.value).toEqual(v);
        expect(encodeMessage(item(message.channel, message.sequence, message.value))).toBe(
          encodeMessage(item(sendChannel, sendSequence, v)),
        );
        expect(encodeMessage(message)).toBe(encodeMessage(item(sendChannel, sendSequence, v)));
      }),
      { numRuns: 500 },
    );
  });

  it("a transport of one's own is sent a plain message: spreading, cloning or listing it keeps the value; this package's get the checked item", () => {
    const v: SchemaValueJson = { kind: "record", value: { fields: [{ kind: "string", value: "a" }] } } as unknown as SchemaValueJson;
    const sent: unknown[] = [];
    const connection = { send: (message: unknown) => void sent.push(message), pause() {}, resume() {}, close() {} };
    senderFor(connection)(checked(3, 7n, v));
    const [message] = sent as Record<string, unknown>[];
    expect(message).not.toBeInstanceOf(CheckedInputItem);
    expect({ ...message }).toEqual(item(3, 7n, v));
    expect(structuredClone(message)).toEqual(item(3, 7n, v));
    expect(Object.keys(message!).sort()).toEqual(["channel", "sequence", "type", "value"]);
    const other = { type: "inputStreamEnd", channel: 3, sequence: 8n } as const;
    senderFor(connection)(other);
    expect(sent[1]).toBe(other);
    const ours = framesCheckedItems({ ...connection });
    senderFor(ours)(checked(3, 7n, v));
    expect(sent[2]).toBeInstanceOf(CheckedInputItem);
  });

  it("a message that is not a CheckedInputItem takes the checked path: same bytes, same errors", () => {
    fc.assert(
      fc.property(value, channel, sequence, (v, c, s) => {
        checkInputItem(1, 0n, v);
        expect(encodeClientMessage(item(c, s, v))).toBe(encodeMessage(item(c, s, v)));
      }),
      { numRuns: 100 },
    );
    const loneSurrogate = { kind: "string", value: "\ud800" } as SchemaValueJson;
    expect(outcome(() => encodeClientMessage(item(1, 0n, loneSurrogate)))).toBe(outcome(() => encodeMessage(item(1, 0n, loneSurrogate))));
    expect(outcome(() => encodeClientMessage(item(1, 0n, loneSurrogate)))).not.toBe("ok");
  });

  it("refuses what the checked path refuses", () => {
    const bad: SchemaValueJson[] = [
      { kind: "string", value: "\udc00" } as SchemaValueJson,
      { kind: 7, value: 1 } as unknown as SchemaValueJson,
      { kind: "f64", value: Number.NaN } as unknown as SchemaValueJson,
      { kind: "x" } as unknown as SchemaValueJson,
    ];
    for (const v of bad) {
      const expected = outcome(() => encodeMessage(item(1, 0n, v)));
      expect(expected).not.toBe("ok");
      expect(outcome(() => checkInputItem(1, 0n, v))).toBe(expected);
      expect(outcome(() => encodeClientMessage(item(1, 0n, v)))).toBe(expected);
    }
  });

  it("a checked value sent with an invalid channel or sequence fails exactly as encodeMessage does", () => {
    const v: SchemaValueJson = { kind: "string", value: "ok" };
    const wrong: [number, bigint][] = [
      [0, 0n],
      [CHANNEL_MAX + 1, 0n],
      [1.5, 0n],
      [Number.NaN, 0n],
      [1, -1n],
      [1, U64_MAX], // no room for the item
      [1, U64_MAX + 1n],
    ];
    for (const [c, s] of wrong) {
      const expected = outcome(() => encodeMessage(item(c, s, v)));
      expect(expected).not.toBe("ok");
      expect(outcome(() => encodeClientMessage(checked(c, s, v)))).toBe(expected);
    }
    const notBigint = { type: "inputStreamItem", channel: 1, sequence: 0, value: v } as unknown as Parameters<typeof encodeMessage>[0];
    expect(outcome(() => encodeClientMessage(checked(1, 0 as unknown as bigint, v)))).toBe(outcome(() => encodeMessage(notBigint)));
  });

  it("a value long enough to reach the text limit on another channel is not framed: the checked path encodes it", () => {
    const long: SchemaValueJson = { kind: "string", value: "é".repeat(Math.floor((LIMITS.maxTextMessageBytes - 128) / 3)) };
    const message = checked(CHANNEL_MAX, U64_MAX - 1n, long);
    expect(message.framed()).toBeUndefined();
    expect(encodeClientMessage(message)).toBe(encodeMessage(item(CHANNEL_MAX, U64_MAX - 1n, long)));
    const short: SchemaValueJson = { kind: "string", value: "é".repeat(1000) };
    expect(checked(CHANNEL_MAX, U64_MAX - 1n, short).framed()).toBe(encodeMessage(item(CHANNEL_MAX, U64_MAX - 1n, short)));
  });

  it("other messages are encoded by encodeMessage unchanged", () => {
    const end = { type: "inputStreamEnd", channel: 3, sequence: 9n } as const;
    expect(encodeClientMessage(end)).toBe(encodeMessage(end));
    const batch = { type: "input-u8", channel: 2, sequence: 5n, payload: new Uint8Array([1, 2, 3]) } as const;
    expect(encodeClientMessage(batch)).toEqual(encodeMessage(batch));
  });
});
