/**
 * Compact JSON text of a line `invoke` prints, members in the order they were built (as
 * `JSON.stringify` writes them), but with −0 written `-0`: an f64 (or f32) keeps its sign
 * (docs/protocol/schema-value.md), and `JSON.stringify` writes −0 as `0`. JSON has the
 * literal, and a reader's parser gives −0 back (`JSON.parse`, jq).
 */
import type { JsonValue } from "@golem-stream/wire";

export function jsonText(value: JsonValue): string {
  // Almost every value has no −0: the native writer then does all of it.
  return hasNegativeZero(value) ? signed(value) : JSON.stringify(value);
}

function hasNegativeZero(value: JsonValue): boolean {
  if (typeof value === "number") return Object.is(value, -0);
  if (typeof value !== "object" || value === null) return false;
  return (Array.isArray(value) ? value : Object.values(value)).some(hasNegativeZero);
}

function signed(value: JsonValue): string {
  if (Object.is(value, -0)) return "-0";
  if (typeof value !== "object" || value === null) return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(signed).join(",")}]`;
  return `{${Object.entries(value)
    .map(([key, member]) => `${JSON.stringify(key)}:${signed(member)}`)
    .join(",")}}`;
}
