/**
 * The UTF-8 helpers every size bound rests on. Both have a fast path (the
 * engine's isWellFormed; a native search past the ASCII prefix), so each is
 * held to a plain definition on every kind of string, lone surrogates included.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isWellFormedLoop } from "../src/utf8.js";
import { isWellFormedText, utf8ByteLength } from "../src/index.js";

/** Strings mixing ASCII runs with 2-, 3- and 4-byte characters and stray surrogates. */
const mixed = fc
  .array(
    fc.oneof(
      fc.string({ unit: "grapheme-ascii" }),
      fc.string({ unit: "binary" }),
      fc.constantFrom("é", "€", "😀", "\ud800", "\udc00", "\ud83d\ude00"),
    ),
    { maxLength: 8 },
  )
  .map((parts) => parts.join(""));

describe("isWellFormedText", () => {
  it("agrees with the portable loop and with a definition by code points", () => {
    fc.assert(
      fc.property(mixed, (text) => {
        const lone = [...text].some((char) => {
          const unit = char.charCodeAt(0);
          return char.length === 1 && unit >= 0xd800 && unit <= 0xdfff;
        });
        expect(isWellFormedText(text)).toBe(!lone);
        expect(isWellFormedLoop(text)).toBe(!lone);
      }),
      { numRuns: 2000 },
    );
  });
});

describe("utf8ByteLength", () => {
  it("is the length TextEncoder produces for well-formed text, whatever comes first", () => {
    fc.assert(
      fc.property(mixed.filter(isWellFormedLoop), fc.string({ unit: "grapheme-ascii" }), (text, prefix) => {
        for (const candidate of [text, prefix + text, text + prefix]) {
          expect(utf8ByteLength(candidate)).toBe(new TextEncoder().encode(candidate).length);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it("counts a lone surrogate as the 3 bytes of its replacement character", () => {
    expect(utf8ByteLength("a\ud800")).toBe(4);
    expect(utf8ByteLength("\udc00b")).toBe(4);
  });
});
