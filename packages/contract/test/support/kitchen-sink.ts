/**
 * Hand-written catalogue entries covering every SchemaGraph feature
 * decisions-v1 section 1 allows: every kind, every restriction, metadata on
 * nodes, fields, cases, branches and def names, shared and recursive defs
 * (self, mutual, alias chains, a root behind a ref), and names that are not
 * identifiers. Written as plain JSON, not with `t`, so the builders under
 * test do not write their own expectations.
 */
import type { SchemaGraphJson } from "@golem-stream/schema-value";
import type { CatalogueEntry } from "../../src/codegen/index.js";

type Json = SchemaGraphJson["root"];
const node = (kind: string, value: object = {}): Json => ({ kind, value }) as Json;
const record = (...fields: [string, Json, object?][]): Json =>
  node("record", { fields: fields.map(([name, body, metadata]) => (metadata === undefined ? { name, body } : { name, body, metadata })) });
const graph = (root: Json, defs?: SchemaGraphJson["defs"]): SchemaGraphJson => (defs === undefined ? { root } : { defs, root });
const fullMetadata = {
  doc: "A doc\nwith */ and ${x} and `ticks`",
  aliases: ["a", "b"],
  examples: ["1"],
  deprecated: "use v2",
  role: { tag: "other", value: "custom" },
};

/** `__proto__` as a JSON member: JSON.parse makes it an own member, as a server's document would. */
const protoMember = JSON.parse('{"__proto__": {"odd": true}, "inner": {"anything": [1, "two", null]}}') as object;

const scalars: [string, Json][] = [
  ["bool", node("bool")],
  ["char", node("char")],
  ["string", node("string")],
  ["datetime", node("datetime")],
  ["duration", node("duration")],
  ["s8", node("s8", { restrictions: { min: { kind: "signed", value: "-128" }, max: { kind: "signed", value: "127" }, unit: "°C" } })],
  ["s16", node("s16", { restrictions: { min: { kind: "signed", value: "-5" } } })],
  ["s32", node("s32", { restrictions: {} })],
  [
    "s64",
    node("s64", {
      restrictions: { min: { kind: "signed", value: "-9223372036854775808" }, max: { kind: "signed", value: "9223372036854775807" } },
    }),
  ],
  ["u8", node("u8", { restrictions: { max: { kind: "unsigned", value: "9" } } })],
  ["u16", node("u16")],
  ["u32", node("u32", { restrictions: { unit: "ms" } })],
  ["u64", node("u64", { restrictions: { max: { kind: "unsigned", value: "18446744073709551615" } } })],
  [
    "f32",
    node("f32", { restrictions: { min: { kind: "float-bits", value: "0" }, max: { kind: "float-bits", value: "4607182418800017408" } } }),
  ],
  ["f64", node("f64", { restrictions: { min: { kind: "float-bits", value: "13830554455654793216" } } })],
  ["text", node("text", { restrictions: { languages: ["en", "de-CH"], minLength: 1, maxLength: 80, regex: "^[\\p{L} ]+$" } })],
  ["plainText", node("text", { restrictions: {} })],
  ["binary", node("binary", { restrictions: { mimeTypes: ["image/png"], minBytes: 0, maxBytes: 1048576 } })],
  [
    "path",
    node("path", { spec: { direction: "in-out", kind: "file", allowedMimeTypes: ["text/plain"], allowedExtensions: ["txt", "md"] } }),
  ],
  ["defaultPath", node("path", { spec: { direction: "input", kind: "any" } })],
  ["url", node("url", { restrictions: { allowedSchemes: ["https"], allowedHosts: ["example.com"] } })],
  [
    "quantity",
    node("quantity", {
      spec: {
        baseUnit: "m",
        allowedSuffixes: ["km", "m"],
        min: { mantissa: "-15", scale: 1, unit: "m" },
        max: { mantissa: "5", scale: -3, unit: "km" },
      },
    }),
  ],
  ["emptyQuantity", node("quantity", { spec: { baseUnit: "s", allowedSuffixes: [] } })],
];

