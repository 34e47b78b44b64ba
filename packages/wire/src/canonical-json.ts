/**
 * Canonical JSON (protocol section 2): no insignificant whitespace, escapes
 * only where JSON requires them, object members in Unicode code-point order.
 * Golden vectors and every encoder in the workspace emit this form.
 */
import { ProtocolError } from "./errors.js";
import type { JsonValue } from "./json.js";
import { LIMITS } from "./limits.js";
import { compareCodePoints, isWellFormedText } from "./utf8.js";

/**
 * Serialises `value` canonically. Members whose value is `undefined` are
 * omitted (optional members are omitted, never null). Throws `ProtocolError`
 * (`invalid-message`) for values JSON cannot carry: non-finite numbers, lone
 * surrogates, cycles and non-JSON types, and `limit-exceeded` for nesting
 * deeper than the JSON depth limit (no receiver would accept it, and a bound
 * keeps a value built in memory from exhausting the stack).
 */
export function canonicalJson(value: JsonValue): string {
  const parts: string[] = [];
  write(value, parts, new Set(), 0);
  return parts.join("");
}

function write(value: unknown, out: string[], open: Set<object>, depth: number): void {
  switch (typeof value) {
    case "string":
      out.push(quote(value));
      return;
    case "number":
      if (!Number.isFinite(value)) throw invalid("a non-finite number");
      out.push(Object.is(value, -0) ? "-0" : String(value));
      return;
    case "boolean":
      out.push(value ? "true" : "false");
      return;
    case "object":
      break;
    default:
      throw invalid(`a ${typeof value}`);
  }
  if (value === null) {
    out.push("null");
    return;
  }
  if (open.has(value)) throw invalid("a cycle");
  if (depth >= LIMITS.maxJsonDepth) {
    throw new ProtocolError("limit-exceeded", `canonical JSON nests deeper than ${LIMITS.maxJsonDepth}`);
  }
  open.add(value);
  if (Array.isArray(value)) {
    out.push("[");
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out.push(",");
      const element: unknown = value[i];
      if (element === undefined) throw invalid("an undefined array element");
      write(element, out, open, depth + 1);
    }
    out.push("]");
  } else {
    const proto: unknown = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) throw invalid("a non-plain object");
    const record = value as Record<string, unknown>;
    const names = Object.keys(record)
      .filter((name) => record[name] !== undefined)
      .sort(compareCodePoints);
    out.push("{");
    names.forEach((name, index) => {
      if (index > 0) out.push(",");
      out.push(quote(name), ":");
      write(record[name], out, open, depth + 1);
    });
    out.push("}");
  }
  open.delete(value);
}

function quote(text: string): string {
  if (!isWellFormedText(text)) throw invalid("a string with a lone surrogate");
  // JSON.stringify escapes exactly what JSON requires (quote, backslash and
  // control characters) and nothing else, with lower-case hex.
  return JSON.stringify(text);
}

function invalid(what: string): ProtocolError {
  return new ProtocolError("invalid-message", `canonical JSON cannot encode ${what}`);
}
