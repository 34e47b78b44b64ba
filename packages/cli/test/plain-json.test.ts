import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { decodeSchemaGraph, encodeSchemaValue, t } from "@golem-stream/schema-value";
import type { SchemaType } from "@golem-stream/schema-value";
import { ProtocolError } from "@golem-stream/wire";
import type { JsonValue } from "@golem-stream/wire";
import { nativeToPlain, plainToNative } from "../src/plain-json.js";
import { renderWithStreamNames } from "../src/output/stream-names.js";

const everything = t.record({
  flag: t.bool(),
  small: t.u32(),
  big: t.u64(),
  neg: t.s64(),
  ratio: t.f64(),
  name: t.string(),
  tags: t.list(t.string()),
  maybe: t.option(t.u8()),
  colour: t.enum(["red", "green"]),
  perms: t.flags(["read", "write"]),
  shape: t.variant({ circle: t.f32(), none: null }),
  outcome: t.result({ ok: t.string(), err: t.u32() }),
  blob: t.binary(),
  pairs: t.map(t.string(), t.s32()),
  took: t.duration(),
});
const graph = decodeSchemaGraph(t.graph(everything));

describe("plain JSON arguments and output", () => {
  const plain: JsonValue = {
    flag: true,
    small: 7,
    big: "18446744073709551615",
    neg: -5,
    ratio: "NaN",
    name: "é😀",
    tags: ["a", "b"],
    maybe: null,
    colour: "green",
    perms: ["write"],
    shape: { case: "circle", value: 1.5 },
    outcome: { err: 3 },
    blob: "AAEC/w==",
    pairs: [["x", 1]],
    took: "1000000000",
  };

  it("reads every plain spelling and prints it back in the canonical plain form", () => {
    const native = plainToNative(plain, graph, graph.root);
    expect(nativeToPlain(native, graph, graph.root, () => "?")).toEqual({ ...plain, neg: "-5" });
  });

  it("keeps 64-bit integers exact in both directions", () => {
    const native = plainToNative({ ...(plain as object), big: "9007199254740993" }, graph, graph.root);
    expect(encodeSchemaValue(native)).toContain('"9007199254740993"');
  });

  it.each([
    ["a u64 beyond range", { big: "18446744073709551616" }],
    ["a non-canonical decimal", { big: "007" }],
    ["an unsafe JSON number for u64", { big: 9007199254740993 }],
    ["bad base64", { blob: "***" }],
    ["an unknown enum case", { colour: "blue" }],
    ["a missing field", { name: undefined }],
  ])("refuses %s with a ProtocolError", (_, change) => {
    const input = JSON.parse(JSON.stringify({ ...(plain as object), ...change })) as JsonValue;
    expect(() => plainToNative(input, graph, graph.root)).toThrow(ProtocolError);
  });

  it("round-trips any u64 given as a string", () => {
    const u64 = decodeSchemaGraph(t.graph(t.u64()));
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), (n) => {
        const native = plainToNative(n.toString(), u64, u64.root);
        expect(nativeToPlain(native, u64, u64.root, () => "?")).toBe(n.toString());
      }),
    );
  });
});

describe("stream names", () => {
  const split = decodeSchemaGraph(t.graph(t.record({ upper: t.stream(t.u8()), lines: t.stream(t.string()) })), { streams: "allowed" });
  const stream = (token: string) => ({ kind: "stream", value: { streamToken: token } });

  it("names record fields by JSONPath and prints the stream names in place of the streams", () => {
    const rendered = renderWithStreamNames(
      { kind: "record", value: { fields: [stream("gai1_U"), stream("gai1_L")] } },
      split,
      split.root,
      "$",
    );
    expect(rendered.plain).toEqual({ upper: "$.upper", lines: "$.lines" });
    expect(rendered.streams.map((s) => [s.name, s.streamToken])).toEqual([
      ["$.upper", "gai1_U"],
      ["$.lines", "gai1_L"],
    ]);
  });

  it("names a root stream $ and nested streams under their item", () => {
    const groups = decodeSchemaGraph(t.graph(t.stream(t.record({ name: t.string(), items: t.stream(t.u32()) }))), {
      streams: "allowed",
    });
    expect(renderWithStreamNames(stream("gai1_R"), groups, groups.root, "$").plain).toBe("$");
    const element = (groups.resolve(groups.root) as { value: { inner: SchemaType } }).value.inner;
    const item = renderWithStreamNames(
      { kind: "record", value: { fields: [{ kind: "string", value: "g0" }, stream("gai1_N")] } },
      groups,
      element,
      "$[0]",
    );
    expect(item.plain).toEqual({ name: "g0", items: "$[0].items" });
    expect(item.streams[0]?.name).toBe("$[0].items");
  });

  it("cannot be fooled by a string that looks like a marker", () => {
    const g = decodeSchemaGraph(t.graph(t.record({ s: t.string(), x: t.stream(t.u8()) })), { streams: "allowed" });
    const rendered = renderWithStreamNames(
      { kind: "record", value: { fields: [{ kind: "string", value: "\u0000stream-0\u0000" }, stream("gai1_X")] } },
      g,
      g.root,
      "$",
    );
    expect(rendered.plain).toEqual({ s: "\u0000stream-0\u0000", x: "$.x" });
  });
});

describe("plain JSON errors name what the person wrote", () => {
  const person = t.record({ name: t.string(), nick: t.option(t.string()), tags: t.list(t.record({ label: t.string() })) });
  const people = decodeSchemaGraph(t.graph(person));
  const convert = (json: JsonValue) => plainToNative(json, people, people.root, "--constructor");

  it("refuses an unknown field by its name, with the fields there are", () => {
    expect(() => convert({ nam: "x", tags: [] })).toThrow('--constructor: unknown field "nam" (fields: name, nick, tags)');
  });

  it("names a missing field; an option may be left out", () => {
    expect(() => convert({ tags: [] })).toThrow('--constructor: missing field "name"');
    expect(() => convert({ name: "x", tags: [] })).not.toThrow();
  });

  it("says where a wrong value is in plain JSON terms, not the native value's", () => {
    expect(() => convert({ name: 5, tags: [] })).toThrow(/^--constructor\.name: expected a string$/);
    expect(() => convert({ name: "x", tags: [{ label: "a" }, { label: 7 }] })).toThrow(
      /^--constructor\.tags\[1\]\.label: expected a string$/,
    );
  });
});
