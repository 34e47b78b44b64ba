import { describe, expect, it } from "vitest";
import {
  decodeSchemaGraph,
  decodeSchemaValue,
  encodeSchemaValue,
  fromJs,
  jsCodec,
  t,
  toJs,
  v,
  type SchemaType,
  type StreamLeaf,
} from "../src/index.js";
import { thrown } from "./helpers.js";

const P1 = "0dff1c71-f12f-4bb1-996c-23d693bdc825";

function roundTrip(type: SchemaType, data: unknown): unknown {
  const graph = decodeSchemaGraph(t.graph(type));
  return toJs(fromJs(data, graph), graph);
}

describe("JavaScript mapping", () => {
  it.each([
    ["bool", t.bool(), true],
    ["s8", t.s8(), -5],
    ["u32", t.u32(), 4294967295],
    ["f64", t.f64(), 1.25],
    ["f64 NaN", t.f64(), Number.NaN],
    ["f32 -Infinity", t.f32(), -Infinity],
    ["s64", t.s64(), -9223372036854775808n],
    ["u64", t.u64(), 18446744073709551615n],
    ["char", t.char(), "😀"],
    ["string", t.string(), "hello"],
    ["record", t.record({ name: t.string(), age: t.u8() }), { name: "ada", age: 36 }],
    ["variant with value", t.variant({ none: null, some: t.u8() }), { case: "some", value: 3 }],
    ["variant without value", t.variant({ none: null, some: t.u8() }), { case: "none" }],
    ["enum", t.enum(["a", "b"]), "b"],
    ["flags", t.flags(["r", "w", "x"]), new Set(["r", "x"])],
    ["tuple", t.tuple(t.u8(), t.string()), [1, "a"]],
    ["list", t.list(t.u16()), [1, 2, 3]],
    ["fixed-list", t.fixedList(t.bool(), 2), [true, false]],
    ["map", t.map(t.string(), t.u8()), new Map([["a", 1]])],
    ["option none", t.option(t.u8()), undefined],
    ["option some", t.option(t.u8()), 4],
    ["nested option Some(None)", t.option(t.option(t.u8())), { some: undefined }],
    ["nested option Some(Some)", t.option(t.option(t.u8())), { some: 1 }],
    ["result ok", t.result({ ok: t.u8(), err: t.string() }), { ok: 1 }],
    ["result err", t.result({ ok: t.u8(), err: t.string() }), { err: "no" }],
    ["result unit ok", t.result({}), { ok: undefined }],
    ["text", t.text(), { text: "hi", language: "en" }],
    ["binary", t.binary(), new Uint8Array([1, 2])],
    ["binary with MIME", t.binary(), { bytes: new Uint8Array([1]), mimeType: "image/png" }],
    ["path", t.path(), "/tmp/x"],
    ["url", t.url(), "https://example.com/"],
    ["datetime", t.datetime(), "2026-11-30T12:00:00.123456789Z"],
    ["duration", t.duration(), -1500n],
    ["quantity", t.quantity({ baseUnit: "m", allowedSuffixes: [] }), { mantissa: 15n, scale: 1, unit: "m" }],
    ["union", t.union({ tag: "n", body: t.string(), discriminator: { rule: "prefix", value: { prefix: "" } } }), { tag: "n", body: "x" }],
  ] as const)("%s round-trips", (_, type, data) => {
    expect(roundTrip(type, data)).toEqual(data);
  });

  it("accepts alternative spellings in fromJs", () => {
    const graph = decodeSchemaGraph(
      t.graph(
        t.record({
          when: t.datetime(),
          n: t.u64(),
          f: t.flags(["a", "b"]),
          m: t.map(t.u8(), t.u8()),
          txt: t.text(),
          bin: t.binary(),
          bytes: t.list(t.u8()),
        }),
      ),
    );
    const value = fromJs(
      { when: new Date(Date.UTC(2026, 0, 1)), n: 5, f: ["b"], m: [[1, 2]], txt: "plain", bin: [9], bytes: new Uint8Array([7]) },
      graph,
    );
    expect(toJs(value, graph)).toEqual({
      when: "2026-01-01T00:00:00Z",
      n: 5n,
      f: new Set(["b"]),
      m: new Map([[1, 2]]),
      txt: { text: "plain" },
      bin: new Uint8Array([9]),
      bytes: [7],
    });
    expect(
      toJs(
        fromJs(
          { when: "2026-01-01T00:00:00Z", n: 1n, f: { a: true, b: false }, m: new Map(), txt: { text: "" }, bin: { bytes: [] }, bytes: [] },
          graph,
        ),
        graph,
      ),
    ).toMatchObject({
      f: new Set(["a"]),
    });
  });

  it("keeps a field called __proto__ as a plain field", () => {
    const graph = decodeSchemaGraph(t.graph(t.recordOf([["__proto__", t.u8()]])));
    const out = toJs(v.record(v.u8(1)), graph) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(out, "__proto__")?.value).toBe(1);
  });

  it("never produces an invalid value: restrictions and ranges are checked", () => {
    const graph = decodeSchemaGraph(t.graph(t.record({ small: t.u8({ max: { kind: "unsigned", value: "9" } }), n: t.u64() })));
    expect(thrown(() => fromJs({ small: 10, n: 1n }, graph)).path).toBe("value.fields[0]");
    expect(thrown(() => fromJs({ small: 1, n: -1n }, graph)).path).toBe("value.fields[1]");
    expect(thrown(() => fromJs({ small: "1", n: 1n }, graph)).path).toBe("value.fields[0]");
    expect(thrown(() => fromJs({ small: 1 }, graph)).path).toBe("value.fields[1]");
  });

  it("names the place in the JavaScript data beside the place in the native value", () => {
    const graph = decodeSchemaGraph(
      t.graph(
        t.record({
          name: t.string(),
          to: t.u8({ max: { kind: "unsigned", value: "9" } }),
          tags: t.list(t.record({ "odd key": t.bool() })),
          r: t.result({ ok: t.u32(), err: t.string() }),
        }),
      ),
    );
    const ok = { name: "x", to: 1, tags: [{ "odd key": true }], r: { ok: 1 } };
    expect(() => fromJs(ok, graph)).not.toThrow();
    // Found by the walk itself.
    expect(thrown(() => fromJs({ ...ok, name: 5 }, graph)).message).toBe("value.fields[0] (name): expected a string");
    expect(thrown(() => fromJs({ ...ok, tags: [{ "odd key": true }, { "odd key": 1 }] }, graph)).message).toBe(
      'value.fields[2].elements[1].fields[0] (tags[1]["odd key"]): expected a boolean',
    );
    expect(thrown(() => fromJs({ ...ok, r: { err: 2 } }, graph)).message).toBe("value.fields[3].value (r.err): expected a string");
    // A map's entries by index, then key or value.
    const maps = decodeSchemaGraph(t.graph(t.record({ m: t.map(t.string(), t.u8()) })));
    expect(thrown(() => fromJs({ m: new Map([[5, 1]]) }, maps)).message).toBe(
      "value.fields[0].entries[0][0] (m[0].key): expected a string",
    );
    // Found by the decoder afterwards (a restriction, a range): the same naming, the path unchanged.
    const range = thrown(() => fromJs({ ...ok, to: 10 }, graph));
    expect(range.path).toBe("value.fields[1]");
    expect(range.message).toMatch(/^value\.fields\[1\] \(to\): /);
    expect(
      thrown(() =>
        fromJs(
          {
            m: new Map([
              ["a", 1],
              ["b", 300],
            ]),
          },
          maps,
        ),
      ).message,
    ).toMatch(/^value\.fields\[0\]\.entries\[1\]\[1\] \(m\[1\]\.value\): /);
  });

  it("names the place of a decoder's error in data that holds a stream, without calling the stream hook again", () => {
    const graph = decodeSchemaGraph(t.graph(t.record({ s: t.stream(t.u8()), n: t.u8({ max: { kind: "unsigned", value: "9" } }) })));
    let hooked = 0;
    const stream = () => {
      hooked++;
      return { provisionalRef: "8d1d4f0e-2b0c-4c39-9f0e-5e6f1a2b3c4d" };
    };
    // The source is no stream reference itself: only the hook makes one of it.
    const error = thrown(() => fromJs({ s: [new Uint8Array(1)], n: 10 }, graph, undefined, { stream }));
    expect(error.path).toBe("value.fields[1]");
    expect(error.message).toMatch(/^value\.fields\[1\] \(n\): /);
    expect(hooked).toBe(1);
  });

  it("refuses a field the record does not declare, naming the fields it does", () => {
    const graph = decodeSchemaGraph(t.graph(t.record({ name: t.option(t.string()) })));
    // Without the check, a misspelt optional field would be dropped without a word.
    const error = thrown(() => fromJs({ nam: "x" }, graph));
    expect(error.code).toBe("validation-error");
    expect(error.message).toBe('value: unknown field "nam" (the fields are name)');
  });

  it("says a field left out is missing, at its place, whatever its type (an option may be left out)", () => {
    const graph = decodeSchemaGraph(t.graph(t.record({ n: t.u32(), s8: t.s8(), rest: t.option(t.string()) })));
    expect(fromJs({ n: 1, s8: -1 }, graph)).toEqual(v.record(v.u32(1), v.s8(-1), v.option(null)));
    const error = thrown(() => fromJs({ s8: 1 }, graph));
    expect(error.path).toBe("value.fields[0]");
    expect(error.message).toBe("value.fields[0] (n): missing (expected a u32 value)");
    expect(thrown(() => fromJs({ n: 1 }, graph)).message).toBe("value.fields[1] (s8): missing (expected an s8 value)");
  });

  it("says a stream left out is missing, and what a stream hook refuses, at its place, with the hook's error as the cause", () => {
    const graph = decodeSchemaGraph(t.graph(t.record({ numbers: t.stream(t.f64()) })));
    const refusal = new TypeError("an input stream source must be an async iterable");
    const stream = (data: unknown) => {
      if (typeof data !== "object" || data === null) throw refusal;
      return { provisionalRef: "8d1d4f0e-2b0c-4c39-9f0e-5e6f1a2b3c4d" };
    };
    expect(thrown(() => fromJs({}, graph, undefined, { stream })).message).toBe(
      "value.fields[0] (numbers): missing (expected a stream value)",
    );
    const refused = thrown(() => fromJs({ numbers: 42 }, graph, undefined, { stream }));
    expect(refused.code).toBe("validation-error");
    expect(refused.message).toBe("value.fields[0] (numbers): an input stream source must be an async iterable");
    expect(refused.cause).toBe(refusal);
  });

  it("names unknown cases, flags and tags", () => {
    const graph = decodeSchemaGraph(t.graph(t.tuple(t.enum(["a"]), t.flags(["r"]), t.variant({ x: null }))));
    expect(thrown(() => fromJs(["b", new Set(), { case: "x" }], graph)).path).toBe("value.elements[0]");
    expect(thrown(() => fromJs(["a", new Set(["w"]), { case: "x" }], graph)).path).toBe("value.elements[1]");
    expect(thrown(() => fromJs(["a", new Set(), { case: "y" }], graph)).path).toBe("value.elements[2]");
  });

  it("decodes a map with a repeated key (as Golem does) but refuses to lose an entry in toJs", () => {
    const graph = decodeSchemaGraph(t.graph(t.map(t.string(), t.u8())));
    const value = v.map([v.string("k"), v.u8(1)], [v.string("k"), v.u8(2)]);
    expect(() => decodeSchemaValue(value, graph)).not.toThrow();
    expect(thrown(() => toJs(value, graph)).path).toBe("value.entries[1][0]");
  });

  it("finds repeated map keys by the keys' canonical form, not by JavaScript's key equality", () => {
    // Equal records are distinct JavaScript objects, but the same key.
    const records = decodeSchemaGraph(t.graph(t.map(t.record({ a: t.u8() }), t.bool())));
    const key = v.record(v.u8(1));
    const repeated = v.map([key, v.bool(true)], [v.record(v.u8(2)), v.bool(true)], [key, v.bool(false)]);
    expect(() => decodeSchemaValue(repeated, records)).not.toThrow();
    const error = thrown(() => toJs(repeated, records));
    expect(error.path).toBe("value.entries[2][0]");
    expect(error.message).toContain("a repeated map key");
    expect((toJs(v.map([key, v.bool(true)], [v.record(v.u8(2)), v.bool(false)]), records) as Map<unknown, unknown>).size).toBe(2);
    // The same f32 written two ways is one key; NaN is one key.
    const floats = decodeSchemaGraph(t.graph(t.map(t.f32(), t.bool())));
    const spelled = {
      kind: "map",
      value: {
        entries: [
          [v.f32(0.1), v.bool(true)],
          [{ kind: "f32", value: 0.10000000149011612 }, v.bool(true)],
        ],
      },
    };
    expect(thrown(() => toJs(spelled, floats)).message).toContain("a repeated map key");
    expect(thrown(() => toJs(v.map([v.f32(Number.NaN), v.bool(true)], [v.f32(Number.NaN), v.bool(true)]), floats)).message).toContain(
      "a repeated map key",
    );
    // 0 and -0 are distinct keys (their canonical texts differ), which a JavaScript Map cannot keep apart.
    const zeros = v.map([v.f64(0), v.bool(true)], [v.f64(-0), v.bool(false)]);
    const doubles = decodeSchemaGraph(t.graph(t.map(t.f64(), t.bool())));
    expect(encodeSchemaValue(decodeSchemaValue(zeros, doubles).value)).toBe(
      '{"kind":"map","value":{"entries":[[{"kind":"f64","value":0},{"kind":"bool","value":true}],[{"kind":"f64","value":-0},{"kind":"bool","value":false}]]}}',
    );
    const zeroError = thrown(() => toJs(zeros, doubles));
    expect(zeroError.path).toBe("value.entries[1][0]");
    expect(zeroError.message).not.toContain("repeated");
    expect(zeroError.message).toContain("0 and -0");
  });

  it("refuses host-managed types", () => {
    const graph = decodeSchemaGraph({ root: { kind: "secret", value: {} } });
    expect(thrown(() => fromJs("x", graph)).code).toBe("validation-error");
    expect(thrown(() => toJs({ kind: "secret", value: {} }, graph)).code).toBe("unsupported-value");
  });
});

