/**
 * `decodeSchemaValue` and `toJs` take a shortcut for a `string` type with
 * default limits (a stream of strings). On anything at all each must give
 * what the full walk gives: the same decoded value and charge (for `toJs`,
 * the same text), or the same error.
 */
import { decodeClientMessage, encodeClientMessage, ProtocolError, type InputStreamItem, type JsonValue } from "@golem-stream/wire";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeSchemaGraph, decodeSchemaValue, t, toJs, type DecodeValueOptions, type SchemaType } from "../src/index.js";
import { toJsWalk } from "../src/to-js.js";
import { decodeSchemaValueWalk } from "../src/value-decode.js";

const graphs = [
  decodeSchemaGraph(t.graph(t.string())),
  decodeSchemaGraph(t.graph(t.ref("s"), { s: t.string() })),
  decodeSchemaGraph(t.graph(t.char())),
  // Types inside a graph, as toJs gives a record field's or a stream element's type: a string, a ref to one, a char.
  decodeSchemaGraph(t.graph(t.record({ a: t.string(), b: t.ref("s"), c: t.char() }), { s: t.string() })),
];

/** The record's field types of the last graph: nodes the graph owns that are not its root. */
const ownedTypes = (graphs[3]!.root as { value: { fields: { body: SchemaType }[] } }).value.fields.map((field) => field.body);

/** The outcome of a decode: its result, or the error's code, path and message. */
function outcome(decode: () => unknown): unknown {
  try {
    return { ok: decode() };
  } catch (error) {
    if (!(error instanceof ProtocolError)) return { notProtocolError: String(error) };
    return { code: error.code, message: error.message, path: error.path };
  }
}

function same(json: unknown, options: DecodeValueOptions, graph = graphs[0]!): void {
  expect(outcome(() => decodeSchemaValue(json as JsonValue, graph, options))).toEqual(
    outcome(() => decodeSchemaValueWalk(json as JsonValue, graph, options)),
  );
}

const text = fc.oneof(fc.string({ unit: "grapheme" }), fc.string({ unit: "binary" }), fc.constantFrom("", "\ud800", "a\udc00b", "é😀"));
const node = fc.oneof(
  text.map((value) => ({ kind: "string", value })),
  fc.record({ kind: fc.constantFrom("string", "char", "text", "bool"), value: fc.oneof(text, fc.jsonValue({ maxDepth: 1 })) }),
  fc.record({ kind: fc.constant("string"), value: text, extra: fc.jsonValue({ maxDepth: 0 }) }),
  fc.jsonValue({ maxDepth: 2 }),
);
const options = fc.record(
  {
    streams: fc.constantFrom("provisional", "stable", "forbidden", "any", "other" as never),
    path: fc.oneof(fc.constant("value"), fc.string({ maxLength: 4 }), fc.constant(7 as never)),
    maxByteCharge: fc.nat({ max: 80 }),
  },
  { requiredKeys: [] },
);

