/**
 * Unit tests beyond the shared vectors: options, paths, normalization,
 * stream leaves, the byte-charge bound and the corners of each restriction.
 */
import { parseStrictJson, type JsonValue } from "@golem-stream/wire";
import { describe, expect, it } from "vitest";
import {
  byteCharge,
  decodeSchemaGraph,
  decodeSchemaValue,
  encodeSchemaValue,
  normalizeSchemaValue,
  schemaValuesEqual,
  t,
  v,
  type SchemaType,
  type SchemaValue,
} from "../src/index.js";
import { canonicalF32 } from "../src/scalars.js";
import { compareQuantity } from "../src/restrictions.js";
import { thrown } from "./helpers.js";

/** The IEEE-754 bits of a double, as a float-bits bound writes them. */
function floatBits(x: number): string {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  return view.getBigUint64(0).toString();
}

const P1 = "0dff1c71-f12f-4bb1-996c-23d693bdc825";
const P2 = "7c9e6679-7425-40de-944b-e07fc1f90ae7";

function decode(type: SchemaType, value: JsonValue | SchemaValue, options: Parameters<typeof decodeSchemaValue>[2] = {}) {
  return decodeSchemaValue(value, decodeSchemaGraph(t.graph(type)), options);
}

describe("options", () => {
  it("prefixes error paths with options.path", () => {
    const error = thrown(() => decode(t.record({ a: t.list(t.u8()) }), v.record(v.list(v.u8(1), v.u16(2))), { path: "params" }));
    expect(error.path).toBe("params.fields[0].elements[1]");
    expect(error.message).toContain("params.fields[0].elements[1]");
  });

  it("validates against options.type instead of the root", () => {
    const graph = decodeSchemaGraph(t.graph(t.string(), { n: t.u8() }));
    expect(decodeSchemaValue(v.u8(3), graph, { type: t.ref("n") }).value).toEqual(v.u8(3));
    expect(thrown(() => decodeSchemaValue(v.u8(3), graph)).code).toBe("validation-error");
  });

  it("validates a foreign options.type against the graph before using it", () => {
    const graph = decodeSchemaGraph(t.graph(t.string(), { n: t.u8() }));
    expect(thrown(() => decodeSchemaValue(v.text("x"), graph, { type: t.text({ regex: "(" }) })).code).toBe("validation-error");
    expect(thrown(() => decodeSchemaValue(v.u8(1), graph, { type: t.ref("missing") })).code).toBe("validation-error");
    expect(decodeSchemaValue(v.text("ab"), graph, { type: t.text({ regex: "^a" }) }).byteCharge).toBe(3);
    expect(thrown(() => decodeSchemaValue(v.text("b"), graph, { type: t.text({ regex: "^a" }) })).code).toBe("validation-error");
  });

  it("refuses nonsensical options as the caller's error, never switching a bound off", () => {
    const graph = decodeSchemaGraph(t.graph(t.u8()));
    for (const options of [{ maxByteCharge: Number.NaN }, { maxByteCharge: -1 }, { maxStreams: 1.5 }, { streams: "maybe" }]) {
      expect(thrown(() => decodeSchemaValue(v.u8(1), graph, options as never)).code).toBe("internal-error");
    }
    expect(thrown(() => decodeSchemaGraph(t.graph(t.u8()), { streams: "maybe" as never })).code).toBe("internal-error");
    const strings = decodeSchemaGraph(t.graph(t.string()));
    for (const options of [{ direction: 5 }, { direction: "sideways" }, { type: null }, { type: "u8" }, { path: 7 }, "any"]) {
      expect(thrown(() => decodeSchemaValue(v.u8(1), graph, options as never)).code).toBe("internal-error");
      // A string node, which a shortcut decodes without the walk, the same.
      expect(thrown(() => decodeSchemaValue(v.string("x"), strings, options as never)).code).toBe("internal-error");
    }
  });

  it("takes options that are not an object as the caller's error, never as no options: the streams ban stays on", () => {
    const streams = t.graph(t.stream(t.u8()));
    // The mode given bare instead of as {streams}: it had been read as no options, streams allowed.
    expect(thrown(() => decodeSchemaGraph(streams, "forbidden" as never)).code).toBe("internal-error");
    expect(thrown(() => decodeSchemaGraph(streams, { streams: "forbidden" })).code).toBe("validation-error");
    expect(thrown(() => byteCharge(v.u8(1), decodeSchemaGraph(t.graph(t.u8())), undefined, "abc" as never)).code).toBe("internal-error");
  });

  it("reads null options as the defaults, as wire does, never blaming the value", () => {
    const graph = decodeSchemaGraph(t.graph(t.u8()));
    expect(decodeSchemaGraph(t.graph(t.stream(t.u8())), null as never).root.kind).toBe("stream");
    expect(decodeSchemaValue(v.u8(1), graph, null as never).value).toEqual(v.u8(1));
    expect(byteCharge(v.u8(1), graph, undefined, null as never)).toBe(2);
    // Still the defaults: streams forbidden, so a stream value is the value's fault.
    const streams = decodeSchemaGraph(t.graph(t.stream(t.u8())));
    expect(thrown(() => decodeSchemaValue(v.streamProvisional(P1), streams, null as never)).code).toBe("validation-error");
  });

  it("reports an error the caller's options throw when read as its internal-error, with that error as the cause", () => {
    const boom = new Error("boom");
    const options = {
      get streams(): never {
        throw boom;
      },
    };
    for (const run of [
      () => decodeSchemaGraph(t.graph(t.u8()), options as never),
      () => decodeSchemaValue(v.u8(1), decodeSchemaGraph(t.graph(t.u8())), options as never),
    ]) {
      const error = thrown(run);
      expect(error.code).toBe("internal-error");
      expect(error.cause).toBe(boom);
    }
  });

  it("accepts a charge exactly at maxByteCharge and refuses one byte more", () => {
    const value = v.list(v.u8(1), v.u8(2)); // 5 + 2 + 2
    expect(decode(t.list(t.u8()), value, { maxByteCharge: 9 }).byteCharge).toBe(9);
    expect(thrown(() => decode(t.list(t.u8()), value, { maxByteCharge: 8 })).code).toBe("limit-exceeded");
    expect(thrown(() => byteCharge(value, decodeSchemaGraph(t.graph(t.list(t.u8()))), undefined, { maxByteCharge: 8 })).code).toBe(
      "limit-exceeded",
    );
  });

  it("refuses a binary array longer than the remaining charge before reading it", () => {
    const bytes = new Array<number>(100).fill(300); // invalid bytes, but the bound trips first
    expect(thrown(() => decode(t.binary(), { kind: "binary", value: { bytes } }, { maxByteCharge: 50 })).code).toBe("limit-exceeded");
  });

  it("defaults to the 8 MiB limit", () => {
    // Text, not binary: the charge is the same (1 for the node, 1 per byte), and a string of 8 MiB
    // is built and checked in milliseconds where an 8 Mi-element byte array takes seconds.
    const big = v.text("a".repeat(8 * 1024 * 1024));
    expect(thrown(() => decode(t.text(), big)).code).toBe("limit-exceeded");
    expect(decode(t.text(), v.text("a".repeat(8 * 1024 * 1024 - 1))).byteCharge).toBe(8 * 1024 * 1024);
  });
});