describe("stream hooks", () => {
  const type = t.record({ input: t.stream(t.string()), groups: t.list(t.stream(t.u8())) });
  const graph = decodeSchemaGraph(t.graph(type));

  it("fromJs asks the hook for a reference at each stream position", () => {
    const seen: string[] = [];
    let n = 0;
    const value = fromJs({ input: "source-a", groups: ["source-b"] }, graph, undefined, {
      streams: "provisional",
      stream: (data, context) => {
        seen.push(`${String(data)}@${context.coordinate}:${context.elementType.kind}`);
        n++;
        return { provisionalRef: `0dff1c71-f12f-4bb1-996c-23d693bdc82${n}` };
      },
    });
    expect(seen).toEqual(["source-a@/value/fields/0:string", "source-b@/value/fields/1/value/elements/0:u8"]);
    expect(encodeSchemaValue(value)).toContain("0dff1c71-f12f-4bb1-996c-23d693bdc822");
  });

  it("fromJs rejects a hook that hands out one reference twice", () => {
    const error = thrown(() => fromJs({ input: 1, groups: [2] }, graph, undefined, { stream: () => ({ provisionalRef: P1 }) }));
    expect(error.code).toBe("stream-already-consumed");
  });

  it("toJs hands each leaf to the hook", () => {
    const leaves: StreamLeaf[] = [];
    const out = toJs(v.record(v.streamToken("a"), v.list(v.streamToken("b"))), graph, undefined, {
      stream: (leaf) => {
        leaves.push(leaf);
        return `iterable:${leaf.coordinate}`;
      },
    });
    expect(out).toEqual({ input: "iterable:/value/fields/0", groups: ["iterable:/value/fields/1/value/elements/0"] });
    expect(leaves.map((l) => l.ref)).toEqual([{ streamToken: "a" }, { streamToken: "b" }]);
  });

  it("toJs without a hook returns the references", () => {
    expect(toJs(v.record(v.streamToken("a"), v.list()), graph)).toEqual({ input: { streamToken: "a" }, groups: [] });
  });
});

