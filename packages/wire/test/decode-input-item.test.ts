/**
 * The canonical input item shortcut (src/decode-input-item.ts) answers only
 * for text the full decoder accepts, with the message the full decoder
 * gives, and it does answer for what client encoders write. The full
 * decoder is reached with a leading space, which changes nothing else about
 * a JSON text.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type ClientMessage, decodeClientMessage, encodeClientMessage, LIMITS, U64_MAX } from "../src/index.js";
import { decodeCanonicalInputItem } from "../src/decode-input-item.js";
import { channel, schemaValue, u64 } from "./support/arbitraries.js";

const inputItem = fc
  .record({ channel, sequence: u64.filter((s) => s < U64_MAX), value: schemaValue })
  .map((m): ClientMessage => ({ type: "inputStreamItem", ...m }));

/** What the full decoder says: the message, or the error's code. */
function full(text: string): ClientMessage | string {
  try {
    return decodeClientMessage(` ${text}`, false);
  } catch (error) {
    return (error as { code: string }).code;
  }
}

/** The shortcut may decline anything; when it answers, the full decoder accepts the text and gives the same message. */
function agrees(text: string): void {
  const fast = decodeCanonicalInputItem(text);
  if (fast !== undefined) expect(full(text)).toEqual(fast);
}

const NOISE = ['"', "\\", "{", "}", "[", "]", ",", ":", " ", "0", "1", "9", "-", ".", "e", "a", "\u0000", "\ud800", "é"];

/**
 * Items of a `stream<string>`, read in place when nothing in the text is escaped: texts of
 * characters JSON escapes or refuses raw (quote, backslash, every control character, U+007F
 * beside them), surrogates paired and lone, and long digit runs in the head.
 */
const stringText = fc.oneof(
  fc.string({ unit: fc.constantFrom('"', "\\", "\u0000", "\u001f", " ", "\u007f", "\u2028", "a", "é", "😀", "\ud800", "\udc00") }),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({ unit: "grapheme", maxLength: 40 }),
);
const stringItem = fc
  .record({
    channel,
    sequence: fc.oneof(
      u64.filter((s) => s < U64_MAX),
      fc.bigInt({ min: 0n, max: 1n << 60n }),
    ),
    text: stringText,
  })
  .map(({ channel, sequence, text }) => ({ channel, sequence, value: { kind: "string", value: text } }));

/** The text a client encoder writes for a string item, written by hand so that ill-formed texts can be written too. */
function stringItemText(channel: number, sequence: bigint, text: string): string {
  return `{"channel":${channel},"sequence":"${sequence}","type":"inputStreamItem","value":{"kind":"string","value":${JSON.stringify(text)}},"version":1}`;
}