describe("normalization and equality", () => {
  it("ignores member order and whitespace", () => {
    const graph = decodeSchemaGraph(t.graph(t.record({ a: t.text(), b: t.option(t.u8()) })));
    const a = parseStrictJson(
      '{"value":{"fields":[{"value":{"language":"en","text":"x"},"kind":"text"},{"kind":"option","value":{"inner":null}}]},"kind":"record"}',
    );
    const b = parseStrictJson(
      ' { "kind" : "record" , "value" : { "fields" : [ {"kind":"text","value":{"text":"x","language":"en"}} , {"kind":"option","value":{"inner":null}} ] } } ',
    );
    expect(schemaValuesEqual(a, b, graph)).toBe(true);
    expect(normalizeSchemaValue(a, graph)).toBe(
      '{"kind":"record","value":{"fields":[{"kind":"text","value":{"language":"en","text":"x"}},{"kind":"option","value":{"inner":null}}]}}',
    );
  });

  it("treats equivalent spellings of one f32 or datetime as equal, and different values as different", () => {
    const graph = decodeSchemaGraph(t.graph(t.tuple(t.f32(), t.datetime())));
    const a = v.tuple({ kind: "f32", value: 0.10000000149011612 }, { kind: "datetime", value: { value: "2026-01-01t00:00:00.000z" } });
    const b = v.tuple(v.f32(0.1), v.datetime("2026-01-01T00:00:00Z"));
    expect(schemaValuesEqual(a, b, graph)).toBe(true);
    expect(schemaValuesEqual(a, v.tuple(v.f32(0.2), v.datetime("2026-01-01T00:00:00Z")), graph)).toBe(false);
  });

  it("returns a fresh value: mutating the input afterwards changes nothing", () => {
    const input = v.record(v.list(v.u8(1)));
    const decoded = decode(t.record({ a: t.list(t.u8()) }), input);
    (input.value.fields[0] as { value: { elements: SchemaValue[] } }).value.elements.push(v.u8(2));
    expect(encodeSchemaValue(decoded.value)).toBe(
      '{"kind":"record","value":{"fields":[{"kind":"list","value":{"elements":[{"kind":"u8","value":1}]}}]}}',
    );
  });

  it("keeps -0 for floats (a distinct value) and drops it for integers", () => {
    expect(encodeSchemaValue(decode(t.f64(), { kind: "f64", value: -0 }).value)).toBe('{"kind":"f64","value":-0}');
    expect(encodeSchemaValue(decode(t.u8(), { kind: "u8", value: -0 }).value)).toBe('{"kind":"u8","value":0}');
  });
});

