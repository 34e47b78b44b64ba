/**
 * Bare output: when a result exposes exactly one output stream and nothing
 * else can ever add another, stdout carries that stream alone, as grpcurl
 * and websocat do: strings as lines, bytes raw, any other item as one plain
 * JSON line. Several streams need the `{"stream","item"}` envelope to be
 * told apart.
 */
import type { SchemaGraph, SchemaType } from "@golem-stream/schema-value";
import type { JsonValue } from "@golem-stream/wire";

/** Whether a value of `type` can hold a stream (refs followed; recursive types visited once). */
export function mayHoldStreams(graph: SchemaGraph, type: SchemaType, seen = new Set<SchemaType>()): boolean {
  const resolved = graph.resolve(type);
  if (seen.has(resolved)) return false;
  seen.add(resolved);
  if (resolved.kind === "stream") return true;
  return childTypes(resolved).some((child) => mayHoldStreams(graph, child, seen));
}

function childTypes(type: SchemaType): SchemaType[] {
  switch (type.kind) {
    case "record":
      return type.value.fields.map((f) => f.body);
    case "variant":
      return type.value.cases.flatMap((c) => (c.payload === undefined ? [] : [c.payload]));
    case "tuple":
      return type.value.elements;
    case "list":
    case "fixed-list":
      return [type.value.element];
    case "map":
      return [type.value.key, type.value.value];
    case "option":
    case "stream":
      return [type.value.inner];
    case "result":
      return [type.value.spec.ok, type.value.spec.err].filter((t): t is SchemaType => t !== undefined);
    case "union":
      return type.value.spec.branches.map((b) => b.body);
    default:
      return [];
  }
}

/**
 * The line for one item of the bare stream: a string as itself (a person
 * reading or a pipe splitting on newlines sees the text, not JSON), anything
 * else as compact plain JSON.
 */
export function bareLine(plain: JsonValue): string {
  return `${typeof plain === "string" ? plain : JSON.stringify(plain)}\n`;
}
