/**
 * The demo `reverse` agent's string reversal: its fast path (text with no
 * surrogate, reversed by code unit) must agree with reversing by Unicode
 * scalar value for every string, surrogate pairs and long texts included.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { reverseScalars } from "../src/demo/methods.js";

const byScalars = (text: string): string => Array.from(text).reverse().join("");

describe("reverseScalars", () => {
  it("reverses by scalar value for any text, with or without surrogate pairs", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: "grapheme", maxLength: 200 }),
          fc.string({ unit: "binary", maxLength: 200 }),
          fc.string({ maxLength: 200 }),
        ),
        (text) => {
          expect(reverseScalars(text)).toBe(byScalars(text));
        },
      ),
    );
  });

  it("keeps a surrogate pair together", () => {
    expect(reverseScalars("a\u{1F600}b")).toBe("b\u{1F600}a");
  });

  it("reverses texts past the fast path's length", () => {
    const text = "abcdefghij".repeat(1000);
    expect(reverseScalars(text)).toBe(byScalars(text));
    expect(reverseScalars("ab".repeat(2048))).toBe("ba".repeat(2048));
  });
});