describe("encodeSchemaValue never writes what no decoder could read", () => {
  it.each([
    ["null", null],
    ["an unknown kind", { kind: "nope", value: {} }],
    ["a node with a third member", { kind: "u8", value: 1, name: "x" }],
    ["a child without value", { kind: "list", value: { elements: [{ kind: "u8" }] } }],
    ["a payload member of another kind", { kind: "option", value: { inner: null, tag: "ok" } }],
    ["a bigint payload", { kind: "u64", value: 1n }],
    // Each kind's payload in the JSON type and form its decoder reads (decisions-v1 section 2).
    ["a u64 as a JSON number", { kind: "u64", value: 5 }],
    ["a u64 that is no canonical decimal", { kind: "u64", value: "05" }],
    ["an s64 out of range", { kind: "s64", value: "9223372036854775808" }],
    ["a string as a number", { kind: "string", value: 5 }],
    ["a char of two scalars", { kind: "char", value: "ab" }],
    ["a u8 of 300", { kind: "u8", value: 300 }],
    ["an s32 that is not whole", { kind: "s32", value: 1.5 }],
    ["a u32 as a string", { kind: "u32", value: "1" }],
    ["an f32 beyond its range", { kind: "f32", value: 1e39 }],
    ["a float as a string other than NaN or the infinities", { kind: "f64", value: "1.5" }],
    ["a bool as a number", { kind: "bool", value: 1 }],
    ["a result tag other than ok or err", { kind: "result", value: { tag: "maybe", value: null } }],
  ])("refuses %s with validation-error", (_name, value) => {
    expect(thrown(() => encodeSchemaValue(value as unknown as SchemaValue)).code).toBe("validation-error");
  });

  it("writes every scalar kind's payloads that its decoder reads, as canonical JSON writes them", () => {
    const written: [SchemaValue, string][] = [
      [{ kind: "u64", value: "18446744073709551615" }, '{"kind":"u64","value":"18446744073709551615"}'],
      [{ kind: "s64", value: "-9223372036854775808" }, '{"kind":"s64","value":"-9223372036854775808"}'],
      [{ kind: "f64", value: "-Infinity" }, '{"kind":"f64","value":"-Infinity"}'],
      [{ kind: "f32", value: -0 }, '{"kind":"f32","value":-0}'],
      [{ kind: "u32", value: 4294967295 }, '{"kind":"u32","value":4294967295}'],
      [{ kind: "char", value: "😀" }, '{"kind":"char","value":"😀"}'],
      [{ kind: "result", value: { tag: "err", value: null } }, '{"kind":"result","value":{"tag":"err","value":null}}'],
    ];
    for (const [value, text] of written) expect(encodeSchemaValue(value)).toBe(text);
  });

  it("writes values built in JavaScript only while their text stays within 128 JSON levels", () => {
    // option<...<bool>> n deep: every option adds a node object and a payload object.
    const chain = (n: number): SchemaValue => (n === 0 ? v.bool(true) : v.option(chain(n - 1)));
    for (const n of [63, 64]) {
      // The decoder accepts both (its own bound counts value nodes, for JS-built values) ...
      let inner: SchemaType = t.bool();
      for (let i = 0; i < n; i++) inner = t.option(inner);
      const value = decodeSchemaValue(chain(n), decodeSchemaGraph(t.graph(inner))).value;
      // ... and 2 x 63 + 1 = 127 levels of text parse, while 129 would not.
      if (n === 63) expect(parseStrictJson(encodeSchemaValue(value))).toBeTypeOf("object");
      else expect(thrown(() => encodeSchemaValue(value)).code).toBe("limit-exceeded");
    }
  });
});

