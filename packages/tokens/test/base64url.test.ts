/**
 * The two base64url implementations (Node's Buffer made strict, and the
 * portable one) against RFC 4648 section 10 and against each other.
 */
import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import {
  base64UrlEncoderOf,
  decodeBase64Url,
  decodeBase64UrlPortable,
  encodeBase64Url,
  encodeBase64UrlPortable,
} from "../src/base64url.js";

const IMPLEMENTATIONS = [
  ["native", encodeBase64Url, decodeBase64Url],
  ["portable", encodeBase64UrlPortable, decodeBase64UrlPortable],
] as const;

// RFC 4648 section 10, without padding (base64url and base64 agree on these).
const RFC_4648 = [
  ["", ""],
  ["f", "Zg"],
  ["fo", "Zm8"],
  ["foo", "Zm9v"],
  ["foob", "Zm9vYg"],
  ["fooba", "Zm9vYmE"],
  ["foobar", "Zm9vYmFy"],
] as const;

describe.each(IMPLEMENTATIONS)("%s base64url", (_, encode, decode) => {
  it.each(RFC_4648)("RFC 4648 section 10: %j <-> %j", (plain, encoded) => {
    const bytes = new TextEncoder().encode(plain);
    expect(encode(bytes)).toBe(encoded);
    expect(decode(encoded)).toStrictEqual(bytes);
  });

  it("uses - and _ for 62 and 63", () => {
    expect(encode(Uint8Array.of(0xfb, 0xff))).toBe("-_8");
    expect(decode("-_8")).toStrictEqual(Uint8Array.of(0xfb, 0xff));
  });

  it.each([
    ["padding", "Zg=="],
    ["one pad", "Zm8="],
    ["standard alphabet +", "+_8"],
    ["standard alphabet /", "-/8"],
    ["a space", "Zm 9v"],
    ["a line feed", "Zm9v\n"],
    ["an impossible length", "Zm9vY"],
    ["non-zero final bits (2 chars)", "Zh"],
    ["non-zero final bits (3 chars)", "Zm9"],
    ["a non-ASCII character", "Zm9é"],
    ["a character whose low byte is in the alphabet", "Zm9\u0141"],
  ])("rejects %s", (_, text) => {
    expect(decode(text)).toBeUndefined();
  });

  it("decodes from an offset", () => {
    expect(decode("gai1_Zm9v", 5)).toStrictEqual(Uint8Array.of(0x66, 0x6f, 0x6f));
  });
});

describe("the implementations agree", () => {
  it("on every byte string", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 100 }), (bytes) => {
        const text = encodeBase64UrlPortable(bytes);
        expect(encodeBase64Url(bytes)).toBe(text);
        expect(decodeBase64Url(text)).toStrictEqual(bytes);
        expect(decodeBase64UrlPortable(text)).toStrictEqual(bytes);
      }),
    );
  });

  it("on every string, valid or not", () => {
    const chars = fc.constantFrom(..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/= \n\té\u0141\u0000");
    fc.assert(
      fc.property(fc.string({ unit: chars, maxLength: 40 }), (text) => {
        expect(decodeBase64Url(text)).toStrictEqual(decodeBase64UrlPortable(text));
      }),
      { numRuns: 2000 },
    );
  });
});

describe("base64UrlEncoderOf", () => {
  it("encodes the bytes' contents at each call, as the portable encoder does, however they were rewritten in place", () => {
    fc.assert(
      fc.property(
        fc.nat({ max: 8 }),
        fc.array(fc.uint8Array({ minLength: 1, maxLength: 120 }), { minLength: 1, maxLength: 6 }),
        (offset, contents) => {
          const size = Math.max(...contents.map((bytes) => bytes.length));
          const bytes = new Uint8Array(offset + size + 3).subarray(offset, offset + size);
          const encode = base64UrlEncoderOf(bytes);
          for (const content of contents) {
            bytes.fill(0);
            bytes.set(content);
            expect(encode()).toBe(encodeBase64UrlPortable(bytes));
          }
        },
      ),
    );
  });

  it("without Node's Buffer (a browser), encodes with the portable encoder, the contents at each call", async () => {
    vi.stubGlobal("Buffer", undefined);
    vi.resetModules();
    try {
      const portable = await import("../src/base64url.js");
      const bytes = Uint8Array.of(0xfb, 0xff, 0x00);
      const encode = portable.base64UrlEncoderOf(bytes);
      expect(encode()).toBe("-_8A");
      bytes[2] = 0xbf;
      expect(encode()).toBe("-_-_");
    } finally {
      vi.unstubAllGlobals();
      vi.resetModules();
    }
  });
});
