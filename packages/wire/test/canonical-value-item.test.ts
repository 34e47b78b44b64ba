/**
 * `encodeOutputStreamItemWithCanonicalValue` splices a value's canonical
 * text into the message instead of encoding the value again. Over generated
 * items it must give the bytes of `encodeServerMessage`, fail with the same
 * error for every bad head. Its 8 MiB text limit: text-limit.slow.test.ts.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type JsonValue,
  LIMITS,
  type OutputStreamItem,
  type OutputStreamItemHead,
  ProtocolError,
  type SchemaValueJson,
  U64_MAX,
  canonicalJson,
  decodeServerMessage,
  encodeServerMessage,
  encodeUtf8,
} from "../src/index.js";
import { encodeOutputStreamItemWithCanonicalValue } from "../src/internal.js";
import { outputStreamItem } from "./support/arbitraries.js";

/** Values with any text in them, not only ASCII: the splice must count bytes, not characters. */
const unicodeValue = fc.record({
  kind: fc.string({ maxLength: 12, unit: "grapheme" }),
  value: fc.jsonValue({ maxDepth: 3, stringUnit: "grapheme" }) as fc.Arbitrary<JsonValue>,
});
const item = fc
  .tuple(outputStreamItem, fc.option(unicodeValue, { nil: undefined }))
  .map(([message, value]): OutputStreamItem => (value === undefined ? message : { ...message, value }));

function split(message: OutputStreamItem): { head: OutputStreamItemHead; stored: Uint8Array } {
  const { value, ...head } = message;
  // What a server stores when it records the value.
  return { head, stored: encodeUtf8(canonicalJson(value as unknown as JsonValue)) };
}

/** The call's result, or the ProtocolError it threw as a plain record (anything else fails the test). */
function outcome(encode: () => string | Uint8Array): unknown {
  try {
    return encode();
  } catch (error) {
    if (!(error instanceof ProtocolError)) throw error;
    return { code: error.code, message: error.message, path: error.path };
  }
}

describe("encodeOutputStreamItemWithCanonicalValue", () => {
  it("gives the bytes of encodeServerMessage, which decode to the message", () => {
    fc.assert(
      fc.property(item, (message) => {
        const { head, stored } = split(message);
        const spliced = encodeOutputStreamItemWithCanonicalValue(head, stored);
        expect(spliced).toBe(encodeServerMessage(message));
        expect(decodeServerMessage(spliced, false)).toEqual(message);
      }),
      { numRuns: 500 },
    );
  });

  const badHead = fc.oneof(
    fc.record({ channel: fc.constantFrom(0, -1, 2 ** 32, 1.5, Number.NaN) }),
    fc.record({ cursorToken: fc.constantFrom("", "é", "a b", "x".repeat(LIMITS.maxTokenBytes + 1)) }),
    fc.record({ sequence: fc.constantFrom(U64_MAX, U64_MAX + 1n, -1n) }),
    fc.record({ mappings: fc.constantFrom("none", [{ channel: 1, direction: "output" }]) }),
    fc.record({ unknownMember: fc.constantFrom(1, "x") }),
    fc.constantFrom({ channel: undefined }, { cursorToken: undefined }, { mappings: undefined }, { sequence: undefined }),
  );

  it("fails a bad head exactly as encodeServerMessage does", () => {
    fc.assert(
      fc.property(item, badHead, (message, damage) => {
        const damaged = { ...message, ...damage } as unknown as OutputStreamItem;
        const { head, stored } = split(damaged);
        const expected = outcome(() => encodeServerMessage(damaged));
        expect(expected).toHaveProperty("code");
        expect(outcome(() => encodeOutputStreamItemWithCanonicalValue(head, stored))).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });

  it("refuses a buffer that is not the outline of a canonical SchemaValue", () => {
    const head: OutputStreamItemHead = { type: "outputStreamItem", channel: 1, cursorToken: "t", mappings: [], sequence: 0n };
    const notUtf8 = Uint8Array.of(...encodeUtf8('{"kind":"'), 0xff, ...encodeUtf8('","value":1}'));
    for (const bytes of ["", "null", '{"kind":"s"', '{"value":1,"kind":"s"}', '["kind"]'].map(encodeUtf8)) {
      expect(outcome(() => encodeOutputStreamItemWithCanonicalValue(head, bytes))).toMatchObject({
        code: "invalid-message",
        path: "value",
      });
    }
    expect(outcome(() => encodeOutputStreamItemWithCanonicalValue(head, notUtf8))).toMatchObject({ code: "invalid-message" });
    expect(
      outcome(() =>
        encodeOutputStreamItemWithCanonicalValue({ ...head, type: "outputStreamEnd" } as never, encodeUtf8('{"kind":"s","value":1}')),
      ),
    ).toMatchObject({
      code: "invalid-message",
      path: "type",
    });
  });
});
