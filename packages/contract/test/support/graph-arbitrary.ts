/**
 * Random catalogue entries for the codegen property: SchemaGraph JSON with
 * every kind, random restrictions and metadata on any node, field, case and
 * branch, names that are not identifiers (`__proto__`, integer-like, any
 * Unicode), and defs that refer to each other (recursion included). Only
 * graphs `decodeSchemaGraph` accepts are kept.
 */
import fc from "fast-check";
import { decodeSchemaGraph, type SchemaGraphJson, type SchemaType } from "@golem-stream/schema-value";
import type { CatalogueEntry } from "../../src/codegen/index.js";

type Json = SchemaType;
const node = (kind: string, value: object): Json => ({ kind, value }) as Json;
const text = fc.string({ unit: "grapheme", maxLength: 4 });
const name = fc.oneof(
  fc.string({ unit: "grapheme", minLength: 1, maxLength: 4 }),
  fc.constantFrom("__proto__", "0", "7", "constructor", "class", "a b", "x"),
);
const names = (min: number) => fc.uniqueArray(name, { minLength: min, maxLength: 3 });
const strings = fc.array(text, { maxLength: 2 });
const opt = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });

const role = fc.oneof(
  fc.constantFrom({ tag: "multimodal" }, { tag: "unstructured-text" }, { tag: "unstructured-binary" }),
  text.map((value) => ({ tag: "other", value })),
);
const metadata = opt(fc.record({ doc: text, aliases: strings, examples: strings, deprecated: text, role }, { requiredKeys: [] }));
/** Adds `metadata` to an object when the arbitrary draws one. */
const withMeta = <T extends object>(arb: fc.Arbitrary<T>) =>
  fc.tuple(arb, metadata).map(([v, m]) => (m === undefined ? v : { ...v, metadata: m }));
const member = <T>(key: string, arb: fc.Arbitrary<T>) => opt(arb).map((v) => (v === undefined ? {} : { [key]: v }));
const merged = (...parts: fc.Arbitrary<object>[]) => fc.tuple(...parts).map((objects) => Object.assign({}, ...objects) as object);

const RANGES: Record<string, [bigint, bigint]> = {
  s8: [-128n, 127n],
  s16: [-32768n, 32767n],
  s32: [-(2n ** 31n), 2n ** 31n - 1n],
  s64: [-(2n ** 63n), 2n ** 63n - 1n],
  u8: [0n, 255n],
  u16: [0n, 65535n],
  u32: [0n, 2n ** 32n - 1n],
  u64: [0n, 2n ** 64n - 1n],
};
const bitsOf = (x: number) => {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  return { kind: "float-bits", value: view.getBigUint64(0).toString() };
};
const floatBits = fc.double({ noNaN: true, noDefaultInfinity: true }).map(bitsOf);
// An f32 bound is a value f32 holds exactly (a graph with any other is refused).
const f32Bits = fc.float({ noNaN: true, noDefaultInfinity: true }).map(bitsOf);
const numeric = fc.constantFrom(...Object.keys(RANGES), "f32", "f64").chain((kind) => {
  const range = RANGES[kind];
  const bound =
    range === undefined
      ? kind === "f32"
        ? f32Bits
        : floatBits
      : fc
          .bigInt({ min: range[0], max: range[1] })
          .map((v) => ({ kind: kind.startsWith("s") ? "signed" : "unsigned", value: v.toString() }));
  const restrictions = merged(member("min", bound), member("max", bound), member("unit", text));
  return withMeta(opt(restrictions).map((r) => (r === undefined ? {} : { restrictions: r }))).map((value) => node(kind, value));
});
const u32 = fc.integer({ min: 0, max: 2 ** 32 - 1 });
const quantityBound = fc.record({
  mantissa: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String),
  scale: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
  unit: text,
});

const leaf: fc.Arbitrary<Json> = fc.oneof(
  numeric,
  fc.constantFrom("bool", "char", "string", "datetime", "duration").chain((kind) => withMeta(fc.constant({})).map((v) => node(kind, v))),
  withMeta(
    fc.record({
      restrictions: merged(
        member("languages", strings),
        member("minLength", u32),
        member("maxLength", u32),
        member("regex", fc.constantFrom("^a", "[\\p{L}]+", "x|y", "")),
      ),
    }),
  ).map((v) => node("text", v)),
  withMeta(fc.record({ restrictions: merged(member("mimeTypes", strings), member("minBytes", u32), member("maxBytes", u32)) })).map((v) =>
    node("binary", v),
  ),
  withMeta(
    fc.record({
      spec: merged(
        fc.record({ direction: fc.constantFrom("input", "output", "in-out"), kind: fc.constantFrom("file", "directory", "any") }),
        member("allowedMimeTypes", strings),
        member("allowedExtensions", strings),
      ),
    }),
  ).map((v) => node("path", v)),
  withMeta(fc.record({ restrictions: merged(member("allowedSchemes", strings), member("allowedHosts", strings)) })).map((v) =>
    node("url", v),
  ),
  withMeta(
    fc.record({
      spec: merged(fc.record({ baseUnit: text, allowedSuffixes: strings }), member("min", quantityBound), member("max", quantityBound)),
    }),
  ).map((v) => node("quantity", v)),
  withMeta(fc.record({ cases: names(0) })).map((v) => node("enum", v)),
  withMeta(fc.record({ flags: names(0) })).map((v) => node("flags", v)),
  fc
    .tuple(
      fc.constantFrom("secret", "quota-token", "permission-card", "future"),
      fc.dictionary(name, fc.jsonValue({ maxDepth: 1 }), { maxKeys: 2 }),
    )
    .map(([kind, value]) => node(kind, value)),
);