describe("decodeSchemaValue of a string root", () => {
  it("gives the walk's answer for any value and options", () => {
    fc.assert(
      fc.property(
        node,
        options,
        fc.constantFrom(0, 1, 2, 3),
        fc.constantFrom("none", "root", "other", "owned"),
        fc.nat(2),
        (json, opts, g, type, field) => {
          const graph = graphs[g]!;
          // The root given as options.type (as toJs and fromJs give it) is the same decode, and so is
          // a node of the graph (a field's type); a type from elsewhere is not.
          if (type === "none") same(json, opts, graph);
          else if (type === "owned") same(json, { ...opts, type: ownedTypes[field]! }, graphs[3]!);
          else same(json, { ...opts, type: type === "root" ? graph.root : t.string() }, graph);
        },
      ),
      { numRuns: 3000 },
    );
  });

  it("gives the walk's charge for an item the wire just read from bytes, ASCII or not (the ASCII one is not counted again)", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: "grapheme" }), fc.string({ unit: fc.constantFrom("a", "~", " ", "é", "😀") })), (value) => {
        const text = encodeClientMessage({ type: "inputStreamItem", channel: 1, sequence: 3n, value: { kind: "string", value } }) as string;
        const item = decodeClientMessage(new TextEncoder().encode(text), false) as InputStreamItem;
        same(item.value, { streams: "provisional", path: "value" });
        expect(decodeSchemaValue(item.value as unknown as JsonValue, graphs[0]!).byteCharge).toBe(
          1 + new TextEncoder().encode(value).length,
        );
      }),
      { numRuns: 1000 },
    );
  });

  it("takes the shortcut's answer for plain strings: value, no streams, charge 1 + UTF-8 bytes", () => {
    expect(decodeSchemaValue({ kind: "string", value: "é😀" }, graphs[0]!, { streams: "provisional" })).toEqual({
      value: { kind: "string", value: "é😀" },
      streams: [],
      byteCharge: 1 + 2 + 4,
    });
    expect(decodeSchemaValue({ kind: "string", value: "x" }, graphs[1]!)).toEqual({
      value: { kind: "string", value: "x" },
      streams: [],
      byteCharge: 2,
    });
    // A string node inside the graph (a field's, a ref's), as toJs decodes each item of a stream.
    for (const type of ownedTypes.slice(0, 2)) {
      expect(decodeSchemaValue({ kind: "string", value: "x" }, graphs[3]!, { type, streams: "any" })).toEqual({
        value: { kind: "string", value: "x" },
        streams: [],
        byteCharge: 2,
      });
    }
    // A char node is not a string: the walk's error.
    expect(() => decodeSchemaValue({ kind: "string", value: "x" }, graphs[3]!, { type: ownedTypes[2]! })).toThrow(
      expect.objectContaining({ code: "validation-error" }),
    );
  });

  it("refuses what the walk refuses, with the walk's error", () => {
    for (const json of [
      { kind: "string", value: "\ud800" },
      { kind: "string", value: 1 },
      { kind: "string" },
      { kind: "char", value: "x" },
      ["x"],
      null,
    ]) {
      expect(() => decodeSchemaValue(json as JsonValue, graphs[0]!)).toThrow(ProtocolError);
      same(json, {});
    }
    // Over the 8 MiB charge: 1 for the node, 8 MiB for the text.
    const big = { kind: "string", value: "a".repeat(8 * 1024 * 1024) };
    expect(() => decodeSchemaValue(big, graphs[0]!)).toThrow(expect.objectContaining({ code: "limit-exceeded" }));
    // A getter that throws on a caller-built value: the walk's validation-error, not the raw error.
    const hostile = {
      kind: "string",
      get value(): string {
        throw new Error("boom");
      },
    };
    expect(() => decodeSchemaValue(hostile as unknown as JsonValue, graphs[0]!)).toThrow(
      expect.objectContaining({ code: "validation-error" }),
    );
    // A bad option is the caller's bug, reported by the walk.
    expect(() => decodeSchemaValue({ kind: "string", value: "x" }, graphs[0]!, { streams: "sometimes" as never })).toThrow(
      expect.objectContaining({ code: "internal-error" }),
    );
    expect(() => decodeSchemaValue({ kind: "string", value: "x" }, graphs[0]!, { path: 7 as never })).toThrow(
      expect.objectContaining({ code: "internal-error" }),
    );
  });
});

describe("toJs of a string type", () => {
  /** The type argument as the property draws it: none, the root, a foreign string type, one of the graph's own nodes. */
  function typeOf(choice: string, graph: (typeof graphs)[number], field: number): SchemaType | undefined {
    if (choice === "none") return undefined;
    if (choice === "owned") return ownedTypes[field]!;
    return choice === "root" ? graph.root : t.string();
  }

  it("gives the walk's answer for any value and type", () => {
    fc.assert(
      fc.property(
        node,
        fc.constantFrom(0, 1, 2, 3),
        fc.constantFrom("none", "root", "other", "owned"),
        fc.nat(2),
        (json, g, choice, field) => {
          const graph = choice === "owned" ? graphs[3]! : graphs[g]!;
          const type = typeOf(choice, graph, field);
          // The reference validates by the decoding walk itself, so it never meets either shortcut.
          const walked = (): unknown =>
            toJsWalk(decodeSchemaValueWalk(json as JsonValue, graph, { type, streams: "any" }).value, graph, type);
          expect(outcome(() => toJs(json as JsonValue, graph, type))).toEqual(outcome(walked));
        },
      ),
      { numRuns: 3000 },
    );
  });

  it("returns a plain string's text, and refuses what the walk refuses", () => {
    expect(toJs({ kind: "string", value: "é😀" }, graphs[0]!)).toBe("é😀");
    expect(toJs({ kind: "string", value: "x" }, graphs[3]!, ownedTypes[1]!)).toBe("x");
    for (const json of [
      { kind: "string", value: "\ud800" },
      { kind: "string", value: 1 },
      { kind: "string", value: "x", extra: 1 },
      { kind: "char", value: "x" },
      ["x"],
      null,
    ]) {
      expect(() => toJs(json as JsonValue, graphs[0]!)).toThrow(expect.objectContaining({ code: "validation-error" }));
    }
    // A char node is not a string; a string over the 8 MiB charge is limit-exceeded.
    expect(() => toJs({ kind: "string", value: "x" }, graphs[3]!, ownedTypes[2]!)).toThrow(
      expect.objectContaining({ code: "validation-error" }),
    );
    expect(() => toJs({ kind: "string", value: "é".repeat(4 * 1024 * 1024) }, graphs[0]!)).toThrow(
      expect.objectContaining({ code: "limit-exceeded" }),
    );
    const hostile = {
      kind: "string",
      get value(): string {
        throw new Error("boom");
      },
    };
    expect(() => toJs(hostile as unknown as JsonValue, graphs[0]!)).toThrow(expect.objectContaining({ code: "validation-error" }));
  });
});
