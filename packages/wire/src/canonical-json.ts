/**
 * Canonical JSON (protocol section 2): no insignificant whitespace, escapes
 * only where JSON requires them, object members in Unicode code-point order.
 * Golden vectors and every encoder in the workspace emit this form.
 *
 * The text is bounded while it is written, not after: a value built in
 * memory can reference one object many times (a DAG), and its text then
 * doubles with each level that does, so 40 levels of `[x, x]` are a few
 * objects in memory and terabytes of text. Each write is given the room left
 * for it and stops as soon as its text would pass it, so the work is bounded
 * by the limit, not by the text the value would have made.
 */
import { callerFault, ProtocolError } from "./errors.js";
import type { JsonValue } from "./json.js";
import { LIMITS } from "./limits.js";
import { compareCodePoints, isWellFormedText, utf8ByteLength } from "./utf8.js";

/** Options of `canonicalJson`; `null` or `undefined` options are the defaults. */
export interface CanonicalJsonOptions {
  /** Largest text accepted, in UTF-8 bytes. Default: 8 MiB (the text message limit). */
  readonly maxBytes?: number;
}

/**
 * Serialises `value` canonically. Members whose value is `undefined` are
 * omitted (optional members are omitted, never null). Throws `ProtocolError`
 * (`invalid-message`) for values JSON cannot carry: non-finite numbers, lone
 * surrogates, cycles and non-JSON types, and `limit-exceeded` for nesting
 * deeper than the JSON depth limit (no receiver would accept it, and a bound
 * keeps a value built in memory from exhausting the stack) or text longer
 * than `maxBytes` UTF-8 bytes, found as soon as the text written passes it.
 * An error thrown by the value itself (a getter) is `internal-error`, with it
 * as `cause`, as is an option outside its domain (`null` or `undefined`
 * options are the defaults).
 */
export function canonicalJson(value: JsonValue, options?: CanonicalJsonOptions): string {
  const maxBytes = readMaxBytes(options);
  const text = canonicalJsonWithin(value, 0, maxBytes);
  if (text === undefined || (text.length * 3 > maxBytes && utf8ByteLength(text) > maxBytes)) {
    throw new ProtocolError("limit-exceeded", `canonical JSON is larger than ${maxBytes} bytes`);
  }
  return text;
}

/**
 * `canonicalJson(value)` for a value that sits `depth` levels inside the
 * JSON being encoded (a message member is at depth 1): the same text, and the
 * same errors as encoding it in place, the depth limit counted from the root.
 * Undefined, rather than an error, as soon as the text would be longer than
 * `maxChars` UTF-16 units (each at least one UTF-8 byte): the encoders say
 * what is too large in their own words. Measuring the exact UTF-8 length of
 * a text that fits is the caller's.
 */
export function canonicalJsonWithin(value: unknown, depth: number, maxChars: number): string | undefined {
  try {
    return write(value, [], depth, maxChars);
  } catch (error) {
    if (error === TOO_LONG) return undefined;
    throw callerFault(error);
  }
}

/** Thrown inside the walk where the text would pass its room; never escapes this module. */
const TOO_LONG: unique symbol = Symbol("canonical JSON too long");

/** The `maxBytes` option: as `parseStrictJson` reads its bounds, a wrong one is the caller's bug. */
function readMaxBytes(options: unknown): number {
  if (options === undefined || options === null) return LIMITS.maxTextMessageBytes;
  let maxBytes: unknown;
  try {
    if (typeof options !== "object") throw new ProtocolError("internal-error", "canonicalJson options must be an object");
    maxBytes = (options as CanonicalJsonOptions).maxBytes;
  } catch (error) {
    throw callerFault(error);
  }
  if (maxBytes === undefined) return LIMITS.maxTextMessageBytes;
  // A NaN bound would compare false with every length and switch the bound off.
  if (typeof maxBytes !== "number" || !Number.isSafeInteger(maxBytes) || maxBytes < 0) {
    throw new ProtocolError("internal-error", "canonicalJson option maxBytes must be a non-negative integer");
  }
  return maxBytes;
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
 * What `canonicalJsonWithin(value, depth, room)` writes, at any depth below the
 * limit, for a plain string node (`isPlainStringNode`): the same text (its
 * length left to the caller to check), and
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
 *
 * Returns at most `room` characters, or throws `TOO_LONG`. A container gives
 * each element the room left after what it has written and the one closing
 * character still to come, so the whole text stays within the caller's room
 * without a count kept anywhere else, and a shared subtree is written only
 * as often as the room allows. A value's own faults are found before its
 * length is compared (a lone surrogate is `invalid-message` at any size).
 */
function write(value: unknown, open: object[], depth: number, room: number): string {
  let scalar: string;
  switch (typeof value) {
    case "string":
      scalar = quote(value);
      break;
    case "number":
      if (!Number.isFinite(value)) throw invalid("a non-finite number");
      scalar = Object.is(value, -0) ? "-0" : String(value);
      break;
    case "boolean":
      scalar = value ? "true" : "false";
      break;
    case "object":
      if (value === null) {
        scalar = "null";
        break;
      }
      return writeContainer(value, open, depth, room);
    default:
      throw invalid(`a ${typeof value}`);
  }
  if (scalar.length > room) throw TOO_LONG;
  return scalar;
}

function writeContainer(value: object, open: object[], depth: number, room: number): string {
  // The objects being written, outermost first: a short array (values are shallow, and at most
  // the depth limit long) costs less to allocate and search than a Set per message.
  if (open.includes(value)) throw invalid("a cycle");
  if (depth >= LIMITS.maxJsonDepth) {
    throw new ProtocolError("limit-exceeded", `canonical JSON nests deeper than ${LIMITS.maxJsonDepth}`);
  }
  // The two brackets are the least any container writes.
  if (room < 2) throw TOO_LONG;
  open.push(value);
  let out: string;
  if (Array.isArray(value)) {
    out = "[";
    for (let i = 0; i < value.length; i++) {
      const element: unknown = value[i];
      if (element === undefined) throw invalid("an undefined array element");
      // The room left once the separator and the closing bracket are counted.
      out += i > 0 ? "," + write(element, open, depth + 1, room - out.length - 2) : write(element, open, depth + 1, room - out.length - 1);
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
      const head = (i > 0 ? "," : "") + quoteName(name) + ":";
      out += head + write(record[name], open, depth + 1, room - out.length - head.length - 1);
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