describe("scalars", () => {
  it("f32: the canonical number rounds to the same f32 and is a fixed point", () => {
    for (const bits of [0x3dcccccd, 0x7f7fffff, 0x00000001, 0x80800000, 0x4b000001, 0x3f800000]) {
      const single = new Float32Array(new Uint32Array([bits]).buffer)[0] as number;
      const canonical = canonicalF32(single) as number;
      expect(Math.fround(canonical)).toBe(single);
      expect(canonicalF32(canonical)).toBe(canonical);
    }
    expect(canonicalF32(3.5e38)).toBeUndefined();
  });

  it.each([
    ["2024-02-29T00:00:00Z", true],
    ["2000-02-29T23:59:59.999999999Z", true],
    ["0000-01-01T00:00:00Z", true],
    ["1900-02-29T00:00:00Z", false],
    ["2026-13-01T00:00:00Z", false],
    ["2026-01-01T24:00:00Z", false],
    ["2026-01-01T00:00:00.1234567890Z", false],
    ["2026-01-01 00:00:00Z", false],
    ["2026-01-01T00:00:00", false],
  ])("datetime %s valid: %s", (text, valid) => {
    const run = () => decode(t.datetime(), { kind: "datetime", value: { value: text } });
    if (valid) expect(run().value.kind).toBe("datetime");
    else expect(thrown(run).code).toBe("validation-error");
  });

  it("rejects lone surrogates in strings and chars built in JavaScript", () => {
    expect(thrown(() => decode(t.string(), { kind: "string", value: "a\ud800" })).code).toBe("validation-error");
    expect(thrown(() => decode(t.char(), { kind: "char", value: "\udc00" })).code).toBe("validation-error");
  });

  it("accepts a MIME type without an allow-list, and a text language without one", () => {
    expect(decode(t.binary(), v.binary([1], "application/octet-stream")).byteCharge).toBe(1 + 1 + 24);
    expect(decode(t.text({ languages: ["en"] }), v.text("x")).byteCharge).toBe(2);
  });
});