describe("jsCodec types", () => {
  it("maps builder types to JavaScript data at compile time", () => {
    const point = t.record({ x: t.s32(), y: t.s32(), label: t.option(t.string()), big: t.u64() });
    const codec = jsCodec(decodeSchemaGraph(t.graph(point)), point);
    const value = codec.fromJs({ x: 1, y: 2, label: undefined, big: 3n });
    const back = codec.toJs(value);
    const x: number = back.x;
    const big: bigint = back.big;
    expect([x, big, back.label]).toEqual([1, 3n, undefined]);
    // @ts-expect-error y must be a number
    expect(() => codec.fromJs({ x: 1, y: "2", label: undefined, big: 3n })).toThrow();
    // @ts-expect-error big must be a bigint
    expect(() => codec.fromJs({ x: 1, y: 2, label: undefined, big: 3 })).not.toThrow();
  });

  it("types variants, enums and flags by their names", () => {
    const shape = t.tuple(t.variant({ circle: t.f64(), empty: null }), t.enum(["red", "green"]), t.flags(["bold"]));
    const codec = jsCodec(decodeSchemaGraph(t.graph(shape)), shape);
    expect(() => codec.fromJs([{ case: "circle", value: 1 }, "red", new Set(["bold"] as const)])).not.toThrow();
    // @ts-expect-error "blue" is not a case
    expect(() => codec.fromJs([{ case: "empty" }, "blue", new Set()])).toThrow();
  });
});
