/**
 * The canonical output item shortcut (src/decode-output-item.ts) answers
 * only for text the full decoder accepts, with the message the full decoder
 * gives, and it does answer for what the server's encoders write for an item
 * introducing no stream. The full decoder is reached with a leading space,
 * which changes nothing else about a JSON text.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeServerMessage, encodeServerMessage, LIMITS, type ServerMessage, U64_MAX } from "../src/index.js";
import { encodeOutputStreamItemWithCanonicalValue } from "../src/internal.js";
import { canonicalJson } from "../src/canonical-json.js";
import { decodeCanonicalOutputItem } from "../src/decode-output-item.js";
import { channel, outputStreamItem, schemaValue, token, u64 } from "./support/arbitraries.js";

/** Items introducing no stream, with tokens of any visible ASCII (a quote or backslash is escaped: the full decoder's). */
const plainItem = fc
  .record({ channel, cursorToken: token, sequence: u64.filter((s) => s < U64_MAX), value: schemaValue })
  .map((m): ServerMessage => ({ type: "outputStreamItem", mappings: [], ...m }));

/** What the full decoder says: the message, or the error's code. */
function full(text: string): ServerMessage | string {
  try {
    return decodeServerMessage(` ${text}`, false);
  } catch (error) {
    return (error as { code: string }).code;
  }
}

/** The shortcut may decline anything; when it answers, the full decoder accepts the text and gives the same message. */
function agrees(text: string): void {
  const fast = decodeCanonicalOutputItem(text);
  if (fast !== undefined) expect(full(text)).toEqual(fast);
}

const NOISE = ['"', "\\", "{", "}", "[", "]", ",", ":", " ", "0", "1", "9", "-", ".", "e", "a", "\u0000", "\ud800", "é", "\u007f"];

const stringText = fc.oneof(
  fc.string({ unit: fc.constantFrom('"', "\\", "\u0000", "\u001f", " ", "\u007f", "\u2028", "a", "é", "😀", "\ud800", "\udc00") }),
  fc.string({ unit: "binary", maxLength: 40 }),
);

/** The text a server writes for a string item, written by hand so that ill-formed texts and tokens can be written too. */
function stringItemText(channel: number, token: string, sequence: bigint, text: string): string {
  return `{"channel":${channel},"cursorToken":"${token}","mappings":[],"sequence":"${sequence}","type":"outputStreamItem","value":{"kind":"string","value":${JSON.stringify(text)}},"version":1}`;
}

function mutate(text: string, edits: readonly (readonly [number, number, string, "replace" | "insert" | "delete"])[]): string {
  for (const [at, length, noise, how] of edits) {
    const i = at % (text.length + 1);
    if (how === "insert") text = text.slice(0, i) + noise + text.slice(i);
    else if (how === "delete") text = text.slice(0, i) + text.slice(i + 1 + (length % 3));
    else text = text.slice(0, i) + noise + text.slice(i + 1);
  }
  return text;
}
const edits = fc.array(
  fc.tuple(fc.nat(), fc.nat(), fc.constantFrom(...NOISE), fc.constantFrom("replace" as const, "insert" as const, "delete" as const)),
  {
    minLength: 1,
    maxLength: 3,
  },
);