describe("restrictions", () => {
  it("compares quantities exactly, with bounded work for any i32 scale", () => {
    const bound = { mantissa: "1", scale: 0, unit: "m" };
    expect(compareQuantity(1n, 0, bound)).toBe(0);
    expect(compareQuantity(10n, 1, bound)).toBe(0);
    expect(compareQuantity(11n, 1, bound)).toBe(1);
    expect(compareQuantity(9223372036854775807n, 2147483647, bound)).toBe(-1);
    expect(compareQuantity(1n, -2147483648, bound)).toBe(1);
    expect(compareQuantity(-1n, -2147483648, bound)).toBe(-1);
    expect(compareQuantity(0n, 5, { mantissa: "0", scale: -7, unit: "m" })).toBe(0);
  });

  it("looks up long schema lists (languages, hosts, tags) exactly", () => {
    const languages = Array.from({ length: 50 }, (_, i) => `l${i}`);
    expect(() => decode(t.text({ languages }), v.text("x", "l49"))).not.toThrow();
    expect(thrown(() => decode(t.text({ languages }), v.text("x", "L49"))).code).toBe("validation-error");
    const hosts = Array.from({ length: 50 }, (_, i) => `Host${i}.example`);
    expect(() => decode(t.url({ allowedHosts: hosts }), v.url("https://host42.EXAMPLE/"))).not.toThrow();
    expect(thrown(() => decode(t.url({ allowedHosts: hosts }), v.url("https://host50.example/"))).code).toBe("validation-error");
    const branches = Array.from({ length: 50 }, (_, i) => ({
      tag: `b${i}`,
      body: t.string(),
      discriminator: { rule: "prefix" as const, value: { prefix: `${i}:` } },
    }));
    expect(() => decode(t.union(...branches), v.union("b33", v.string("33:x")))).not.toThrow();
    expect(thrown(() => decode(t.union(...branches), v.union("b33", v.string("34:x")))).code).toBe("validation-error");
    expect(thrown(() => decode(t.union(...branches), v.union("b50", v.string("50:x")))).code).toBe("validation-error");
  });

  it("compares URL scheme and host case-insensitively, IPv6 hosts included", () => {
    const type = t.url({ allowedSchemes: ["https"], allowedHosts: ["[::1]", "example.com"] });
    expect(() => decode(type, v.url("HTTPS://EXAMPLE.com:8443/a"))).not.toThrow();
    expect(() => decode(type, v.url("https://[::1]/"))).not.toThrow();
    expect(thrown(() => decode(type, v.url("https://example.org/"))).code).toBe("validation-error");
  });

  it("checks the extension of the last path segment only", () => {
    const type = t.path({ direction: "input", kind: "file", allowedExtensions: ["txt"] });
    expect(() => decode(type, v.path("dir.exe/notes.txt"))).not.toThrow();
    expect(() => decode(type, v.path("dir.exe/Makefile"))).not.toThrow();
    expect(() => decode(type, v.path("trailing."))).not.toThrow();
    expect(thrown(() => decode(type, v.path("a.tar.gz"))).code).toBe("validation-error");
  });

  it("applies numeric bounds exactly for 64-bit values", () => {
    const type = t.u64({ max: { kind: "unsigned", value: "9007199254740993" } });
    expect(() => decode(type, v.u64(9007199254740993n))).not.toThrow();
    expect(thrown(() => decode(type, v.u64(9007199254740994n))).code).toBe("validation-error");
  });

  it("compares an f32 with its bounds as the exact f32 value, as Golem's validator does", () => {
    // The f32 nearest 0.1 is 0.100000001490116..., above the double 0.1 its shortest decimal reads as.
    const single = (x: number) => ({ kind: "float-bits", value: floatBits(Math.fround(x)) }) as const;
    const below = new Float32Array(new Uint32Array([0x3dcccccc]).buffer)[0] as number;
    expect(decode(t.f32({ min: single(0.1) }), v.f32(0.1)).value).toEqual(v.f32(0.1));
    expect(decode(t.f32({ min: single(0.1) }), { kind: "f32", value: 0.10000000149011612 }).value).toEqual(v.f32(0.1));
    expect(decode(t.f32({ max: single(0.7) }), v.f32(0.7)).value).toEqual(v.f32(0.7));
    expect(decode(t.f32({ min: single(0.7), max: single(0.7) }), v.f32(0.7)).value).toEqual(v.f32(0.7));
    expect(thrown(() => decode(t.f32({ min: single(0.1) }), { kind: "f32", value: below })).message).toContain("below the minimum");
    expect(thrown(() => decode(t.f32({ max: single(0.7) }), v.f32(0.70000005))).message).toContain("above the maximum");
  });

  it("checks union discriminators on bodies reached through refs", () => {
    const graph = decodeSchemaGraph(
      t.graph(
        t.union({ tag: "s", body: t.ref("shape"), discriminator: { rule: "field-equals", value: { fieldName: "kind", literal: "sq" } } }),
        {
          shape: t.record({ kind: t.ref("label") }),
          label: t.text(),
        },
      ),
    );
    expect(() => decodeSchemaValue(v.union("s", v.record(v.text("sq"))), graph)).not.toThrow();
    expect(thrown(() => decodeSchemaValue(v.union("s", v.record(v.text("tri"))), graph)).code).toBe("validation-error");
  });

  it("applies restrictions inside a ref'd def to every use", () => {
    const graph = decodeSchemaGraph(t.graph(t.list(t.ref("small")), { small: t.u8({ max: { kind: "unsigned", value: "9" } }) }));
    expect(thrown(() => decodeSchemaValue(v.list(v.u8(1), v.u8(10)), graph)).path).toBe("value.elements[1]");
  });
});

