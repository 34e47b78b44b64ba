/**
 * `encodeInputStreamItemValue` and the frame around it must give exactly
 * what `encodeClientMessage` gives for the whole `inputStreamItem`, byte for
 * byte, and throw exactly what it throws, for every value, channel and
 * sequence, valid or not.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CHANNEL_MAX, LIMITS, U64_MAX, encodeClientMessage, type JsonValue, type SchemaValueJson } from "../src/index.js";
import { encodeInputStreamItemValue, isInputItemPosition } from "../src/internal.js";
import { canonicalJson, canonicalStringNode } from "../src/canonical-json.js";
import { outcome, viaParts, viaTable } from "./support/input-item-encodings.js";

const json = fc.jsonValue({ maxDepth: 4, stringUnit: "grapheme" }) as fc.Arbitrary<JsonValue>;
const anything = fc.oneof(json, fc.anything({ maxDepth: 3 }), fc.constant(Number.NaN), fc.constant("\ud800"), fc.constant(undefined));
/** Strings with what JSON must escape, lone surrogates and non-ASCII text among ordinary characters. */
const text = fc.string({ unit: fc.constantFrom("a", "Z", " ", '"', "\\", "\n", "\u0000", "\u001f", "é", "😀", "\ud800", "\udfff") });
/** `stream<string>` items, which take a shortcut (`canonicalStringNode`), and near misses of their shape. */
const stringNode = fc.oneof(
  fc.record({ kind: fc.constant("string"), value: fc.oneof(text, fc.string({ unit: "binary" })) }),
  fc.record({ value: text, kind: fc.constant("string") }),
  fc.record({ kind: fc.constant("string"), value: anything }),
  fc.record({ kind: fc.constant("string"), value: text, other: anything }),
);
const value = fc.oneof(
  stringNode,
  fc.record({ kind: fc.string({ maxLength: 12, unit: "grapheme" }), value: json }),
  fc.record({ kind: fc.oneof(fc.string(), fc.integer()), value: anything }, { requiredKeys: [] }),
  fc.dictionary(fc.constantFrom("kind", "value", "other"), anything),
  anything,
) as fc.Arbitrary<SchemaValueJson>;
const channel = fc.oneof(fc.integer({ min: 1, max: 9 }), fc.integer({ min: -2, max: CHANNEL_MAX + 2 }), fc.double());
const sequence = fc.oneof(
  fc.bigInt({ min: 0n, max: 20n }),
  fc.bigInt({ min: -2n, max: U64_MAX + 2n }),
  fc.constant(U64_MAX - 1n),
  fc.constant(U64_MAX),
) as fc.Arbitrary<bigint>;

describe("inputStreamItem in parts", () => {
  it("gives encodeClientMessage's bytes and errors for generated items", () => {
    fc.assert(
      fc.property(value, channel, sequence, (v, c, s) => {
        expect(outcome(viaParts(c, s, v))).toBe(outcome(viaTable(c, s, v)));
      }),
      { numRuns: 2000 },
    );
  });

  it("agrees on values JSON cannot carry and on the depth limit counted from the message's root", () => {
    const cycle: Record<string, unknown> = { kind: "x" };
    cycle["value"] = { back: cycle };
    const nest = (levels: number): JsonValue => (levels === 0 ? 0 : [nest(levels - 1)]);
    const cases = [
      { kind: "string", value: "\udc00" },
      { kind: "f64", value: Number.POSITIVE_INFINITY },
      { kind: "x", value: new Date(0) },
      { kind: "x", value: 1n },
      cycle,
      // The value is at depth 1: payloads nested one short of the limit and at it.
      { kind: "list", value: nest(LIMITS.maxJsonDepth - 3) },
      { kind: "list", value: nest(LIMITS.maxJsonDepth - 2) },
      { kind: "list", value: nest(LIMITS.maxJsonDepth - 1) },
      undefined,
      null,
      // A getter of the caller's that throws: its bug, internal-error, on either path.
      {
        kind: "x",
        get value(): never {
          throw new Error("the caller's getter");
        },
      },
    ] as unknown as SchemaValueJson[];
    const seen = new Set<string>();
    for (const v of cases) {
      const expected = outcome(viaTable(3, 7n, v));
      seen.add(expected.startsWith("ok") ? "ok" : expected.split(" ")[0]!);
      expect(outcome(viaParts(3, 7n, v))).toBe(expected);
    }
    // The cases reach both outcomes and every error code.
    expect([...seen].sort()).toEqual(["internal-error", "invalid-message", "limit-exceeded", "ok"]);
  });

  it("writes a string node as the general walk does, and leaves every near miss of its shape to it", () => {
    const bare = Object.assign(Object.create(null) as object, { kind: "string", value: "bare" });
    const inherited = Object.assign(Object.create({ value: "inherited" }) as object, { kind: "string" });
    const extraInherited = Object.assign(Object.create({ extra: 1 }) as object, { kind: "string", value: "x" });
    const hiddenExtra = Object.defineProperty({ kind: "string", value: "hidden" }, "extra", { value: 1, enumerable: false });
    const symbolExtra = { kind: "string", value: "symbol", [Symbol("extra")]: 1 };
    class Node {
      readonly kind = "string";
      readonly value = "class";
    }
    const cases = [
      { kind: "string", value: "plain" },
      { value: "reversed", kind: "string" },
      { kind: "string", value: 'quote " backslash \\ newline \n nul \u0000' },
      { kind: "string", value: "lone \ud800 surrogate" },
      { kind: "string", value: "" },
      { kind: "string", value: 5 },
      { kind: "string", value: "x", extra: undefined },
      { kind: "string", value: "x", extra: 1 },
      bare,
      inherited,
      extraInherited,
      hiddenExtra,
      symbolExtra,
      new Node(),
    ] as unknown as SchemaValueJson[];
    for (const v of cases) expect(outcome(viaParts(3, 7n, v))).toBe(outcome(viaTable(3, 7n, v)));
  });

  it("canonicalStringNode answers for exactly a plain string node, as canonicalJson writes it", () => {
    expect(canonicalStringNode({ kind: "string", value: 'a"b' })).toBe(canonicalJson({ kind: "string", value: 'a"b' }));
    expect(canonicalStringNode({ value: "x", kind: "string" })).toBe(canonicalJson({ kind: "string", value: "x" }));
    for (const other of [
      { kind: "string", value: "x", extra: 1 },
      { kind: "string" },
      { kind: "s", value: "x" },
      { kind: "string", value: 1 },
      ["string", "x"],
      "string",
      null,
    ]) {
      expect(canonicalStringNode(other)).toBeUndefined();
    }
  });

  it("isInputItemPosition accepts exactly the channels and sequences encodeClientMessage accepts", () => {
    fc.assert(
      fc.property(channel, sequence, (c, s) => {
        const accepted = outcome(viaTable(c, s, { kind: "s", value: "x" } as SchemaValueJson)).startsWith("ok");
        expect(isInputItemPosition(c, s)).toBe(accepted);
      }),
      { numRuns: 1000 },
    );
  });
});