describe("decodeCanonicalOutputItem", () => {
  it("answers for every canonically encoded item introducing no stream (tokens JSON writes as they are), with the full decoder's message", () => {
    fc.assert(
      fc.property(plainItem, (message) => {
        const text = encodeServerMessage(message as never);
        const item = message as Extract<ServerMessage, { type: "outputStreamItem" }>;
        const fast = decodeCanonicalOutputItem(text);
        if (/["\\]/.test(item.cursorToken)) expect(fast).toBeUndefined();
        else expect(fast).toEqual(message);
        expect(full(text)).toEqual(message);
        // decodeServerMessage gives the same answer for text and bytes, either way.
        expect(decodeServerMessage(text, false)).toEqual(message);
        expect(decodeServerMessage(new TextEncoder().encode(text), false)).toEqual(message);
        // The server's own writer of the same item (the value as its canonical bytes) is read the same way.
        const { value, type: _type, ...head } = item;
        const sent = encodeOutputStreamItemWithCanonicalValue(
          { type: "outputStreamItem", ...head },
          new TextEncoder().encode(canonicalJson(value as never)),
        );
        expect(sent).toBe(text);
      }),
    );
  });

  it("declines every item that introduces streams; the full decoder takes it", () => {
    fc.assert(
      fc.property(outputStreamItem, (message) => {
        const text = encodeServerMessage(message);
        if (message.mappings.length > 0) expect(decodeCanonicalOutputItem(text)).toBeUndefined();
        else agrees(text);
        expect(decodeServerMessage(text, false)).toEqual(message);
      }),
    );
  });

  it("reads a string item in place exactly when the full decoder accepts it, with the same message", () => {
    fc.assert(
      fc.property(channel, token, fc.oneof(u64, fc.bigInt({ min: 0n, max: 1n << 60n })), stringText, (ch, cursor, sequence, value) => {
        const escaped = stringItemText(ch, cursor, sequence, value);
        const raw = escaped.replace(/\\u00([01][0-9a-f])/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
        for (const text of [escaped, raw]) {
          const fast = decodeCanonicalOutputItem(text);
          const slow = full(text);
          if (typeof slow === "string") expect(fast).toBeUndefined();
          else if (/["\\]/.test(cursor) || sequence >= U64_MAX) expect(fast).toBeUndefined();
          else expect(fast).toEqual(slow);
        }
      }),
      { numRuns: 3000 },
    );
  });

  it("on mutated items, answers only where the full decoder accepts the same message", () => {
    fc.assert(
      fc.property(channel, token, u64, stringText, edits, (ch, cursor, sequence, value, changes) => {
        agrees(mutate(stringItemText(ch, cursor, sequence, value), changes));
      }),
      { numRuns: 3000 },
    );
    fc.assert(
      fc.property(plainItem, edits, (message, changes) => {
        agrees(mutate(encodeServerMessage(message as never), changes));
      }),
      { numRuns: 3000 },
    );
  });

  it("declines heads and values the full decoder refuses or spells differently", () => {
    const value = '{"kind":"string","value":"x"}';
    const item = (channel: string, cursor = "gai1_abc", mappings = "[]", sequence = "0", v = value, tail = ',"version":1}') =>
      `{"channel":${channel},"cursorToken":"${cursor}","mappings":${mappings},"sequence":"${sequence}","type":"outputStreamItem","value":${v}${tail}`;
    const declined = [
      item("0"), // channel 0
      item("4294967296"), // over 2^32 - 1
      item("01"),
      item("1.0"), // valid JSON, another spelling: the full decoder's to take
      item("1", ""), // an empty token
      item("1", "a".repeat(LIMITS.maxTokenBytes + 1)),
      item("1", "a b"),
      item("1", "a\u007fb"),
      item("1", "a\\u0041b"), // an escape: the full decoder's
      item("1", "gai1_abc", '[{"channel":2,"streamToken":"t","provisionalRef":"r"}]'),
      item("1", "gai1_abc", "[ ]"),
      item("1", "gai1_abc", "[]", "01"),
      item("1", "gai1_abc", "[]", "18446744073709551615"), // sequence + 1 would not fit
      item("1", "gai1_abc", "[]", "18446744073709551616"),
      item("1", "gai1_abc", "[]", "0", '{"kind":"string","value":"x"},"version":2,"x":{"kind":"a","value":1}'), // a second version
      item("1", "gai1_abc", "[]", "0", '{"kind":"string","value":"x"},"channel":2,"y":{"kind":"a","value":1}'), // a duplicate channel
      item("1", "gai1_abc", "[]", "0", '{"kind":"string","value":"x","kind":"bool"}'),
      item("1", "gai1_abc", "[]", "0", '{"kind":"string","value":"\\ud800"}'),
      item("1", "gai1_abc", "[]", "0", '{"kind":"string","value":"a\u0001b"}'),
      item("1", "gai1_abc", "[]", "0", '{"kind":"string","value":"a\ud800b"}'),
      item("1", "gai1_abc", "[]", "0", '{"kind":"string","value":"a"b"}'),
      item("1", "gai1_abc", "[]", "0", '{"kind":"string"}'),
      item("1", "gai1_abc", "[]", "0", '{"kind":"f64","value":1e999}'),
      item("1", "gai1_abc", "[]", "0", "[1]"),
      item("1", "gai1_abc", "[]", "0", ""),
      item("1", "gai1_abc", "[]", "0", value, ',"version":1} '),
    ];
    for (const text of declined) {
      expect(decodeCanonicalOutputItem(text)).toBeUndefined();
      agrees(text);
    }
    expect(full(declined[0]!)).toBe("invalid-message");
    expect(full(declined[5]!)).toBe("limit-exceeded");
    expect(full(declined[3]!)).toEqual({
      type: "outputStreamItem",
      channel: 1,
      cursorToken: "gai1_abc",
      mappings: [],
      sequence: 0n,
      value: { kind: "string", value: "x" },
    });
    expect(full(declined[8]!)).toMatchObject({ cursorToken: "a\\u0041b".replace("\\u0041", "A") });
    // A token of exactly the limit is read in place.
    expect(decodeCanonicalOutputItem(item("1", "a".repeat(LIMITS.maxTokenBytes)))).toMatchObject({
      cursorToken: "a".repeat(LIMITS.maxTokenBytes),
    });
  });

  it("counts the message object in the depth limit", () => {
    const nested = (depth: number) => `{"kind":"list","value":${"[".repeat(depth - 1)}${"]".repeat(depth - 1)}}`;
    const text = (depth: number) =>
      `{"channel":1,"cursorToken":"t","mappings":[],"sequence":"0","type":"outputStreamItem","value":${nested(depth)},"version":1}`;
    expect(decodeCanonicalOutputItem(text(LIMITS.maxJsonDepth - 1))).toBeDefined();
    expect(decodeCanonicalOutputItem(text(LIMITS.maxJsonDepth))).toBeUndefined();
    expect(full(text(LIMITS.maxJsonDepth))).toBe("limit-exceeded");
    expect(() => decodeServerMessage(text(LIMITS.maxJsonDepth), false)).toThrow(expect.objectContaining({ code: "limit-exceeded" }));
  });
});
