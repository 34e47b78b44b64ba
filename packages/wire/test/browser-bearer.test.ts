import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import { BEARER_SUBPROTOCOL_PREFIX, decodeBearerSubprotocol, encodeBearerSubprotocol, isBearerToken } from "../src/index.js";

const visibleAscii = fc.string({
  unit: fc.integer({ min: 0x21, max: 0x7e }).map((code) => String.fromCharCode(code)),
  minLength: 1,
  maxLength: 200,
});
/** RFC 7230 `token` characters: what a Sec-WebSocket-Protocol entry may hold. */
const HTTP_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

describe("the bearer subprotocol entry", () => {
  it("round-trips every token of visible ASCII, as an HTTP token that is base64url after the prefix", () => {
    fc.assert(
      fc.property(visibleAscii, (token) => {
        const entry = encodeBearerSubprotocol(token)!;
        expect(entry.startsWith(BEARER_SUBPROTOCOL_PREFIX)).toBe(true);
        expect(entry).toMatch(HTTP_TOKEN);
        expect(entry.slice(BEARER_SUBPROTOCOL_PREFIX.length)).toBe(Buffer.from(token, "latin1").toString("base64url"));
        expect(decodeBearerSubprotocol(entry)).toBe(token);
      }),
    );
  });

  it("accepts exactly the canonical spelling: any other string decodes to nothing or to a token that encodes back to it", () => {
    let decoded = 0;
    // Random text over the entry's alphabet (rarely a token), and real entries (always one).
    const realEntry = fc
      .string({ unit: fc.constantFrom(..."abcXYZ019!~"), minLength: 1, maxLength: 20 })
      .map((token) => encodeBearerSubprotocol(token)?.slice(BEARER_SUBPROTOCOL_PREFIX.length) ?? "");
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: fc.constantFrom(..."AZaz09-_+/=.x"), maxLength: 40 }), realEntry), (text) => {
        const token = decodeBearerSubprotocol(BEARER_SUBPROTOCOL_PREFIX + text);
        if (token === undefined) return;
        decoded++;
        expect(encodeBearerSubprotocol(token)).toBe(BEARER_SUBPROTOCOL_PREFIX + text);
      }),
    );
    // Not vacuous: some of the strings were tokens.
    expect(decoded).toBeGreaterThan(0);
  });

  it("refuses what is not a token entry", () => {
    expect(decodeBearerSubprotocol("golem.agent-invocation.v1")).toBeUndefined();
    expect(decodeBearerSubprotocol(BEARER_SUBPROTOCOL_PREFIX)).toBeUndefined();
    // "dG9r" is "tok"; "dG9" leaves non-zero bits; padding and the standard alphabet are not base64url.
    expect(decodeBearerSubprotocol(`${BEARER_SUBPROTOCOL_PREFIX}dG9r`)).toBe("tok");
    expect(decodeBearerSubprotocol(`${BEARER_SUBPROTOCOL_PREFIX}dG9`)).toBeUndefined();
    expect(decodeBearerSubprotocol(`${BEARER_SUBPROTOCOL_PREFIX}dG8=`)).toBeUndefined();
    expect(decodeBearerSubprotocol(`${BEARER_SUBPROTOCOL_PREFIX}a+b/`)).toBeUndefined();
    // Bytes outside visible ASCII (a space, a newline, UTF-8) are not bearer tokens.
    expect(decodeBearerSubprotocol(BEARER_SUBPROTOCOL_PREFIX + Buffer.from("a b").toString("base64url"))).toBeUndefined();
    expect(decodeBearerSubprotocol(BEARER_SUBPROTOCOL_PREFIX + Buffer.from("é").toString("base64url"))).toBeUndefined();
    expect(decodeBearerSubprotocol(BEARER_SUBPROTOCOL_PREFIX + "A".repeat(16 * 1024))).toBeUndefined();
    expect(encodeBearerSubprotocol("with space")).toBeUndefined();
    expect(encodeBearerSubprotocol("")).toBeUndefined();
    expect(encodeBearerSubprotocol("x".repeat(13 * 1024))).toBeUndefined();
  });

  it("refuses a token too long for an entry of 16 KiB before it reads a character of it", () => {
    // 20 prefix characters + 16364 of base64url for 12273 bytes: the longest entry there is.
    expect(encodeBearerSubprotocol("a".repeat(12_273))).toHaveLength(16 * 1024);
    const test = vi.spyOn(RegExp.prototype, "test");
    try {
      expect(encodeBearerSubprotocol("a".repeat(12_274))).toBeUndefined();
      expect(encodeBearerSubprotocol("a".repeat(20_000_000))).toBeUndefined();
      expect(test).not.toHaveBeenCalled();
    } finally {
      test.mockRestore();
    }
  });
});

describe("isBearerToken", () => {
  it("holds for every string of visible ASCII and nothing else: no space, line end, other character or other type", () => {
    fc.assert(fc.property(visibleAscii, (token) => isBearerToken(token)));
    for (const wrong of ["", "a b", "token\n", "\ttoken", "caf\u00e9", "\u007f", undefined, null, 1, ["a"], { token: "a" }])
      expect(isBearerToken(wrong), JSON.stringify(wrong)).toBe(false);
  });
});
