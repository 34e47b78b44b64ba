/**
 * `canonicalStringNodeText` hands out the canonical text of the string node
 * the wire last read in place, and `canonicalStringNodeBytes` its UTF-8 as a
 * view of the message's bytes. Whatever was decoded before, and whatever they
 * are asked, their answer is undefined or exactly canonical JSON's text (or
 * its UTF-8) for a string node with the text asked about.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalJson, decodeClientMessage, encodeClientMessage } from "../src/index.js";
import { canonicalStringNodeBytes, canonicalStringNodeText, isAsciiStringNodeText } from "../src/internal.js";
import { MAX_REMEMBERED_MESSAGE_CHARS } from "../src/string-node-text.js";

const text = fc.oneof(
  fc.string({ unit: fc.constantFrom('"', "\\", "\u0000", "\u001f", " ", "\u007f", "\u2028", "a", "é", "😀") }),
  fc.string({ unit: "grapheme", maxLength: 40 }),
  fc.constantFrom("", "x", "xx"),
);

/** A client's text message carrying a string item, decoded as a server decodes it (text or bytes); the bytes if it came as bytes. */
function decodeItem(value: string, asBytes: boolean): Uint8Array | undefined {
  const message = encodeClientMessage({ type: "inputStreamItem", channel: 1, sequence: 7n, value: { kind: "string", value } }) as string;
  const bytes = asBytes ? new TextEncoder().encode(message) : undefined;
  decodeClientMessage(bytes ?? message, false);
  return bytes;
}

const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);

describe("canonicalStringNodeText", () => {
  it("answers only with canonical JSON's text for the node asked about, whatever was decoded before", () => {
    const step = fc.oneof(
      fc.record({ decode: text, asBytes: fc.boolean() }),
      fc.record({ ask: text }),
      // The text just decoded, asked as an equal string built afresh.
      fc.record({ askLast: fc.constant(true) }),
      fc.record({ askAscii: text }),
      fc.record({ askBytes: text }),
      fc.record({ askLastBytes: fc.constant(true) }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 12 }), (steps) => {
        let last = "";
        for (const s of steps) {
          if ("decode" in s) {
            decodeItem(s.decode, s.asBytes);
            last = s.decode;
            continue;
          }
          if ("askAscii" in s) {
            // Only ever true for a text whose UTF-8 is one byte per character.
            if (isAsciiStringNodeText(s.askAscii)) expect(new TextEncoder().encode(s.askAscii).length).toBe(s.askAscii.length);
            continue;
          }
          if ("askBytes" in s || "askLastBytes" in s) {
            const asked = "askBytes" in s ? s.askBytes : [...last].join("");
            const answer = canonicalStringNodeBytes(asked);
            if (answer !== undefined) expect(answer).toEqual(utf8(canonicalJson({ kind: "string", value: asked })));
            continue;
          }
          const asked = "ask" in s ? s.ask : [...last].join("");
          const answer = canonicalStringNodeText(asked);
          if (answer !== undefined) expect(answer).toBe(canonicalJson({ kind: "string", value: asked }));
        }
      }),
      { numRuns: 2000 },
    );
  });

  it("answers for the item just read in place, once, and not for an escaped or too large one", () => {
    decodeItem("hello é😀", true);
    expect(canonicalStringNodeText("hello")).toBeUndefined();
    expect(canonicalStringNodeText("hello é😀")).toBe('{"kind":"string","value":"hello é😀"}');
    // The first answer lets go of the message.
    expect(canonicalStringNodeText("hello é😀")).toBeUndefined();
    // A text with an escape goes through the strict parser: nothing is kept.
    decodeItem('a"b', false);
    expect(canonicalStringNodeText('a"b')).toBeUndefined();
    // A message over the bound is not kept alive.
    const large = "x".repeat(MAX_REMEMBERED_MESSAGE_CHARS);
    decodeItem(large, false);
    expect(canonicalStringNodeText(large)).toBeUndefined();
    const fits = "x".repeat(MAX_REMEMBERED_MESSAGE_CHARS - 200);
    decodeItem(fits, false);
    expect(canonicalStringNodeText(fits)).toBe(canonicalJson({ kind: "string", value: fits }));
  });

  it("says a text is ASCII only for the node just read from an all-ASCII message of bytes, until it is let go of", () => {
    decodeItem("plain", true);
    expect(isAsciiStringNodeText("plain")).toBe(true);
    expect(isAsciiStringNodeText("plain")).toBe(true); // asking lets go of nothing
    expect(isAsciiStringNodeText("other")).toBe(false);
    expect(canonicalStringNodeText("plain")).toBeDefined();
    expect(isAsciiStringNodeText("plain")).toBe(false); // the canonical text's answer let go of it
    decodeItem("café", true);
    expect(isAsciiStringNodeText("café")).toBe(false);
    decodeItem("plain", false); // a text message: no bytes were counted
    expect(isAsciiStringNodeText("plain")).toBe(false);
  });

  it("hands out the canonical bytes as a view of an all-ASCII message's bytes, once, and for nothing else", () => {
    const bytes = decodeItem("plain", true) as Uint8Array;
    expect(canonicalStringNodeBytes("other")).toBeUndefined();
    const view = canonicalStringNodeBytes("plain") as Uint8Array;
    expect(view).toEqual(utf8('{"kind":"string","value":"plain"}'));
    // No copy: the message's own memory.
    expect(view.buffer).toBe(bytes.buffer);
    expect(view.byteOffset).toBe(new TextDecoder().decode(bytes).indexOf('{"kind"'));
    // The first answer lets go of the message, for the text as for the bytes.
    expect(canonicalStringNodeBytes("plain")).toBeUndefined();
    expect(canonicalStringNodeText("plain")).toBeUndefined();
    decodeItem("plain", true);
    expect(canonicalStringNodeText("plain")).toBeDefined();
    expect(canonicalStringNodeBytes("plain")).toBeUndefined();
    // Not ASCII, or a text message: character offsets are not byte offsets, or there are no bytes.
    decodeItem("café", true);
    expect(canonicalStringNodeBytes("café")).toBeUndefined();
    decodeItem("plain", false);
    expect(canonicalStringNodeBytes("plain")).toBeUndefined();
  });
});