describe("decodeCanonicalInputItem", () => {
  it("answers for every canonically encoded input item, with the full decoder's message", () => {
    fc.assert(
      fc.property(inputItem, (message) => {
        const text = encodeClientMessage(message) as string;
        const fast = decodeCanonicalInputItem(text);
        expect(fast).toEqual(message);
        expect(full(text)).toEqual(fast);
        // And decodeClientMessage takes it (same answer either way).
        expect(decodeClientMessage(text, false)).toEqual(message);
        expect(decodeClientMessage(new TextEncoder().encode(text), false)).toEqual(message);
      }),
    );
  });

  it("reads a string item in place exactly when the full decoder accepts it, with the same message", () => {
    fc.assert(
      fc.property(stringItem, ({ channel, sequence, value }) => {
        for (const text of [
          stringItemText(channel, sequence, value.value),
          stringItemText(channel, sequence, value.value).replace(/\\u00([01][0-9a-f])/g, (_, hex: string) =>
            String.fromCharCode(Number.parseInt(hex, 16)),
          ),
        ]) {
          const fast = decodeCanonicalInputItem(text);
          const slow = full(text);
          // Answers for every text the full decoder accepts (escaped ones through the parser), never for one it refuses.
          if (typeof slow === "string") expect(fast).toBeUndefined();
          else expect(fast).toEqual(slow);
        }
      }),
      { numRuns: 3000 },
    );
  });

  it("on mutated string items, answers only where the full decoder accepts the same message", () => {
    const mutation = fc.array(fc.tuple(fc.nat(), fc.constantFrom(...NOISE), fc.constantFrom("replace", "insert", "delete")), {
      minLength: 1,
      maxLength: 2,
    });
    fc.assert(
      fc.property(stringItem, mutation, ({ channel, sequence, value }, edits) => {
        let text = stringItemText(channel, sequence, value.value);
        for (const [at, noise, how] of edits) {
          const i = at % (text.length + 1);
          if (how === "insert") text = text.slice(0, i) + noise + text.slice(i);
          else if (how === "delete") text = text.slice(0, i) + text.slice(i + 1);
          else text = text.slice(0, i) + noise + text.slice(i + 1);
        }
        agrees(text);
      }),
      { numRuns: 3000 },
    );
  });

  it("on mutated items, answers only where the full decoder accepts the same message", () => {
    const mutation = fc.array(fc.tuple(fc.nat(), fc.nat(), fc.constantFrom(...NOISE), fc.constantFrom("replace", "insert", "delete")), {
      minLength: 1,
      maxLength: 3,
    });
    fc.assert(
      fc.property(inputItem, mutation, (message, edits) => {
        let text = encodeClientMessage(message) as string;
        for (const [at, length, noise, how] of edits) {
          const i = at % (text.length + 1);
          if (how === "insert") text = text.slice(0, i) + noise + text.slice(i);
          else if (how === "delete") text = text.slice(0, i) + text.slice(i + 1 + (length % 3));
          else text = text.slice(0, i) + noise + text.slice(i + 1);
        }
        agrees(text);
      }),
      { numRuns: 3000 },
    );
  });

  it("declines heads and values the full decoder refuses or spells differently", () => {
    const value = '{"kind":"string","value":"x"}';
    const item = (head: string, v = value, tail = ',"version":1}') => `{"channel":${head}","type":"inputStreamItem","value":${v}${tail}`;
    const declined = [
      item('0,"sequence":"0'), // channel 0
      item('4294967296,"sequence":"0'), // over 2^32 - 1
      item('01,"sequence":"0'),
      item('1.0,"sequence":"0'), // valid JSON, another spelling: the full decoder's to take
      item('1,"sequence":"01'),
      item('1,"sequence":"18446744073709551615'), // sequence + 1 would not fit
      item('1,"sequence":"18446744073709551616'),
      item('1,"sequence":"0', '{"kind":"string","value":"x"},"version":2,"x":{"kind":"a","value":1}'), // a second version
      item('1,"sequence":"0', '{"kind":"string","value":"x"},"channel":2,"y":{"kind":"a","value":1}'), // a duplicate channel
      item('1,"sequence":"0', '{"kind":"string","value":"x","kind":"bool"}'),
      item('1,"sequence":"0', '{"kind":"string","value":"\\ud800"}'),
      item('1,"sequence":"0', '{"kind":"string","value":"a\u0001b"}'), // a raw control character
      item('1,"sequence":"0', '{"kind":"string","value":"a\ud800b"}'), // a raw lone surrogate
      item('1,"sequence":"0', '{"kind":"string","value":"a"b"}'),
      item('1,"sequence":"0', '{"kind":"string","value":"a\\"}'),
      item('1,"sequence":"0', '{"kind":"string","value":"a","value":"b"}'),
      item('1,"sequence":"0', '{"kind":"string"}'),
      item('1,"sequence":"0', '{"kind":"f64","value":1e999}'),
      item('1,"sequence":"0', "[1]"),
      item('1,"sequence":"0', ""),
      item('1,"sequence":"0', value, ',"version":1} '),
    ];
    for (const text of declined) {
      expect(decodeCanonicalInputItem(text)).toBeUndefined();
      agrees(text);
    }
    expect(full(declined[0]!)).toBe("invalid-message");
    expect(full(declined[3]!)).toEqual({ type: "inputStreamItem", channel: 1, sequence: 0n, value: { kind: "string", value: "x" } });
  });

  it("counts the message object in the depth limit", () => {
    const nested = (depth: number) => `{"kind":"list","value":${"[".repeat(depth - 1)}${"]".repeat(depth - 1)}}`;
    const text = (depth: number) => `{"channel":1,"sequence":"0","type":"inputStreamItem","value":${nested(depth)},"version":1}`;
    // The value at the limit less one: the whole message is at the limit.
    expect(decodeCanonicalInputItem(text(LIMITS.maxJsonDepth - 1))).toBeDefined();
    expect(decodeCanonicalInputItem(text(LIMITS.maxJsonDepth))).toBeUndefined();
    expect(full(text(LIMITS.maxJsonDepth))).toBe("limit-exceeded");
    expect(() => decodeClientMessage(text(LIMITS.maxJsonDepth), false)).toThrow(expect.objectContaining({ code: "limit-exceeded" }));
  });

  it("declines a channel or sequence of more digits than a u32 or u64 has, without reading it as a number", () => {
    // An 8 MiB run of digits read as a BigInt takes V8 over a second: a client could spend the server's CPU that way.
    const read: number[] = [];
    const original = globalThis.BigInt;
    globalThis.BigInt = Object.assign((value: string | number | bigint | boolean) => {
      read.push(String(value).length);
      return original(value);
    }, original);
    try {
      for (const [channel, sequence] of [
        ["1", "1".repeat(21)],
        ["1", "1".repeat(100_000)],
        ["1".repeat(11), "1"],
        ["4294967295", "18446744073709551614"],
      ] as const) {
        const text = `{"channel":${channel},"sequence":"${sequence}","type":"inputStreamItem","value":{"kind":"string","value":"x"},"version":1}`;
        const fast = decodeCanonicalInputItem(text);
        if (sequence.length <= 20 && channel.length <= 10)
          expect(fast).toMatchObject({ channel: 4294967295, sequence: 18446744073709551614n });
        else expect(fast).toBeUndefined();
        agrees(text);
      }
    } finally {
      globalThis.BigInt = original;
    }
    expect(Math.max(...read)).toBeLessThanOrEqual(20);
  });
});
