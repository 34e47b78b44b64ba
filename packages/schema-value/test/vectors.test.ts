/**
 * Consumes fixtures/stream-session-v1/schema-values.json, the language-neutral
 * vectors every runtime must pass (protocol section 14). The file is read as
 * text and parsed with the protocol's strict parser, as a peer's bytes would be.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { canonicalJson, parseStrictJson, ProtocolError, type JsonValue } from "@golem-stream/wire";
import { describe, expect, it } from "vitest";
import { decodeSchemaGraph, decodeSchemaValue, encodeSchemaValue, byteCharge, type StreamMode } from "../src/index.js";

interface ValidCase {
  name: string;
  description: string;
  graph: JsonValue;
  streams: StreamMode;
  value: JsonValue;
  canonical: string;
  byteCharge: number;
  streamLeaves?: { coordinate: string; ref: JsonValue; elementType: JsonValue }[];
}
interface InvalidCase {
  name: string;
  description: string;
  graph: JsonValue;
  streams: StreamMode;
  value: JsonValue;
  code: string;
  path?: string;
  maxByteCharge?: number;
}
interface InvalidGraphCase {
  name: string;
  description: string;
  graph: JsonValue;
  code: string;
  path: string;
  streams?: "forbidden";
}

const file = fileURLToPath(new URL("../../../fixtures/stream-session-v1/schema-values.json", import.meta.url));
const vectors = parseStrictJson(readFileSync(file), { what: "vectors" }) as unknown as {
  valid: ValidCase[];
  invalid: InvalidCase[];
  invalidGraphs: InvalidGraphCase[];
};

function thrown(run: () => unknown): ProtocolError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ProtocolError);
    return error as ProtocolError;
  }
  throw new Error("expected a ProtocolError, nothing was thrown");
}

describe("schema-values.json", () => {
  it("has names and descriptions on every case", () => {
    const all = [...vectors.valid, ...vectors.invalid, ...vectors.invalidGraphs];
    expect(all.length).toBeGreaterThan(100);
    for (const c of all) {
      expect(c.name).toMatch(/^[a-z0-9-]+$/);
      expect(c.description.length).toBeGreaterThan(5);
    }
    expect(new Set(all.map((c) => c.name)).size).toBe(all.length);
  });

  it("covers every value kind with a valid case, and every value error code with an invalid one", () => {
    const kinds = new Set<string>();
    const collect = (x: unknown): void => {
      if (Array.isArray(x)) x.forEach(collect);
      else if (typeof x === "object" && x !== null) {
        const node = x as Record<string, unknown>;
        if (typeof node["kind"] === "string" && "value" in node) kinds.add(node["kind"]);
        Object.values(node).forEach(collect);
      }
    };
    vectors.valid.forEach((c) => collect(c.value));
    const expected = [
      "bool",
      "s8",
      "s16",
      "s32",
      "s64",
      "u8",
      "u16",
      "u32",
      "u64",
      "f32",
      "f64",
      "char",
      "string",
      "record",
      "variant",
      "enum",
      "flags",
      "tuple",
      "list",
      "fixed-list",
      "map",
      "option",
      "result",
      "text",
      "binary",
      "path",
      "url",
      "datetime",
      "duration",
      "quantity",
      "union",
      "stream",
    ];
    expect([...kinds].sort()).toEqual([...expected].sort());
    expect(new Set(vectors.invalid.map((c) => c.code))).toEqual(
      new Set(["validation-error", "unsupported-value", "stream-already-consumed", "limit-exceeded"]),
    );
    expect(vectors.valid.some((c) => c.graph !== null && typeof c.graph === "object" && "defs" in c.graph)).toBe(true);
  });

  describe("valid", () => {
    it.each(vectors.valid.map((c) => [c.name, c] as const))("%s", (_, c) => {
      const graph = decodeSchemaGraph(c.graph);
      expect(canonicalJson(graph.toJSON() as unknown as JsonValue)).toBe(canonicalJson(c.graph));
      const decoded = decodeSchemaValue(c.value, graph, { streams: c.streams });
      expect(encodeSchemaValue(decoded.value)).toBe(c.canonical);
      expect(decoded.byteCharge).toBe(c.byteCharge);
      expect(byteCharge(c.value, graph)).toBe(c.byteCharge);
      // Canonical text decodes to itself, byte for byte.
      const again = decodeSchemaValue(parseStrictJson(c.canonical), graph, { streams: c.streams });
      expect(encodeSchemaValue(again.value)).toBe(c.canonical);
      if (c.streamLeaves !== undefined) {
        expect(decoded.streams.map((s) => ({ coordinate: s.coordinate, ref: s.ref, elementType: s.elementType }))).toEqual(c.streamLeaves);
      } else {
        expect(decoded.streams).toEqual([]);
      }
    });
  });

  describe("invalid", () => {
    it.each(vectors.invalid.map((c) => [c.name, c] as const))("%s", (_, c) => {
      const graph = decodeSchemaGraph(c.graph);
      const options = c.maxByteCharge === undefined ? { streams: c.streams } : { streams: c.streams, maxByteCharge: c.maxByteCharge };
      const error = thrown(() => decodeSchemaValue(c.value, graph, options));
      expect(error.code).toBe(c.code);
      if (c.path !== undefined) expect(error.path).toBe(c.path);
    });
  });

  describe("invalid graphs", () => {
    it.each(vectors.invalidGraphs.map((c) => [c.name, c] as const))("%s", (_, c) => {
      const error = thrown(() => decodeSchemaGraph(c.graph, c.streams === undefined ? {} : { streams: c.streams }));
      expect(error.code).toBe(c.code);
      expect(error.path).toBe(c.path);
      // The same graph without the option, where one was given, is valid.
      if (c.streams !== undefined) expect(() => decodeSchemaGraph(c.graph)).not.toThrow();
    });
  });
});
