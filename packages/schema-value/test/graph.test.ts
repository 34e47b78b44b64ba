import { canonicalJson, type JsonValue } from "@golem-stream/wire";
import { describe, expect, it } from "vitest";
import { decodeSchemaGraph, extractGraph, isDirectBinary, SchemaGraph, t, type SchemaType } from "../src/index.js";
import { thrown } from "./helpers.js";

const person = t.record({ name: t.ref("name"), friends: t.list(t.ref("person")) });
const json = t.graph(t.record({ owner: t.ref("person"), tags: t.list(t.string()) }), {
  name: t.string(),
  person,
  unused: t.u8(),
});

describe("decodeSchemaGraph", () => {
  it("resolves refs through defs and keeps declaration order", () => {
    const graph = decodeSchemaGraph(json);
    expect(graph).toBeInstanceOf(SchemaGraph);
    expect(graph.defs.map((d) => d.id)).toEqual(["name", "person", "unused"]);
    expect(graph.resolve(t.ref("person"))).toEqual(person);
    expect(graph.resolve(t.ref("name"))).toEqual(t.string());
    expect(graph.resolve(t.u8())).toEqual(t.u8());
  });

  it("follows alias chains that end in a structural type", () => {
    const graph = decodeSchemaGraph(t.graph(t.ref("a"), { a: t.ref("b"), b: t.ref("c"), c: t.bool() }));
    expect(graph.resolve(graph.root)).toEqual(t.bool());
  });

  it("round-trips to canonical JSON, metadata included", () => {
    const withMetadata = {
      root: {
        kind: "record",
        value: {
          fields: [{ name: "a", body: { kind: "u8", value: {} }, metadata: { doc: "field" } }],
          metadata: {
            doc: "a record",
            aliases: ["r"],
            examples: ['{"kind":"record"}'],
            deprecated: "use b",
            role: { tag: "other", value: "x" },
          },
        },
      },
    } as const;
    const graph = decodeSchemaGraph(withMetadata as unknown as JsonValue);
    expect(canonicalJson(graph.toJSON() as unknown as JsonValue)).toBe(canonicalJson(withMetadata as unknown as JsonValue));
  });

  it("keeps no reference to the caller's JSON", () => {
    const mutable = t.graph(t.record({ a: t.u8() }));
    const graph = decodeSchemaGraph(mutable);
    (mutable.root as { kind: string }).kind = "string";
    expect(graph.root.kind).toBe("record");
    const exported = graph.toJSON();
    (exported.root as { kind: string }).kind = "bool";
    expect(graph.root.kind).toBe("record");
  });

  it("freezes its types, so a decoded graph cannot be changed behind a decoder's back", () => {
    const graph = decodeSchemaGraph(json);
    expect(Object.isFrozen(graph.root)).toBe(true);
    expect(Object.isFrozen(graph.defs)).toBe(true);
    expect(() => (graph.root.value as { fields: unknown[] }).fields.push(t.u8())).toThrow(TypeError);
    expect(graph.owns(graph.root)).toBe(true);
    expect(graph.owns(t.u8())).toBe(false);
  });

  it("accepts host-managed and future types in a graph (only their values are refused)", () => {
    const graph = decodeSchemaGraph({ root: { kind: "secret", value: { category: "api-key" } } });
    expect(graph.root.kind).toBe("secret");
  });

  it("rejects metadata that does not match Golem's envelope", () => {
    expect(thrown(() => decodeSchemaGraph(JSON.parse('{"root":{"kind":"u8","value":{"metadata":{"doc":1}}}}') as JsonValue)).path).toBe(
      "root.metadata.doc",
    );
    expect(
      thrown(() =>
        decodeSchemaGraph(JSON.parse('{"root":{"kind":"u8","value":{"metadata":{"role":{"tag":"multimodal","value":"x"}}}}}') as JsonValue),
      ).code,
    ).toBe("validation-error");
  });

  it("refuses an f32 bound that is not an f32 value, as Golem's well-formedness check does", () => {
    const bits = (x: number) => {
      const view = new DataView(new ArrayBuffer(8));
      view.setFloat64(0, x);
      return { kind: "float-bits", value: view.getBigUint64(0).toString() } as const;
    };
    for (const bound of [0.1, 1e300, 2 ** -160]) {
      expect(thrown(() => decodeSchemaGraph(t.graph(t.f32({ max: bits(bound) })))).path).toBe("root.restrictions.max.value");
      expect(() => decodeSchemaGraph(t.graph(t.f64({ max: bits(bound) })))).not.toThrow();
    }
    for (const bound of [Math.fround(0.1), -0, 2 ** -149, 3.4028234663852886e38]) {
      expect(() => decodeSchemaGraph(t.graph(t.f32({ min: bits(bound) })))).not.toThrow();
    }
  });

  it("compiles each regex once per graph, with the u flag", () => {
    const graph = decodeSchemaGraph(t.graph(t.tuple(t.text({ regex: "^\\p{L}+$" }), t.text({ regex: "^\\p{L}+$" }))));
    const compiled = graph.regex("^\\p{L}+$");
    expect(compiled.flags).toContain("u");
    expect(graph.regex("^\\p{L}+$")).toBe(compiled);
    expect(thrown(() => graph.regex("other")).code).toBe("validation-error");
  });

  it("rejects a regex that is valid only without the u flag", () => {
    expect(thrown(() => decodeSchemaGraph(t.graph(t.text({ regex: "\\-]" })))).code).toBe("validation-error");
  });

  it("with streams forbidden, rejects a stream reachable only through a def", () => {
    const graph = t.graph(t.record({ a: t.ref("s") }), { s: t.stream(t.u8()) });
    expect(thrown(() => decodeSchemaGraph(graph, { streams: "forbidden" })).code).toBe("validation-error");
    expect(() => decodeSchemaGraph(graph)).not.toThrow();
  });

  it("resolves a 20k-long alias chain (each def walked once) and finds a cycle closing at its end", () => {
    const defs: Record<string, SchemaType> = {};
    for (let i = 0; i < 20_000; i++) defs[`d${i}`] = t.ref(`d${i + 1}`);
    defs["d20000"] = t.u8();
    const graph = decodeSchemaGraph(t.graph(t.list(t.ref("d0")), defs));
    expect(graph.resolve(t.ref("d0"))).toEqual(t.u8());
    defs["d20000"] = t.ref("d10");
    expect(thrown(() => decodeSchemaGraph(t.graph(t.ref("d0"), defs))).message).toContain("loops");
  });

  it("finds a stream behind a long ref chain from a map key", () => {
    const defs: Record<string, SchemaType> = {};
    for (let i = 0; i < 5_000; i++) defs[`d${i}`] = t.record({ next: t.ref(`d${i + 1}`) });
    defs["d5000"] = t.option(t.stream(t.u8()));
    const maps = Array.from({ length: 50 }, () => t.map(t.ref("d4000"), t.u8()));
    expect(thrown(() => decodeSchemaGraph(t.graph(t.tuple(...maps), defs))).path).toBe("root.elements[0].key");
    const graph = decodeSchemaGraph(t.graph(t.tuple(t.map(t.string(), t.ref("d0"))), defs));
    expect(extractGraph(graph, t.ref("d4990")).defs.map((d) => d.id)).toEqual([
      "d4990",
      "d4991",
      "d4992",
      "d4993",
      "d4994",
      "d4995",
      "d4996",
      "d4997",
      "d4998",
      "d4999",
      "d5000",
    ]);
    expect(extractGraph(graph, t.ref("d0")).defs).toHaveLength(5001);
  });

  it("checks field discriminators in linear work, even when many branches share one large record def", () => {
    // Work is counted, not timed: every array scan of find/findIndex costs the elements it visits.
    const counted = ["find", "findIndex"] as const;
    const originals = counted.map((name) => Array.prototype[name]);
    let work = 0;
    const measure = (size: number): number => {
      const fields: Record<string, SchemaType> = {};
      for (let i = 0; i < size; i++) fields[`f${i}`] = t.u8();
      const branches = Array.from({ length: size }, (_, i) => ({
        tag: `t${i}`,
        body: t.ref("big"),
        discriminator:
          i % 2 === 0
            ? { rule: "field-equals" as const, value: { fieldName: `f${size - 1}` } }
            : { rule: "field-absent" as const, value: { fieldName: "absent" } },
      }));
      const graphJson = t.graph(t.union(...branches), { big: t.record(fields) });
      work = 0;
      counted.forEach((name, k) => {
        const original = originals[k] as (this: unknown[], ...args: unknown[]) => unknown;
        Object.defineProperty(Array.prototype, name, {
          value: function (this: unknown[], ...args: unknown[]) {
            work += this.length;
            return original.apply(this, args);
          },
          configurable: true,
          writable: true,
        });
      });
      try {
        decodeSchemaGraph(graphJson);
      } finally {
        counted.forEach((name, k) =>
          Object.defineProperty(Array.prototype, name, { value: originals[k], configurable: true, writable: true }),
        );
      }
      return work + 1;
    };
    // A scan per branch would grow 64-fold here (8x the branches times 8x the fields).
    expect(measure(4000) / measure(500)).toBeLessThan(16);
  });

  it("allows recursion through structural types", () => {
    expect(() => decodeSchemaGraph(t.graph(t.ref("tree"), { tree: t.record({ kids: t.list(t.ref("tree")) }) }))).not.toThrow();
    expect(() => decodeSchemaGraph(t.graph(t.ref("chain"), { chain: t.option(t.ref("chain")) }))).not.toThrow();
  });

  it("rejects a stream reached from a map key through a ref", () => {
    const graph = t.graph(t.map(t.ref("k"), t.u8()), { k: t.record({ s: t.stream(t.u8()) }) });
    expect(thrown(() => decodeSchemaGraph(graph)).path).toBe("root.key");
  });
});