const DEF_IDS = ["d0", "1", "x y"];

function typeArb(refs: boolean): fc.Arbitrary<Json> {
  const ref = withMeta(fc.record({ id: fc.constantFrom(...DEF_IDS) })).map((v) => node("ref", v));
  return fc.letrec<{ type: Json }>((tie) => ({
    type: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      refs ? fc.oneof(leaf, ref) : leaf,
      names(0)
        .chain((ns) => fc.tuple(...ns.map((n) => withMeta(tie("type").map((body) => ({ name: n, body }))))))
        .chain((fields) => withMeta(fc.constant({ fields })).map((v) => node("record", v))),
      names(0)
        .chain((ns) =>
          fc.tuple(
            ...ns.map((n) => withMeta(opt(tie("type")).map((payload) => (payload === undefined ? { name: n } : { name: n, payload })))),
          ),
        )
        .chain((cases) => withMeta(fc.constant({ cases })).map((v) => node("variant", v))),
      withMeta(fc.array(tie("type"), { maxLength: 3 }).map((elements) => ({ elements }))).map((v) => node("tuple", v)),
      withMeta(tie("type").map((element) => ({ element }))).map((v) => node("list", v)),
      withMeta(fc.tuple(tie("type"), u32).map(([element, length]) => ({ element, length }))).map((v) => node("fixed-list", v)),
      withMeta(fc.tuple(leaf, tie("type")).map(([key, value]) => ({ key, value }))).map((v) => node("map", v)),
      withMeta(tie("type").map((inner) => ({ inner }))).map((v) => node("option", v)),
      withMeta(tie("type").map((inner) => ({ inner }))).map((v) => node("stream", v)),
      withMeta(fc.record({ ok: tie("type"), err: tie("type") }, { requiredKeys: [] }).map((spec) => ({ spec }))).map((v) =>
        node("result", v),
      ),
      withMeta(
        fc.tuple(tie("type"), metadata).map(([body, branchMeta]) => ({
          spec: {
            branches: [
              {
                tag: "s",
                body: node("string", {}),
                discriminator: { rule: "prefix", value: { prefix: "s:" } },
                ...(branchMeta === undefined ? {} : { metadata: branchMeta }),
              },
              { tag: "t", body: node("text", { restrictions: {} }), discriminator: { rule: "regex", value: { regex: "^t" } } },
              {
                tag: "r",
                body: node("record", {
                  fields: [
                    { name: "type", body: node("string", {}) },
                    { name: "inner", body },
                  ],
                }),
                discriminator: { rule: "field-equals", value: { fieldName: "type", literal: "r" } },
              },
              { tag: "a", body: node("record", { fields: [] }), discriminator: { rule: "field-absent", value: { fieldName: "type" } } },
            ],
          },
        })),
      ).map((v) => node("union", v)),
    ),
  })).type;
}

const plainType = typeArb(false);
const refType = typeArb(true);
const defs = fc.tuple(
  ...DEF_IDS.map((id) =>
    fc.tuple(refType, opt(text)).map(([body, defName]) => (defName === undefined ? { id, body } : { id, name: defName, body })),
  ),
);

/** A graph rooted at `root`, sometimes with the defs its refs need. */
const graphOf = (root: (type: fc.Arbitrary<Json>) => fc.Arbitrary<Json>): fc.Arbitrary<SchemaGraphJson> =>
  fc.oneof(
    root(plainType).map((r): SchemaGraphJson => ({ root: r })),
    fc.tuple(root(refType), defs).map(([r, d]): SchemaGraphJson => ({ defs: d, root: r })),
  );
const recordRoot = (type: fc.Arbitrary<Json>) =>
  names(0)
    .chain((ns) => fc.tuple(...ns.map((n) => type.map((body) => ({ name: n, body })))))
    .map((fields) => node("record", { fields }));

const valid = (streams: "allowed" | "forbidden") => (graph: SchemaGraphJson) => {
  try {
    decodeSchemaGraph(graph, { streams });
    return true;
  } catch {
    return false;
  }
};

export const catalogueEntryArb: fc.Arbitrary<CatalogueEntry> = fc
  .record({
    name,
    constructorParameters: graphOf(recordRoot).filter(valid("forbidden")),
    // Protocol 4.2: a path is a non-empty array of non-empty strings.
    config: fc.array(
      fc.record({
        path: fc.array(
          text.filter((part) => part !== ""),
          { minLength: 1, maxLength: 2 },
        ),
      }),
      { maxLength: 2 },
    ),
    methods: names(0).chain((ns) =>
      fc.tuple(
        ...ns.map((n) =>
          fc.record({
            name: fc.constant(n),
            parameters: graphOf(recordRoot).filter(valid("allowed")),
            result: opt(graphOf((type) => type).filter(valid("allowed"))),
          }),
        ),
      ),
    ),
  })
  .map((entry) => ({
    ...entry,
    methods: entry.methods.map((m) => (m.result === undefined ? { name: m.name, parameters: m.parameters } : m)),
  }));
