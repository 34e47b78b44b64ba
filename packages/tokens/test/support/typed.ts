/** Converts the fixture's JSON fields (u64 as decimal strings) to the typed API's fields, and back. */
import type { TokenFields, TokenKind } from "../../src/index.js";
import { TABLE, type JsonFields } from "./vectors.js";

export function typedFields<K extends TokenKind>(kind: K, json: JsonFields): TokenFields<K> {
  const out: Record<string, string | bigint> = {};
  for (const [, name, type] of TABLE[kind]!) {
    const value = json[name];
    if (value !== undefined) out[name] = type === "N" ? BigInt(value) : value;
  }
  return out as unknown as TokenFields<K>;
}

export function jsonFields(fields: object): JsonFields {
  return Object.fromEntries(Object.entries(fields).map(([name, value]) => [name, String(value)]));
}
