/**
 * Canonical JSON (protocol section 2): no insignificant whitespace, escapes
 * only where JSON requires them, object members in Unicode code-point order.
 * Golden vectors and every encoder in the workspace emit this form.
 */
import { callerFault, ProtocolError } from "./errors.js";
import type { JsonValue } from "./json.js";
import { LIMITS } from "./limits.js";
import { compareCodePoints, isWellFormedText } from "./utf8.js";

/**
 * Serialises `value` canonically. Members whose value is `undefined` are
 * omitted (optional members are omitted, never null). Throws `ProtocolError`
 * (`invalid-message`) for values JSON cannot carry: non-finite numbers, lone
 * surrogates, cycles and non-JSON types, and `limit-exceeded` for nesting
 * deeper than the JSON depth limit (no receiver would accept it, and a bound
 * keeps a value built in memory from exhausting the stack). An error thrown
 * by the value itself (a getter) is `internal-error`, with it as `cause`.
 */
export function canonicalJson(value: JsonValue): string {
  try {
    return write(value, [], 0);
  } catch (error) {
    throw callerFault(error);
  }
}

/**
 * `canonicalJson(value)` for a value that sits `depth` levels inside the
 * JSON being encoded (a message member is at depth 1): the same text, and the
 * same errors as encoding it in place, the depth limit counted from the root.
 * For encoders that write the rest of the message themselves (encode-input-item.ts).
 */
export function canonicalJsonAtDepth(value: unknown, depth: number): string {
  try {
    return write(value, [], depth);
  } catch (error) {
    throw callerFault(error);
  }
}

/**
 * `{ kind: "string", value: <string> }` as a plain object (prototype
 * `Object.prototype` or none) whose own members are exactly those two: the
 * value a client encodes most (every item of a `stream<string>`), which can
 * hold nothing but its text.
 */
export function isPlainStringNode(value: unknown): value is { readonly kind: "string"; readonly value: string } {
  if (typeof value !== "object" || value === null) return false;
  const record = value as Readonly<Record<string, unknown>>;
  if (record["kind"] !== "string" || typeof record["value"] !== "string") return false;
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  // Exactly these two own enumerable names, as `Object.keys` would list them, counted without
  // the array it makes (one per item a client encodes).
  let names = 0;
  for (const name in record) {
    if (!hasOwn.call(record, name)) continue;
    if (name !== "kind" && name !== "value") return false;
    names++;
  }
  return names === 2;
}

const hasOwn = Object.prototype.hasOwnProperty;

/**
 * What `canonicalJsonAtDepth(value, depth)` writes, at any depth below the
 * limit, for a plain string node (`isPlainStringNode`): the same text, and
 * the same error for a lone surrogate, without the general walk (about half
 * of such an item's encoding). Undefined for every other value, which takes
 * the general walk.
 */
export function canonicalStringNode(value: unknown): string | undefined {
  if (!isPlainStringNode(value)) return undefined;
  // Read once: the text checked is the text written, whatever an accessor would answer next.
  const text: unknown = value.value;
  return typeof text === "string" ? '{"kind":"string","value":' + quote(text) + "}" : undefined;
}

/**
 * Builds the text by concatenation (V8 joins the pieces lazily, once),
 * which measured faster than collecting parts for the small messages that
 * dominate (the client encodes every input item through here).
 */
function write(value: unknown, open: object[], depth: number): string {
  switch (typeof value) {
    case "string":
      return quote(value);
    case "number":
      if (!Number.isFinite(value)) throw invalid("a non-finite number");
      return Object.is(value, -0) ? "-0" : String(value);
    case "boolean":
      return value ? "true" : "false";
    case "object":
      break;
    default:
      throw invalid(`a ${typeof value}`);
  }
  if (value === null) return "null";
  // The objects being written, outermost first: a short array (values are shallow, and at most
  // the depth limit long) costs less to allocate and search than a Set per message.
  if (open.includes(value)) throw invalid("a cycle");
  if (depth >= LIMITS.maxJsonDepth) {
    throw new ProtocolError("limit-exceeded", `canonical JSON nests deeper than ${LIMITS.maxJsonDepth}`);
  }
  open.push(value);
  let out: string;
  if (Array.isArray(value)) {
    out = "[";
    for (let i = 0; i < value.length; i++) {
      const element: unknown = value[i];
      if (element === undefined) throw invalid("an undefined array element");
      out += i > 0 ? "," + write(element, open, depth + 1) : write(element, open, depth + 1);
    }
    out += "]";
  } else {
    const proto: unknown = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) throw invalid("a non-plain object");
    const record = value as Record<string, unknown>;
    const names = Object.keys(record);
    let kept = 0;
    let sorted = true;
    for (const name of names) {
      if (record[name] === undefined) continue;
      if (kept > 0 && sorted && compareCodePoints(names[kept - 1] as string, name) > 0) sorted = false;
      names[kept++] = name;
    }
    if (kept !== names.length) names.length = kept;
    // Objects built in canonical order (most of those encoded here) skip the sort.
    if (!sorted) names.sort(compareCodePoints);
    out = "{";
    for (let i = 0; i < kept; i++) {
      const name = names[i] as string;
      out += (i > 0 ? "," : "") + quoteName(name) + ":" + write(record[name], open, depth + 1);
    }
    out += "}";
  }
  open.pop();
  return out;
}

/** What JSON must escape in a string: the quote, the backslash and control characters. */
const NEEDS_ESCAPE = /["\\\u0000-\u001f]/;

function quote(text: string): string {
  if (!isWellFormedText(text)) throw invalid("a string with a lone surrogate");
  // Most strings need no escape: quoting them by concatenation measured several times faster
  // than JSON.stringify, which sets up a string builder for each call.
  if (!NEEDS_ESCAPE.test(text)) return '"' + text + '"';
  // JSON.stringify escapes exactly what JSON requires (quote, backslash and
  // control characters) and nothing else, with lower-case hex.
  return JSON.stringify(text);
}

/**
 * Member names repeat across messages ("kind", "value", "channel", ...):
 * short ones are quoted once and kept. Bounded, so names chosen by an
 * application (record fields are positional; only objects carry names)
 * cannot grow it without limit.
 */
const quotedNames = new Map<string, string>();
const MAX_CACHED_NAMES = 256;
const MAX_CACHED_NAME_LENGTH = 32;

function quoteName(name: string): string {
  const cached = quotedNames.get(name);
  if (cached !== undefined) return cached;
  const quoted = quote(name);
  if (name.length <= MAX_CACHED_NAME_LENGTH && quotedNames.size < MAX_CACHED_NAMES) quotedNames.set(name, quoted);
  return quoted;
}

function invalid(what: string): ProtocolError {
  return new ProtocolError("invalid-message", `canonical JSON cannot encode ${what}`);
}
