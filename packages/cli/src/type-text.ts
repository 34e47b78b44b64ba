/**
 * Schema types as text for people: the short name a message uses (`u32`, `stream<u8>`,
 * `record`), and the signature `golem-stream types` prints, which shows what an argument spells a
 * few levels deep (`record{unit: string}`); a message that asks for a value uses the signature too.
 */
import type { SchemaGraph, SchemaType } from "@golem-stream/schema-value";

/** Describes a type briefly for messages: `u32`, `stream<u8>`, `record`. */
export function describeType(graph: SchemaGraph, type: SchemaType): string {
  const resolved = graph.resolve(type);
  if (resolved.kind === "stream") return `stream<${describeType(graph, resolved.value.inner)}>`;
  if (resolved.kind === "list" || resolved.kind === "fixed-list") return `list<${describeType(graph, resolved.value.element)}>`;
  if (resolved.kind === "option") return `option<${describeType(graph, resolved.value.inner)}>`;
  return resolved.kind;
}

/** `a u8`, `an s32`, `an option<string>`: a type's name with its article, as it is read aloud. */
export function articled(type: string): string {
  return /^(?:[aeio]|[sf]\d)/.test(type) ? `an ${type}` : `a ${type}`;
}

/**
 * A compact type signature. What a caller must spell in an argument is shown a few levels deep:
 * a record's fields, a variant's cases with their payloads (a case without one is its bare
 * name), an enum's cases and flags' names by name, a tuple's elements by position, a result's
 * `ok` and `err` (the plain JSON names them so).
 */
export function typeText(graph: SchemaGraph, type: SchemaType, depth = 0): string {
  const resolved = graph.resolve(type);
  if (depth > 3) return resolved.kind;
  const inner = (member: SchemaType) => typeText(graph, member, depth + 1);
  switch (resolved.kind) {
    case "record":
      return `record{${resolved.value.fields.map((f) => `${f.name}: ${inner(f.body)}`).join(", ")}}`;
    case "variant":
      return `variant{${resolved.value.cases.map((c) => (c.payload === undefined ? c.name : `${c.name}: ${inner(c.payload)}`)).join(", ")}}`;
    case "enum":
      return `enum{${resolved.value.cases.join(", ")}}`;
    case "flags":
      return `flags{${resolved.value.flags.join(", ")}}`;
    case "tuple":
      return `tuple<${resolved.value.elements.map(inner).join(", ")}>`;
    case "map":
      return `map<${inner(resolved.value.key)}, ${inner(resolved.value.value)}>`;
    case "result": {
      const { ok, err } = resolved.value.spec;
      const branches = [...(ok === undefined ? [] : [`ok: ${inner(ok)}`]), ...(err === undefined ? [] : [`err: ${inner(err)}`])];
      return `result{${branches.join(", ")}}`;
    }
    case "stream":
      return `stream<${inner(resolved.value.inner)}>`;
    case "list":
    case "fixed-list":
      return `list<${inner(resolved.value.element)}>`;
    case "option":
      return `option<${inner(resolved.value.inner)}>`;
    default:
      return describeType(graph, type);
  }
}