describe("stream leaves", () => {
  const type = t.record({
    v: t.variant({ a: t.stream(t.u8()), none: null }),
    r: t.result({ ok: t.stream(t.string()) }),
    u: t.union({
      tag: "x",
      body: t.record({ s: t.stream(t.u8()) }),
      discriminator: { rule: "field-absent", value: { fieldName: "kind" } },
    }),
  });
  const value = v.record(
    v.variant(0, v.streamProvisional(P1)),
    v.ok(v.streamProvisional(P2)),
    v.union("x", v.record(v.streamToken("tok"))),
  );

  it("reports coordinates through variant payloads, results and union bodies, in document order", () => {
    const decoded = decode(type, value, { streams: "any", direction: "input" });
    expect(decoded.streams.map((s) => s.coordinate)).toEqual([
      "/value/fields/0/value/payload",
      "/value/fields/1/value/value",
      "/value/fields/2/value/body/value/fields/0",
    ]);
    expect(decoded.streams.map((s) => s.direction)).toEqual(["input", "input", "input"]);
    expect(decoded.streams[1]?.elementType).toEqual(t.string());
  });

  it("defaults to forbidding streams", () => {
    expect(thrown(() => decode(type, value)).code).toBe("validation-error");
  });

  it("bounds the number of leaves", () => {
    const many = v.list(v.streamToken("a"), v.streamToken("b"), v.streamToken("c"));
    expect(thrown(() => decode(t.list(t.stream(t.u8())), many, { streams: "stable", maxStreams: 2 })).code).toBe("limit-exceeded");
  });

  it("rejects the same provisional reference at two coordinates, whatever the types", () => {
    const pair = v.tuple(v.streamProvisional(P1), v.streamProvisional(P1));
    const error = thrown(() => decode(t.tuple(t.stream(t.u8()), t.stream(t.string())), pair, { streams: "provisional" }));
    expect(error.code).toBe("stream-already-consumed");
    expect(error.path).toBe("value.elements[1]");
  });

  it("refuses a token that is empty, too long or not visible ASCII", () => {
    for (const token of ["", "a b", "é", "x".repeat(8193)]) {
      expect(thrown(() => decode(t.stream(t.u8()), v.streamToken(token), { streams: "stable" })).code).toBe("validation-error");
    }
    expect(decode(t.stream(t.u8()), v.streamToken("x".repeat(8192)), { streams: "stable" }).byteCharge).toBe(8193);
  });
});
