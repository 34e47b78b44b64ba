/**
 * The writer's one-node path (a value that is a single scalar node, as most
 * stream items are) writes what the general JSON writer writes, and refuses
 * what the tree walk refuses.
 */
import { canonicalJson, decodeClientMessage, encodeClientMessage, isWellFormedText, type JsonValue } from "@golem-stream/wire";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { writeCanonical } from "../src/canonical-writer.js";
import { decodeSchemaGraph, decodeSchemaValue, encodeSchemaValue, t, type SchemaValue } from "../src/index.js";

const SCALAR_KINDS = ["bool", "s8", "s16", "s32", "u8", "u16", "u32", "s64", "u64", "f32", "f64", "char", "string"] as const;
const write = (value: unknown): string => writeCanonical(value as SchemaValue);

/** Whether the decoder of a value of `kind` reads `{kind, value}`. */
function decodes(kind: (typeof SCALAR_KINDS)[number], value: unknown): boolean {
  try {
    decodeSchemaValue({ kind, value } as unknown as JsonValue, decodeSchemaGraph(t.graph(t[kind]())));
    return true;
  } catch {
    return false;
  }
}

describe("writeCanonical of a single scalar node", () => {
  it("writes canonicalJson's text for every string or finite number payload its kind's decoder reads, members in any order, and refuses the rest", () => {
    // Strings with and without what JSON escapes: quotes, backslashes, every control character.
    const escapes = fc.string({ unit: fc.constantFrom('"', "\\", "\n", "\u0000", "\u001f", " ", "\u007f", "\u2028", "a", "é", "😀") });
    const wellFormed = fc.string({ unit: "binary" }).filter(isWellFormedText);
    const payload = fc.oneof(
      fc.string({ unit: "grapheme" }),
      escapes,
      wellFormed,
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.integer(),
    );
    fc.assert(
      fc.property(fc.constantFrom(...SCALAR_KINDS.filter((kind) => kind !== "bool")), payload, fc.boolean(), (kind, value, valueFirst) => {
        const node = valueFirst ? { value, kind } : { kind, value };
        if (!decodes(kind, value)) {
          expect(write(node)).toBe("not-native");
          return;
        }
        expect(write(node)).toBe(canonicalJson(node as JsonValue));
        // The same string inside a tree (a text node's payload) is quoted the same way.
        if (typeof value === "string")
          expect(write({ kind: "text", value: { text: value } })).toBe(canonicalJson({ kind: "text", value: { text: value } }));
      }),
      { numRuns: 2000 },
    );
    expect(write({ kind: "bool", value: false })).toBe('{"kind":"bool","value":false}');
    expect(write({ value: true, kind: "bool" })).toBe('{"kind":"bool","value":true}');
    expect(write({ kind: "string", value: 'a"\\\n\u2028é😀' })).toBe(canonicalJson({ kind: "string", value: 'a"\\\n\u2028é😀' }));
    expect(write({ kind: "f64", value: -0 })).toBe('{"kind":"f64","value":-0}');
  });

  it("refuses a node that is not exactly native", () => {
    expect(write({ kind: "string", value: "x", extra: 1 })).toBe("not-native");
    expect(write({ kind: "string" })).toBe("not-native");
    expect(write({ kind: "string", value: "\ud800" })).toBe("not-native");
    expect(write({ kind: "string", value: null })).toBe("not-native");
    expect(write({ kind: "string", value: { text: "x" } })).toBe("not-native");
    expect(write({ kind: "s32", value: Number.POSITIVE_INFINITY })).toBe("not-native");
    expect(write({ kind: "s32", value: Number.NaN })).toBe("not-native");
    expect(write({ kind: "bool", value: "true" })).toBe("not-native");
    expect(write({ kind: "bool", value: 1 })).toBe("not-native");
    // An inherited member, a foreign prototype, an own member that is not enumerable by for-in.
    expect(write(Object.assign(Object.create({ extra: 1 }) as object, { kind: "string", value: "x" }))).toBe("not-native");
    expect(
      write(
        new (class Node {
          kind = "string";
          value = "x";
        })(),
      ),
    ).toBe("not-native");
    expect(write({ kind: "string", value: "x", [Symbol("s")]: 1 })).toBe('{"kind":"string","value":"x"}');
  });
});

describe("encodeSchemaValue of an input item the wire read in place", () => {
  const graph = decodeSchemaGraph(t.graph(t.string()));
  const text = fc.oneof(
    fc.string({ unit: fc.constantFrom('"', "\\", "\u0000", "\u001f", " ", "\u2028", "a", "é", "😀") }),
    fc.string({ unit: "grapheme", maxLength: 40 }),
    fc.constantFrom("", "x"),
  );

  it("writes canonicalJson's text of the decoded value, whatever else was decoded or written between", () => {
    // Each step decodes an item as a server does and, in some order, writes its value and another node.
    const step = fc.record({ item: text, other: text, otherFirst: fc.boolean(), asBytes: fc.boolean() });
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 6 }), (steps) => {
        for (const { item, other, otherFirst, asBytes } of steps) {
          const message = encodeClientMessage({
            type: "inputStreamItem",
            channel: 3,
            sequence: 9n,
            value: { kind: "string", value: item },
          }) as string;
          const decoded = decodeClientMessage(asBytes ? new TextEncoder().encode(message) : message, false);
          if (decoded.type !== "inputStreamItem") throw new Error("not an input item");
          const otherNode = { kind: "string", value: other } as const;
          if (otherFirst) expect(encodeSchemaValue(otherNode)).toBe(canonicalJson(otherNode));
          const value = decodeSchemaValue(decoded.value, graph, { streams: "provisional" }).value;
          expect(encodeSchemaValue(value)).toBe(canonicalJson({ kind: "string", value: item }));
          if (!otherFirst) expect(encodeSchemaValue(otherNode)).toBe(canonicalJson(otherNode));
        }
      }),
      { numRuns: 2000 },
    );
  });
});