describe("extractGraph", () => {
  it("keeps only the defs the type reaches, ids unchanged, in declaration order", () => {
    const graph = decodeSchemaGraph(json);
    const extracted = extractGraph(graph, t.ref("person"));
    expect(extracted.defs.map((d) => d.id)).toEqual(["name", "person"]);
    expect(extracted.root).toEqual(t.ref("person"));
    expect(extracted.toJSON()).toEqual({
      defs: [
        { id: "name", body: t.string() },
        { id: "person", body: person },
      ],
      root: t.ref("person"),
    });
  });

  it("omits defs for a type that reaches none", () => {
    const extracted = extractGraph(decodeSchemaGraph(json), t.list(t.u8()));
    expect(extracted.toJSON()).toEqual({ root: t.list(t.u8()) });
  });

  it("extracts the element type of a nested stream", () => {
    const graph = decodeSchemaGraph(t.graph(t.stream(t.ref("group")), { group: t.record({ name: t.string(), items: t.stream(t.u32()) }) }));
    const root = graph.root as { value: { inner: typeof graph.root } };
    const element = extractGraph(graph, root.value.inner);
    expect(element.defs.map((d) => d.id)).toEqual(["group"]);
  });

  it("rejects a type naming a def the graph lacks", () => {
    expect(thrown(() => extractGraph(decodeSchemaGraph(json), t.ref("missing"))).code).toBe("validation-error");
  });
});

describe("isDirectBinary", () => {
  const graph = decodeSchemaGraph(t.graph(t.u8(), { byte: t.u8(), blob: t.binary(), alias: t.ref("blob") }));
  it.each([
    ["u8", t.u8(), "u8"],
    ["binary", t.binary(), "binary"],
    ["ref to u8", t.ref("byte"), "u8"],
    ["ref chain to binary", t.ref("alias"), "binary"],
    ["list<u8>", t.list(t.u8()), undefined],
    ["string", t.string(), undefined],
  ] as const)("%s", (_, type, expected) => {
    expect(isDirectBinary(graph, type)).toBe(expected);
  });
});
