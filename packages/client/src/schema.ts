/**
 * Validates what the server sends against the schema it pinned (protocol
 * section 2: decoders MUST reject values that do not match the method or
 * stream element schema). The result carries its self-contained graph; every
 * output stream found in it (or, recursively, in an item of such a stream)
 * inherits that graph and its declared element type, so each item is checked
 * against exactly its element schema and nested streams get theirs in turn.
 */
import {
  decodeSchemaGraph,
  decodeSchemaValue,
  isDirectBinary,
  toJs,
  type SchemaGraph,
  type SchemaType,
  type StreamLeaf as DecodedLeaf,
} from "@golem-stream/schema-value";
import type { SchemaGraphJson, SchemaValueJson } from "@golem-stream/wire";
import { serverViolation } from "./errors.js";

/** The pinned element schema of one output stream. */
export interface ElementSchema {
  /** The schema graph the stream's type belongs to (the result's, pinned by the server). */
  readonly graph: SchemaGraph;
  /** The type of each item, within `graph`. */
  readonly elementType: SchemaType;
  /** `u8` / `binary` streams carry items only as binary messages (decisions §3). */
  readonly direct: "u8" | "binary" | undefined;
}

export interface CheckedValue {
  /** Each stable stream token in the value, with the element schema declared at its leaf. */
  readonly streams: ReadonlyMap<string, ElementSchema>;
}

/** Decodes a result's graph and validates its value; throws a `server-violation` ClientError. */
export function checkResult(graphJson: SchemaGraphJson, value: SchemaValueJson): { graph: SchemaGraph } & CheckedValue {
  try {
    const graph = decodeSchemaGraph(graphJson);
    const decoded = decodeSchemaValue(value, graph, { streams: "stable", direction: "output", path: "result" });
    return { graph, streams: schemasOf(graph, decoded.streams) };
  } catch (error) {
    throw serverViolation(error);
  }
}

/** Validates one output item against its stream's element schema. */
export function checkItem(schema: ElementSchema, value: SchemaValueJson): CheckedValue {
  try {
    const decoded = decodeSchemaValue(value, schema.graph, {
      type: schema.elementType,
      streams: "stable",
      direction: "output",
      path: "item",
    });
    return { streams: schemasOf(schema.graph, decoded.streams) };
  } catch (error) {
    throw serverViolation(error);
  }
}

/** Converts a validated value to plain JavaScript; stream leaves become what `stream` returns. */
export function valueToJs(
  graph: SchemaGraph,
  type: SchemaType | undefined,
  value: SchemaValueJson,
  stream: (token: string) => unknown,
): unknown {
  return toJs(value, graph, type, {
    stream: (leaf) => ("streamToken" in leaf.ref ? stream(leaf.ref.streamToken) : undefined),
  });
}

/** What nearly every item exposes: no stream (one shared empty map, not one per item). */
const NO_STREAMS: ReadonlyMap<string, ElementSchema> = new Map();

function schemasOf(graph: SchemaGraph, leaves: readonly DecodedLeaf[]): ReadonlyMap<string, ElementSchema> {
  if (leaves.length === 0) return NO_STREAMS;
  const out = new Map<string, ElementSchema>();
  for (const leaf of leaves) {
    if (!("streamToken" in leaf.ref)) continue;
    out.set(leaf.ref.streamToken, { graph, elementType: leaf.elementType, direct: isDirectBinary(graph, leaf.elementType) });
  }
  return out;
}
