/**
 * Small readers for the native SchemaValue JSON that method implementations
 * receive. Values reaching a method were validated against its schema, so
 * these only navigate; they return undefined rather than guess.
 */
import { getMember, isJsonObject, type JsonValue, type SchemaValueJson } from "@golem-stream/wire";

/** The `index`-th field of a record value, e.g. one method parameter: `recordField(ctx.parameters, 0)`. */
export function recordField(value: SchemaValueJson | JsonValue | undefined, index: number): JsonValue | undefined {
  // A SchemaValueJson is a JSON object; the interface just lacks an index signature.
  const node = value as JsonValue | undefined;
  if (!isJsonObject(node) || getMember(node, "kind") !== "record") return undefined;
  const payload = getMember(node, "value");
  const fields = isJsonObject(payload) ? getMember(payload, "fields") : undefined;
  return Array.isArray(fields) ? fields[index] : undefined;
}

/** The payload (`value` member) of a value node. */
export function payloadOf(node: JsonValue | undefined): JsonValue | undefined {
  return isJsonObject(node) ? getMember(node, "value") : undefined;
}
