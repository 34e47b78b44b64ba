/**
 * What the page shows as text: output items (through the stream's element schema when known),
 * stream names from JSON pointers, byte sizes.
 */
import { describe, expect, it } from "vitest";
import type { ElementSchema, SchemaValueJson } from "@golem-stream/client";
import { decodeSchemaGraph, t, v, type SchemaType } from "@golem-stream/schema-value";
import { formatBytes, pointerName, renderItem } from "../src/web/render.js";

const noNames = (token: string): string => `?${token}`;

function schemaOf(type: SchemaType): ElementSchema {
  const graph = decodeSchemaGraph(t.graph(type), { streams: "allowed" });
  return { graph, elementType: graph.root, direct: undefined };
}

const item = (value: unknown): SchemaValueJson => value as SchemaValueJson;

describe("formatBytes", () => {
  it.each([
    [0, "0 B"],
    [1023, "1023 B"],
    [1023.6, "1024 B"],
    [1024, "1.0 KiB"],
    [1536, "1.5 KiB"],
    [1024 * 1024 - 1, "1024.0 KiB"],
    [1024 * 1024, "1.0 MiB"],
    [5.25 * 1024 * 1024, "5.3 MiB"],
    [1024 ** 3, "1.00 GiB"],
    [2.5 * 1024 ** 4, "2560.00 GiB"],
  ])("%d bytes is %s", (bytes, text) => {
    expect(formatBytes(bytes)).toBe(text);
  });
});

describe("renderItem", () => {
  it("shows a string item as itself, with or without its schema", () => {
    expect(renderItem(item(v.string('a "b"')), undefined, noNames)).toBe('a "b"');
    expect(renderItem(item(v.string('a "b"')), schemaOf(t.string()), noNames)).toBe('a "b"');
  });

  it("shows a record through its schema: field names, bigints as their digits", () => {
    const schema = schemaOf(t.record({ name: t.string(), big: t.u64(), tags: t.list(t.string()) }));
    const value = item(v.record(v.string("n"), v.u64(18446744073709551615n), v.list(v.string("a"))));
    expect(renderItem(value, schema, noNames)).toBe('{"name":"n","big":"18446744073709551615","tags":["a"]}');
  });

  it("shows maps as entry lists and binary as its size", () => {
    const schema = schemaOf(t.record({ m: t.map(t.string(), t.u8()), b: t.binary() }));
    const value = item(v.record(v.map([v.string("k"), v.u8(1)]), v.binary([1, 2, 3])));
    expect(renderItem(value, schema, noNames)).toBe('{"m":[["k",1]],"b":"<3 bytes>"}');
  });

  it("names a nested stream by what streamName says of its token", () => {
    const schema = schemaOf(t.record({ out: t.stream(t.u8()) }));
    const value = item(v.record(v.streamToken("gai1_tok")));
    expect(renderItem(value, schema, (token) => `named ${token}`)).toBe('{"out":"⟨stream named gai1_tok⟩"}');
  });

  it("falls back to the raw native JSON when the value does not fit the schema", () => {
    expect(renderItem(item(v.u8(7)), schemaOf(t.string()), noNames)).toBe('{"kind":"u8","value":7}');
    expect(renderItem(item(v.u8(7)), undefined, noNames)).toBe('{"kind":"u8","value":7}');
  });
});

describe("pointerName", () => {
  const graph = decodeSchemaGraph(
    t.graph(
      t.record({
        name: t.string(),
        items: t.list(t.record({ body: t.stream(t.u8()) })),
        pair: t.tuple(t.u8(), t.option(t.stream(t.string()))),
        fixed: t.fixedList(t.stream(t.u8()), 2),
        ref: t.ref("r"),
      }),
      { r: t.record({ deep: t.stream(t.u8()) }) },
    ),
    { streams: "allowed" },
  );
  const root = graph.root;

  it.each([
    ["", ""],
    ["/value/fields/0", "name"],
    ["/value/fields/1/value/elements/3/value/fields/0", "items[3].body"],
    ["/value/fields/2/value/elements/1/value/inner", "pair[1]"],
    ["/value/fields/3/value/elements/1", "fixed[1]"],
    ["/value/fields/4/value/fields/0", "ref.deep"],
    ["/value/fields/9", "#9"],
  ])("%j is %j", (pointer, name) => {
    expect(pointerName(graph, root, pointer)).toBe(name);
  });

  it("keeps the pointer for shapes it does not know, or without a schema", () => {
    expect(pointerName(graph, root, "/value/cases/0")).toBe("/value/cases/0");
    expect(pointerName(undefined, root, "/value/fields/0")).toBe("/value/fields/0");
    expect(pointerName(graph, undefined, "/value/fields/0")).toBe("/value/fields/0");
  });
});
