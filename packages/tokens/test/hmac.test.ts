/**
 * The signing path (`PreparedHmac`: keyed once, cloned per token) against
 * published HMAC-SHA256 answers, and against a fresh HMAC for the prefixed
 * form tokens use.
 */
import { createHmac } from "node:crypto";
import { inspect } from "node:util";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PreparedHmac, signaturePrefix } from "../src/signature.js";

const hex = (text: string): Uint8Array => Uint8Array.from(Buffer.from(text, "hex"));
const ascii = (text: string): Uint8Array => Uint8Array.from(Buffer.from(text, "ascii"));
const repeat = (byte: number, count: number): Uint8Array => new Uint8Array(count).fill(byte);
const toHex = (bytes: Uint8Array): string => Buffer.from(bytes).toString("hex");

// RFC 4231 section 4, HMAC-SHA-256 results. Test case 5 is left out: it
// checks an output truncated to 128 bits, which tokens never use.
const RFC_4231 = [
  {
    name: "test case 1 (4.2)",
    key: repeat(0x0b, 20),
    data: ascii("Hi There"),
    mac: "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
  },
  {
    name: "test case 2 (4.3): a key shorter than the output",
    key: ascii("Jefe"),
    data: ascii("what do ya want for nothing?"),
    mac: "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
  },
  {
    name: "test case 3 (4.4): 50 bytes of 0xdd",
    key: repeat(0xaa, 20),
    data: repeat(0xdd, 50),
    mac: "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe",
  },
  {
    name: "test case 4 (4.5): 25-byte key",
    key: hex("0102030405060708090a0b0c0d0e0f10111213141516171819"),
    data: repeat(0xcd, 50),
    mac: "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b",
  },
  {
    name: "test case 6 (4.7): a key larger than the block, hashed first",
    key: repeat(0xaa, 131),
    data: ascii("Test Using Larger Than Block-Size Key - Hash Key First"),
    mac: "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
  },
  {
    name: "test case 7 (4.8): key and data larger than the block",
    key: repeat(0xaa, 131),
    data: ascii(
      "This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.",
    ),
    mac: "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2",
  },
];

describe("PreparedHmac", () => {
  it("never shows its key-derived state: string, JSON and Node's inspect are redacted", () => {
    const prepared = new PreparedHmac(new Uint8Array(32).fill(7));
    expect(String(prepared)).toBe("PreparedHmac(<redacted>)");
    expect(JSON.stringify({ prepared })).toBe('{"prepared":"<redacted>"}');
    expect(inspect(prepared)).toBe("PreparedHmac(<redacted>)");
  });

  it.each(RFC_4231)("RFC 4231 $name", ({ key, data, mac }) => {
    const prepared = new PreparedHmac(key);
    expect(toHex(prepared.mac(data))).toBe(mac);
    // The keyed state is reused: a second and third use give the same answer.
    expect(toHex(prepared.mac(data))).toBe(mac);
    const out = new Uint8Array(32);
    prepared.macInto(data, out);
    expect(toHex(out)).toBe(mac);
  });

  it.each(RFC_4231)("RFC 4231 $name, with the data split between the prepared prefix and the message", ({ key, data, mac }) => {
    // Tokens absorb the domain prefix into the keyed state; the answer must not depend on where the split falls.
    for (const split of [0, 1, Math.floor(data.length / 2), data.length - 1, data.length]) {
      const prepared = new PreparedHmac(key, data.subarray(0, split));
      expect(toHex(prepared.mac(data.subarray(split)))).toBe(mac);
    }
  });

  it("RFC 4231 answers hold when the vectors share one instance per key, interleaved", () => {
    const instances = RFC_4231.map(({ key }) => new PreparedHmac(key));
    for (let round = 0; round < 3; round++) {
      RFC_4231.forEach(({ data, mac }, index) => expect(toHex(instances[index]!.mac(data))).toBe(mac));
    }
  });

  it("with a prefix, equals a fresh HMAC of prefix || message, for any key and messages in any order", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 1, maxLength: 200 }),
        fc.constantFrom("session", "stream", "cursor" as const),
        fc.array(fc.uint8Array({ maxLength: 300 }), { minLength: 1, maxLength: 5 }),
        (key, kind, messages) => {
          const prepared = new PreparedHmac(key, signaturePrefix(kind));
          for (const message of messages) {
            const expected = createHmac("sha256", key).update(signaturePrefix(kind)).update(message).digest("hex");
            expect(toHex(prepared.mac(message))).toBe(expected);
          }
        },
      ),
    );
  });

  it("extendInto sets a state in place to what extended gives, again and again, for any key, prefixes and messages", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 1, maxLength: 200 }),
        fc.uint8Array({ maxLength: 150 }),
        fc.array(fc.tuple(fc.uint8Array({ maxLength: 150 }), fc.uint8Array({ maxLength: 100 })), { minLength: 1, maxLength: 6 }),
        (key, prefix, steps) => {
          const base = new PreparedHmac(key, prefix);
          const target = base.extended(new Uint8Array(0));
          for (const [more, message] of steps) {
            base.extendInto(more, target);
            const expected = createHmac("sha256", key).update(prefix).update(more).update(message).digest("hex");
            expect(toHex(target.mac(message))).toBe(expected);
            expect(toHex(base.extended(more).mac(message))).toBe(expected);
            // The base is unchanged by either.
            expect(toHex(base.mac(message))).toBe(createHmac("sha256", key).update(prefix).update(message).digest("hex"));
          }
        },
      ),
    );
  });

  it("signs the protocol's domain string: ASCII domain, 0x00, kind word, 0x00", () => {
    expect(Buffer.from(signaturePrefix("stream")).toString("latin1")).toBe("golem.agent-invocation.token.v1\u0000stream\u0000");
  });

  it("never shows key-derived state", () => {
    const prepared = new PreparedHmac(repeat(0x42, 32));
    expect(String(prepared)).toBe("PreparedHmac(<redacted>)");
    expect(JSON.stringify({ prepared })).toBe('{"prepared":"<redacted>"}');
  });
});
