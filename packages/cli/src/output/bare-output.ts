/**
 * Bare output: when a result exposes exactly one output stream and nothing
 * else can ever add another, stdout carries that stream alone, as grpcurl
 * and websocat do: strings as lines, bytes raw, any other item as one plain
 * JSON line. Several streams need the `{"stream","item"}` envelope to be
 * told apart.
 */
import { childTypes, type SchemaGraph, type SchemaType } from "@golem-stream/schema-value";
import type { JsonValue } from "@golem-stream/wire";
import { jsonText } from "./json-text.js";

/** Whether a value of `type` can hold a stream (refs followed; recursive types visited once). */
export function mayHoldStreams(graph: SchemaGraph, type: SchemaType, seen = new Set<SchemaType>()): boolean {
  const resolved = graph.resolve(type);
  if (seen.has(resolved)) return false;
  seen.add(resolved);
  if (resolved.kind === "stream") return true;
  return childTypes(resolved).some((child) => mayHoldStreams(graph, child, seen));
}

/**
 * The line for one item of the bare stream: a string as itself (a person
 * reading or a pipe splitting on newlines sees the text, not JSON), anything
 * else as compact plain JSON.
 */
export function bareLine(plain: JsonValue): string {
  return `${typeof plain === "string" ? plain : jsonText(plain)}\n`;
}
