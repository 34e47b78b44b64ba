/**
 * Small helpers to read a strictly parsed JSON document into typed data,
 * rejecting unknown members, missing members and wrong types with a
 * `ProtocolError` that names the path of the offending member.
 */
import { ProtocolError, getMember, isJsonObject, utf8ByteLength } from "@golem-stream/wire";
import type { JsonObject, JsonValue } from "@golem-stream/wire";

export function invalid(path: string, message: string): ProtocolError {
  return new ProtocolError("invalid-message", `${path}: ${message}`, { path });
}

/** Checks that `value` is an object whose members are all in `allowed` and includes every one of `required`. */
export function expectObject(
  value: JsonValue | undefined,
  path: string,
  required: readonly string[],
  optional: readonly string[] = [],
): JsonObject {
  if (!isJsonObject(value)) throw invalid(path, "must be an object");
  for (const name of Object.keys(value)) {
    if (!required.includes(name) && !optional.includes(name)) throw invalid(`${path}.${name}`, "is not allowed here");
  }
  for (const name of required) {
    if (getMember(value, name) === undefined) throw invalid(`${path}.${name}`, "is required");
  }
  return value;
}

export function expectString(
  value: JsonValue | undefined,
  path: string,
  { minBytes = 0, maxBytes = Number.MAX_SAFE_INTEGER }: { minBytes?: number; maxBytes?: number } = {},
): string {
  if (typeof value !== "string") throw invalid(path, "must be a string");
  const bytes = utf8ByteLength(value);
  if (bytes < minBytes) throw invalid(path, minBytes === 1 ? "must not be empty" : `must be at least ${minBytes} bytes`);
  if (bytes > maxBytes) throw new ProtocolError("limit-exceeded", `${path}: longer than ${maxBytes} bytes`, { path });
  return value;
}

export function expectArray(value: JsonValue | undefined, path: string, maxLength: number): readonly JsonValue[] {
  if (!Array.isArray(value)) throw invalid(path, "must be an array");
  if (value.length > maxLength) {
    throw new ProtocolError("limit-exceeded", `${path}: more than ${maxLength} elements`, { path });
  }
  return value;
}

export function expectLiteral<T extends JsonValue>(value: JsonValue | undefined, path: string, literal: T): T {
  if (value !== literal) throw invalid(path, `must be ${JSON.stringify(literal)}`);
  return literal;
}
