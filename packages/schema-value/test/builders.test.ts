import { describe, expect, it } from "vitest";
import { decodeSchemaGraph, decodeSchemaValue, encodeSchemaValue, t, v, type Metadata, type SchemaValue } from "../src/index.js";
import { thrown } from "./helpers.js";

describe("v builders", () => {
  it("build values that decode to themselves", () => {
    const type = t.record({
      b: t.bool(),
      n: t.u64(),
      s: t.s64(),
      f: t.f32(),
      c: t.char(),
      o: t.option(t.u8()),
      r: t.result({ err: t.string() }),
      when: t.datetime(),
      d: t.duration(),
      q: t.quantity({ baseUnit: "kg", allowedSuffixes: [] }),
      bin: t.binary(),
      m: t.map(t.string(), t.u8()),
      e: t.enum(["a", "b"]),
      fl: t.flags(["x", "y"]),
      fx: t.fixedList(t.u8(), 1),
      tx: t.text(),
      p: t.path(),
      u: t.url(),
      vr: t.variant({ a: null, b: t.u8() }),
      un: t.union({ tag: "t", body: t.string(), discriminator: { rule: "contains", value: { substring: "" } } }),
    });
    const value = v.record(
      v.bool(true),
      v.u64(123n),
      v.s64(-5n),
      v.f32(0.1),
      v.char("x"),
      v.option(null),
      v.err(v.string("no")),
      v.datetime(new Date(0)),
      v.duration(1_000_000n),
      v.quantity(-15n, 1, "kg"),
      v.binary(new Uint8Array([1]), "image/png"),
      v.map([v.string("k"), v.u8(1)]),
      v.enum(1),
      v.flags(true, false),
      v.fixedList(v.u8(1)),
      v.text("hi", "en"),
      v.path("a"),
      v.url("https://x.y"),
      v.variant(1, v.u8(2)),
      v.union("t", v.string("z")),
    );
    const decoded = decodeSchemaValue(value, decodeSchemaGraph(t.graph(type)));
    expect(encodeSchemaValue(decoded.value)).toBe(encodeSchemaValue(value));
  });

  it("normalize what they can without a schema", () => {
    expect(v.f32(0.10000000149011612)).toEqual({ kind: "f32", value: 0.1 });
    expect(v.f64(Number.NaN)).toEqual({ kind: "f64", value: "NaN" });
    expect(v.datetime("2026-01-01t00:00:00.10z")).toEqual({ kind: "datetime", value: { value: "2026-01-01T00:00:00.1Z" } });
    expect(v.s32(-0)).toEqual({ kind: "s32", value: 0 });
  });

  it("refuse values no schema could accept", () => {
    expect(thrown(() => v.u8(256)).code).toBe("validation-error");
    expect(thrown(() => v.u64(-1n)).code).toBe("validation-error");
    expect(thrown(() => v.s64(1n << 63n)).code).toBe("validation-error");
    expect(thrown(() => v.char("ab")).code).toBe("validation-error");
    expect(thrown(() => v.f32(1e39)).code).toBe("validation-error");
    expect(thrown(() => v.streamProvisional("not-a-uuid")).code).toBe("validation-error");
    expect(thrown(() => v.datetime(new Date(Number.NaN))).code).toBe("validation-error");
  });

  it("make wrong shapes a compile error", () => {
    // @ts-expect-error 64-bit values are bigints
    expect(() => v.u64(5)).toThrow();
    // @ts-expect-error a record holds values, not data
    const bad: SchemaValue = v.record("x");
    expect(bad.kind).toBe("record");
    // @ts-expect-error kind and payload must agree
    const mismatched: SchemaValue = { kind: "u64", value: 5 };
    expect(mismatched.kind).toBe("u64");
  });
});

describe("t builders", () => {
  it("build graphs that decode", () => {
    const json = t.graph(t.ref("node"), { node: t.record({ value: t.u8(), next: t.option(t.ref("node")) }) });
    expect(json).toEqual({
      defs: [
        {
          id: "node",
          body: {
            kind: "record",
            value: {
              fields: [
                { name: "value", body: { kind: "u8", value: {} } },
                { name: "next", body: { kind: "option", value: { inner: { kind: "ref", value: { id: "node" } } } } },
              ],
            },
          },
        },
      ],
      root: { kind: "ref", value: { id: "node" } },
    });
    expect(() => decodeSchemaGraph(json)).not.toThrow();
  });

  it("keep field order with recordOf, even for integer-like names", () => {
    expect(
      t.recordOf([
        ["b", t.u8()],
        ["1", t.u8()],
      ]),
    ).toEqual({
      kind: "record",
      value: {
        fields: [
          { name: "b", body: t.u8() },
          { name: "1", body: t.u8() },
        ],
      },
    });
  });

  it("put metadata on fields and cases with recordOf and variantOf, keeping their order", () => {
    const doc = { doc: "d" };
    expect(
      t.recordOf([
        ["b", t.u8(), doc],
        ["1", t.u8()],
      ]).value.fields,
    ).toEqual([
      { name: "b", body: t.u8(), metadata: doc },
      { name: "1", body: t.u8() },
    ]);
    expect(
      t.variantOf([
        ["2", null, doc],
        ["a", t.string()],
      ]),
    ).toEqual({
      kind: "variant",
      value: {
        cases: [
          { name: "2", metadata: doc },
          { name: "a", payload: t.string() },
        ],
      },
    });
  });

  it("put metadata on any node with meta, and on union branches", () => {
    const metadata: Metadata = { doc: "x", aliases: ["y"], examples: ["1"], deprecated: "no", role: { tag: "other", value: "v" } };
    const json = t.graph(t.meta(t.record({ r: t.meta(t.ref("d"), { doc: "ref" }) }), metadata), [
      {
        id: "d",
        name: "Display",
        body: t.union({
          tag: "a",
          body: t.string(),
          discriminator: { rule: "prefix", value: { prefix: "a" } },
          metadata: { doc: "branch" },
        }),
      },
    ]);
    const graph = decodeSchemaGraph(json);
    expect(graph.toJSON()).toEqual(json);
    expect(graph.root.value.metadata).toEqual(metadata);
    expect(graph.defs[0]?.name).toBe("Display");
    // meta copies: the type it was given is unchanged.
    const plain = t.u8();
    t.meta(plain, { doc: "z" });
    expect(plain).toEqual({ kind: "u8", value: {} });
  });

  it("declare host-managed kinds, which no value fits", () => {
    const json = t.graph(t.record({ s: t.hostManaged("secret", { any: [1] }), f: t.hostManaged("future") }));
    expect(decodeSchemaGraph(json).toJSON()).toEqual({
      root: {
        kind: "record",
        value: {
          fields: [
            { name: "s", body: { kind: "secret", value: { any: [1] } } },
            { name: "f", body: { kind: "future", value: {} } },
          ],
        },
      },
    });
  });

  it("take defs as a list, keeping integer-like ids in order", () => {
    expect(
      t
        .graph(t.ref("b"), [
          { id: "b", body: t.u8() },
          { id: "1", body: t.ref("b") },
        ])
        .defs?.map((d) => d.id),
    ).toEqual(["b", "1"]);
    // A typed ref is the same JSON as an untyped one: the type argument is compile-time only.
    const body = t.u8();
    expect(t.ref<typeof body>("b")).toEqual(t.ref("b"));
  });
});