const composites: [string, Json][] = [
  [
    "record",
    record(["x", node("s32")], ["0", node("u8")], ["__proto__", node("bool")], ["with space", node("string"), { doc: "field doc" }]),
  ],
  ["emptyRecord", record()],
  [
    "variant",
    node("variant", { cases: [{ name: "none" }, { name: "some", payload: node("u64") }, { name: "1", metadata: { aliases: ["one"] } }] }),
  ],
  ["plainVariant", node("variant", { cases: [{ name: "a" }, { name: "b-c", payload: node("string") }] })],
  ["enum", node("enum", { cases: ["red", "green", "__proto__", "0"] })],
  ["flags", node("flags", { flags: ["read", "write"] })],
  ["tuple", node("tuple", { elements: [node("bool"), node("s64")] })],
  ["emptyTuple", node("tuple", { elements: [] })],
  ["list", node("list", { element: node("string") })],
  ["fixedList", node("fixed-list", { element: node("f32"), length: 3 })],
  ["map", node("map", { key: node("string"), value: node("u32") })],
  ["option", node("option", { inner: node("option", { inner: node("u8") }) })],
  ["resultBoth", node("result", { spec: { ok: node("string"), err: node("u32") } })],
  ["resultOk", node("result", { spec: { ok: node("string") } })],
  ["resultErr", node("result", { spec: { err: node("string") } })],
  ["resultNeither", node("result", { spec: {} })],
  [
    "union",
    node("union", {
      spec: {
        branches: [
          { tag: "p", body: node("string"), discriminator: { rule: "prefix", value: { prefix: "p:" } } },
          {
            tag: "s",
            body: node("text", { restrictions: {} }),
            discriminator: { rule: "suffix", value: { suffix: ".s" } },
            metadata: { doc: "branch" },
          },
          { tag: "c", body: node("url", { restrictions: {} }), discriminator: { rule: "contains", value: { substring: "//" } } },
          {
            tag: "r",
            body: node("path", { spec: { direction: "output", kind: "directory" } }),
            discriminator: { rule: "regex", value: { regex: "^/" } },
          },
          {
            tag: "fe",
            body: record(["type", node("string")]),
            discriminator: { rule: "field-equals", value: { fieldName: "type", literal: "a" } },
          },
          { tag: "fe2", body: record(["kind", node("u8")]), discriminator: { rule: "field-equals", value: { fieldName: "kind" } } },
          { tag: "fa", body: record(["other", node("u8")]), discriminator: { rule: "field-absent", value: { fieldName: "type" } } },
        ],
      },
    }),
  ],
  ["secret", node("secret", protoMember)],
  ["quotaToken", node("quota-token")],
  ["permissionCard", node("permission-card", { x: 1 })],
  ["future", node("future")],
  ["withMetadata", node("list", { element: node("u8", { metadata: { role: { tag: "multimodal" } } }), metadata: fullMetadata })],
  [
    "roles",
    record(
      ["a", node("string", { metadata: { role: { tag: "unstructured-text" } } })],
      ["b", node("binary", { restrictions: {}, metadata: { role: { tag: "unstructured-binary" } } })],
    ),
  ],
];

const treeDefs: SchemaGraphJson["defs"] = [
  // A self-recursive def, a mutually recursive pair, a shared leaf and an alias chain to it.
  {
    id: "tree",
    name: "Tree node",
    body: record(["value", node("ref", { id: "leaf" })], ["kids", node("list", { element: node("ref", { id: "tree" }) })]),
  },
  { id: "even", body: node("option", { inner: record(["next", node("ref", { id: "odd" })]) }) },
  { id: "odd", body: record(["next", node("ref", { id: "even", metadata: { doc: "a ref with metadata" } })]) },
  { id: "leaf", body: node("u32", { metadata: { doc: "shared" } }) },
  { id: "alias", body: node("ref", { id: "leaf" }) },
  { id: "0", body: node("ref", { id: "alias" }) },
  {
    id: "params",
    body: record(["tree", node("ref", { id: "tree" })], ["even", node("ref", { id: "even" })], ["n", node("ref", { id: "0" })]),
  },
  { id: "with stream", body: node("stream", { inner: node("ref", { id: "tree" }) }) },
];

export const kitchenSink: CatalogueEntry[] = [
  {
    name: "kitchen-sink",
    constructorParameters: graph(record(...scalars.map(([name, type]): [string, Json] => [name, type]))),
    config: [{ path: ["provider", "model"] }, { path: ["weird key", "__proto__"] }],
    methods: [
      { name: "scalars", parameters: graph(record(...scalars)), result: graph(record(...scalars)) },
      {
        name: "composites",
        parameters: graph(record(...composites)),
        result: graph(node("tuple", { elements: composites.map(([, type]) => type) })),
      },
      {
        name: "streams",
        parameters: graph(
          record(
            ["bytes", node("stream", { inner: node("u8") })],
            ["nested", node("stream", { inner: record(["s", node("stream", { inner: node("string") })]) })],
          ),
        ),
        result: graph(node("stream", { inner: node("binary", { restrictions: {} }) })),
      },
      // The root behind a ref, recursion everywhere.
      {
        name: "recursive",
        parameters: graph(node("ref", { id: "params" }), treeDefs),
        result: graph(node("ref", { id: "with stream" }), treeDefs),
      },
      { name: "no result", parameters: graph(record()) },
      { name: "__proto__", parameters: graph(record(["constructor", node("string")])) },
      { name: "0", parameters: graph(record()), result: graph(node("bool", { metadata: { deprecated: "gone" } })) },
      { name: "class", parameters: graph(record(), [{ id: "unused", body: node("string") }]) },
    ],
  },
  // Names that collide once made identifiers, reserved words, digits, non-ASCII.
  ...["my-agent", "my_agent", "myAgent", "class", "2fa", "日本", "echo"].map((name): CatalogueEntry => ({
    name,
    constructorParameters: graph(record()),
    methods: [{ name: "ping", parameters: graph(record()) }],
  })),
];
