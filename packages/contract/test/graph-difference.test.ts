/** `firstGraphDifference`: the path where two graphs first part, and each side's type there, briefly. */
import { decodeSchemaGraph, t, type SchemaType } from "@golem-stream/schema-value";
import { describe, expect, it } from "vitest";
import { brief, firstGraphDifference } from "../src/graph-difference.js";

const graph = (root: SchemaType, defs: Record<string, SchemaType> = {}) => decodeSchemaGraph(t.graph(root, defs));
const differ = (mine: SchemaType, theirs: SchemaType) => firstGraphDifference(graph(mine), graph(theirs), "$");
/** A two-branch union of records told apart by their `kind` field: `s` carries `text`, `n` carries `number`. */
const union = (text: SchemaType, number: SchemaType): SchemaType =>
  t.union(
    {
      tag: "s",
      body: t.record({ kind: t.string(), v: text }),
      discriminator: { rule: "field-equals", value: { fieldName: "kind", literal: "s" } },
    },
    {
      tag: "n",
      body: t.record({ kind: t.string(), v: number }),
      discriminator: { rule: "field-equals", value: { fieldName: "kind", literal: "n" } },
    },
  );

describe("firstGraphDifference", () => {
  it("finds none between equal graphs", () => {
    expect(differ(t.record({ a: t.list(t.map(t.string(), t.u8())) }), t.record({ a: t.list(t.map(t.string(), t.u8())) }))).toBeUndefined();
  });

  it.each([
    ["map values", t.map(t.string(), t.u8()), t.map(t.string(), t.u16()), "${value}", "u8", "u16"],
    ["map keys", t.map(t.string(), t.u8()), t.map(t.u32(), t.u8()), "${key}", "string", "u32"],
    ["tuple elements", t.tuple(t.bool(), t.s8()), t.tuple(t.bool(), t.s16()), "$[1]", "s8", "s16"],
    ["tuple lengths", t.tuple(t.bool()), t.tuple(t.bool(), t.bool()), "$", "tuple<bool>", "tuple<bool, bool>"],
    ["fixed-list lengths", t.fixedList(t.u8(), 4), t.fixedList(t.u8(), 8), "$", "list<u8, 4>", "list<u8, 8>"],
    ["variant payloads", t.variant({ ok: t.string(), none: null }), t.variant({ ok: t.char(), none: null }), "$:ok", "string", "char"],
    ["variant cases", t.variant({ a: null }), t.variant({ b: null }), "$", "variant{a}", "variant{b}"],
    ["result sides", t.result({ ok: t.u8(), err: t.string() }), t.result({ ok: t.u8(), err: t.char() }), "$:err", "string", "char"],
    ["enum cases", t.enum(["a", "b"]), t.enum(["a", "c"]), "$", "enum{a, b}", "enum{a, c}"],
    ["metadata", t.meta(t.string(), { doc: "mine" }), t.string(), "$", 'string {"metadata":{"doc":"mine"}}', "string"],
    ["union branch bodies", union(t.string(), t.u8()), union(t.string(), t.u16()), "$|n.v", "u8", "u16"],
    ["union branches' text", union(t.string(), t.u8()), union(t.char(), t.u8()), "$|s.v", "string", "char"],
    [
      "union discriminators",
      union(t.string(), t.u8()),
      t.union({
        tag: "s",
        body: t.record({ kind: t.string(), v: t.string() }),
        discriminator: { rule: "field-absent", value: { fieldName: "n" } },
      }),
      "$",
      "union{s: record{kind: string, v: string}, n: record{kind: string, v: u8}}",
      "union{s: record{kind: string, v: string}}",
    ],
    ["flags", t.flags(["read", "write"]), t.flags(["read"]), "$", "flags{read, write}", "flags{read}"],
    ["result with one side", t.result({ ok: t.u8() }), t.result({ err: t.u8() }), "$", "result<u8, _>", "result<_, u8>"],
  ])("%s", (_what, mine, theirs, path, mineBrief, theirsBrief) => {
    expect(differ(mine, theirs)).toEqual({ path, mine: mineBrief, theirs: theirsBrief });
  });

  it("follows references on both sides, once per pair (recursive types end)", () => {
    const mine = graph(t.ref("a"), { a: t.record({ next: t.option(t.ref("a")), value: t.u8() }) });
    const theirs = graph(t.ref("b"), { b: t.record({ next: t.option(t.ref("b")), value: t.u16() }) });
    expect(firstGraphDifference(mine, theirs, "result")).toEqual({ path: "result.value", mine: "u8", theirs: "u16" });
    expect(firstGraphDifference(mine, mine, "result")).toBeUndefined();
  });

  it("compares a reference met again against another type: the pair is new, so it is compared", () => {
    const theirs = graph(t.record({ x: t.ref("p"), y: t.ref("p") }), { p: t.u8() });
    expect(firstGraphDifference(graph(t.record({ x: t.u8(), y: t.u16() })), theirs, "$")).toEqual({
      path: "$.y",
      mine: "u16",
      theirs: "u8",
    });
    expect(firstGraphDifference(theirs, graph(t.record({ x: t.u8(), y: t.u16() })), "$")).toEqual({
      path: "$.y",
      mine: "u8",
      theirs: "u16",
    });
  });

  it("ends when one side names a recursive type where the other spells it out, its references at other depths", () => {
    // The same infinite tree: a Tree of lists of Trees, against a record of a Forest of records.
    const theirs = graph(t.ref("tree"), { tree: t.record({ children: t.list(t.ref("tree")) }) });
    const mine = graph(t.record({ children: t.ref("forest") }), { forest: t.list(t.record({ children: t.ref("forest") })) });
    expect(firstGraphDifference(mine, theirs, "$")).toBeUndefined();
    const theirsWithLeaf = graph(t.ref("tree"), { tree: t.record({ children: t.list(t.ref("tree")), leaf: t.u16() }) });
    const mineWithLeaf = graph(t.record({ children: t.ref("forest"), leaf: t.u8() }), {
      forest: t.list(t.record({ children: t.ref("forest"), leaf: t.u8() })),
    });
    expect(firstGraphDifference(mineWithLeaf, theirsWithLeaf, "$")).toEqual({ path: "$.children[].leaf", mine: "u8", theirs: "u16" });
  });

  // A bound, not a measure: a walk of every path took 3 s here (four times longer a level deeper), each pair once about 1 ms.
  it("compares a graph that shares its type objects once per pair of objects, not once per path", { timeout: 2_000 }, () => {
    // Twenty-two levels of tuple<x, x>: four million paths, spelled out by sharing on one side and
    // by definitions on the other.
    let shared: SchemaType = t.u8();
    const defs: Record<string, SchemaType> = { d0: t.u8() };
    for (let level = 1; level <= 22; level++) {
      shared = t.tuple(shared, shared);
      defs[`d${level}`] = t.tuple(t.ref(`d${level - 1}`), t.ref(`d${level - 1}`));
    }
    expect(
      firstGraphDifference(graph(t.record({ x: shared, y: t.u8() })), graph(t.record({ x: t.ref("d22"), y: t.u16() }), defs), "$"),
    ).toEqual({ path: "$.y", mine: "u8", theirs: "u16" });
  });

  it("spells deep types briefly and cuts long ones", () => {
    expect(brief(t.list(t.list(t.list(t.u8()))), 2)).toBe("list<list<list<…>>>");
    const wide = t.record(Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`field${i}`, t.string()])));
    const text = brief(wide, 2);
    expect(text.length).toBe(120);
    expect(text.endsWith("…")).toBe(true);
  });
});
