/**
 * A canonical-text writer specialised for SchemaValue trees. It knows each
 * payload's members, so it writes them in code-point order without sorting
 * and without the cycle bookkeeping of the general `canonicalJson`; the
 * output is byte-identical to `canonicalJson(value)` (a property test checks
 * it). Anything that is not exactly a native value (an extra member, a
 * foreign type, an unknown kind) makes it return `"not-native"`, text
 * that would nest deeper than the JSON depth limit `"too-deep"`, and text
 * longer than the caller's bound `"too-long"`: no member is ever silently
 * dropped, and nothing is written that a strict parser would refuse.
 *
 * The bound is kept while writing, not after: a value built in memory can
 * reference one node at many places (a DAG), and its text then doubles with
 * each level that does (20 levels of a tuple of one node twice: 21 nodes in
 * memory, 64 MiB of text).
 */
import { isWellFormedText, LIMITS } from "@golem-stream/wire";
import { canonicalStringNodeText } from "@golem-stream/wire/internal";
import type { SchemaValue } from "./types.js";
import { parseSigned, parseUnsigned } from "./decimal.js";
import { canonicalF32, EXCEPTIONAL_FLOATS, isOneScalar, SMALL_INTEGER_RANGES } from "./scalars.js";

/** Stops the walk on the first node that is not exactly a native value. */
class NotNative extends Error {}
/** Stops the walk where the text would open its 129th nested container. */
class TooDeep extends Error {}
/** Stops the walk where the text would pass the caller's bound. */
class TooLong extends Error {}

/**
 * Every `{` and `[` the writer opens is checked against the limit a strict
 * parser applies (decisions section 6). `depth` below always counts the
 * containers already open around the node being written.
 */
function open(containers: number): void {
  if (containers > LIMITS.maxJsonDepth) throw new TooDeep();
}

/**
 * Collects fragments and joins them in bounded chunks: one huge array join
 * or a long `+=` rope both cost far more (in copying and garbage) than
 * joining small batches. Counts what it is given against the room left, and
 * stops the walk as soon as a fragment would pass it.
 */
class Sink {
  private parts: string[] = [];
  private readonly chunks: string[] = [];

  constructor(private left: number) {}

  add(fragment: string): void {
    if ((this.left -= fragment.length) < 0) throw new TooLong();
    this.parts.push(fragment);
    if (this.parts.length === 1024) {
      this.chunks.push(this.parts.join(""));
      this.parts = [];
    }
  }

  finish(): string {
    this.chunks.push(this.parts.join(""));
    return this.chunks.join("");
  }
}

/**
 * The canonical text of `value` in at most `maxChars` UTF-16 units (each at
 * least one UTF-8 byte; the exact byte count of a text that fits is the
 * caller's to measure), or why there is none.
 */
export function writeCanonical(
  value: SchemaValue,
  maxChars: number = LIMITS.maxTextMessageBytes,
): string | "not-native" | "too-deep" | "too-long" {
  try {
    const text = scalarRoot(value);
    if (text !== undefined) return text.length > maxChars ? "too-long" : text;
    const out = new Sink(maxChars);
    node(value, out, 0);
    return out.finish();
  } catch (error) {
    if (error instanceof NotNative) return "not-native";
    if (error instanceof TooDeep) return "too-deep";
    if (error instanceof TooLong) return "too-long";
    throw error;
  }
}

/** Kinds whose payload is one JSON scalar, each with its node's text up to the payload (the names need no escaping). */
const SCALAR_OPENINGS: ReadonlyMap<string, string> = new Map(
  ["bool", "s8", "s16", "s32", "u8", "u16", "u32", "s64", "u64", "f32", "f64", "char", "string"].map((kind) => [
    kind,
    `{"kind":"${kind}","value":`,
  ]),
);

/**
 * The whole text of a value that is one scalar node (most stream items: a
 * string, a number), written in one concatenation instead of through a
 * Sink; undefined for any other value. The checks are those of `node`.
 */
function scalarRoot(value: unknown): string | undefined {
  if (!isPlain(value)) return undefined;
  const kind = value["kind"];
  const opening = typeof kind === "string" ? SCALAR_OPENINGS.get(kind) : undefined;
  if (opening === undefined) return undefined;
  if (!hasExactly(value, 2)) throw new NotNative();
  const p = value["value"];
  // A string node the wire has just read in place (an input item of a stream of strings): its
  // canonical text is a slice of that message, the same characters this would write.
  if (kind === "string" && typeof p === "string") {
    const known = canonicalStringNodeText(p);
    if (known !== undefined) return known;
  }
  return opening + scalarPayload(kind as string, p) + "}";
}

/**
 * The payload text of a scalar kind (`SCALAR_OPENINGS`), which must be of the JSON type and form
 * that kind's decoder reads (decisions-v1 section 2): a number for a u64, or a u8 of 300, would
 * be text every receiver refuses.
 */
function scalarPayload(kind: string, p: unknown): string {
  switch (kind) {
    case "string":
      return quote(p);
    case "bool":
      if (typeof p !== "boolean") throw new NotNative();
      return p ? "true" : "false";
    case "char":
      if (typeof p !== "string" || !isOneScalar(p)) throw new NotNative();
      return quote(p);
    case "u64":
    case "s64":
      if ((kind === "u64" ? parseUnsigned(p) : parseSigned(p)) === undefined) throw new NotNative();
      return quote(p);
    case "f32":
    case "f64":
      if (typeof p === "string" && EXCEPTIONAL_FLOATS.has(p)) return quote(p);
      if (kind === "f32" && (typeof p !== "number" || canonicalF32(p) === undefined)) throw new NotNative();
      return number(p);
    default: {
      const [min, max] = SMALL_INTEGER_RANGES[kind as keyof typeof SMALL_INTEGER_RANGES];
      if (typeof p !== "number" || !Number.isInteger(p) || p < min || p > max) throw new NotNative();
      return number(p);
    }
  }
}

function node(value: unknown, out: Sink, depth: number): void {
  open(depth + 1);
  if (!isPlain(value) || !hasExactly(value, 2)) throw new NotNative();
  const kind = value["kind"];
  const p = value["value"];
  if (typeof kind !== "string") throw new NotNative();
  out.add('{"kind":' + quote(kind) + ',"value":');
  // Payload objects open one level below the node; their arrays one more.
  if (typeof p === "object" && p !== null) open(depth + 2);
  const d = depth + 2;
  switch (kind) {
    case "bool":
    case "s8":
    case "s16":
    case "s32":
    case "u8":
    case "u16":
    case "u32":
    case "s64":
    case "u64":
    case "f32":
    case "f64":
    case "char":
    case "string":
      out.add(scalarPayload(kind, p));
      break;
    case "record":
      list(payload(p, ["fields"]), "fields", out, d);
      break;
    case "tuple":
    case "list":
    case "fixed-list":
      list(payload(p, ["elements"]), "elements", out, d);
      break;
    case "variant": {
      const q = payload(p, ["case", "payload"], ["case"]);
      out.add('{"case":' + number(q["case"]));
      if (q["payload"] !== undefined) {
        out.add(',"payload":');
        node(q["payload"], out, d);
      } else if (!hasExactly(q, 1)) throw new NotNative();
      out.add("}");
      break;
    }
    case "enum":
      out.add('{"case":' + number(payload(p, ["case"])["case"]) + "}");
      break;
    case "flags": {
      const bits = payload(p, ["bits"])["bits"];
      if (!Array.isArray(bits)) throw new NotNative();
      open(d + 1);
      out.add('{"bits":[');
      bits.forEach((bit, i) => {
        if (typeof bit !== "boolean") throw new NotNative();
        out.add((i === 0 ? "" : ",") + (bit ? "true" : "false"));
      });
      out.add("]}");
      break;
    }
    case "map": {
      const entries = payload(p, ["entries"])["entries"];
      if (!Array.isArray(entries)) throw new NotNative();
      open(d + 1);
      out.add('{"entries":[');
      entries.forEach((entry, i) => {
        if (!Array.isArray(entry) || entry.length !== 2) throw new NotNative();
        open(d + 2);
        out.add(i === 0 ? "[" : ",[");
        node(entry[0], out, d + 2);
        out.add(",");
        node(entry[1], out, d + 2);
        out.add("]");
      });
      out.add("]}");
      break;
    }
    case "option": {
      const inner = payload(p, ["inner"])["inner"];
      out.add('{"inner":');
      if (inner === null) out.add("null");
      else node(inner, out, d);
      out.add("}");
      break;
    }
    case "result": {
      const q = payload(p, ["tag", "value"]);
      if (q["tag"] !== "ok" && q["tag"] !== "err") throw new NotNative();
      out.add('{"tag":' + quote(q["tag"]) + ',"value":');
      if (q["value"] === null) out.add("null");
      else node(q["value"], out, d);
      out.add("}");
      break;
    }
    case "text": {
      const q = payload(p, ["language", "text"], ["text"]);
      if (q["language"] !== undefined) out.add('{"language":' + quote(q["language"]) + ',"text":');
      else if (!hasExactly(q, 1)) throw new NotNative();
      else out.add('{"text":');
      out.add(quote(q["text"]) + "}");
      break;
    }
    case "binary": {
      const q = payload(p, ["bytes", "mimeType"], ["bytes"]);
      const bytes = q["bytes"];
      if (!Array.isArray(bytes)) throw new NotNative();
      open(d + 1);
      out.add('{"bytes":[');
      for (let i = 0; i < bytes.length; i++) out.add((i === 0 ? "" : ",") + number(bytes[i]));
      out.add("]");
      if (q["mimeType"] !== undefined) out.add(',"mimeType":' + quote(q["mimeType"]));
      else if (!hasExactly(q, 1)) throw new NotNative();
      out.add("}");
      break;
    }
    case "path":
    case "url":
    case "duration":
    case "datetime": {
      const member = kind === "datetime" ? "value" : kind === "duration" ? "nanoseconds" : kind;
      out.add(`{"${member}":` + quote(payload(p, [member])[member]) + "}");
      break;
    }
    case "quantity": {
      const q = payload(p, ["mantissa", "scale", "unit"]);
      out.add('{"mantissa":' + quote(q["mantissa"]) + ',"scale":' + number(q["scale"]) + ',"unit":' + quote(q["unit"]) + "}");
      break;
    }
    case "union": {
      const q = payload(p, ["body", "tag"]);
      out.add('{"body":');
      node(q["body"], out, d);
      out.add(',"tag":' + quote(q["tag"]) + "}");
      break;
    }
    case "stream": {
      if (!isPlain(p) || !hasExactly(p, 1)) throw new NotNative();
      if (typeof p["provisionalRef"] === "string") out.add('{"provisionalRef":' + quote(p["provisionalRef"]) + "}");
      else if (typeof p["streamToken"] === "string") out.add('{"streamToken":' + quote(p["streamToken"]) + "}");
      else throw new NotNative();
      break;
    }
    default:
      throw new NotNative();
  }
  out.add("}");
}

/** `depth` counts the containers open around the payload's array. */
function list(p: Record<string, unknown>, member: string, out: Sink, depth: number): void {
  const items = p[member];
  if (!Array.isArray(items)) throw new NotNative();
  open(depth + 1);
  out.add(`{"${member}":[`);
  for (let i = 0; i < items.length; i++) {
    if (i > 0) out.add(",");
    node(items[i], out, depth + 1);
  }
  out.add("]}");
}

/** A payload object with only `allowed` members and every `required` one. */
function payload(p: unknown, allowed: readonly string[], required: readonly string[] = allowed): Record<string, unknown> {
  if (!isPlain(p)) throw new NotNative();
  for (const name in p) if (!allowed.includes(name)) throw new NotNative();
  for (const name of required) if (p[name] === undefined) throw new NotNative();
  return p;
}

function number(p: unknown): string {
  if (typeof p !== "number" || !Number.isFinite(p)) throw new NotNative();
  return Object.is(p, -0) ? "-0" : String(p);
}

/** What JSON must escape in a string: the quote, the backslash and control characters. */
const NEEDS_ESCAPE = /["\\\u0000-\u001f]/;

function quote(text: unknown): string {
  if (typeof text !== "string" || !isWellFormedText(text)) throw new NotNative();
  // Most strings need no escape: quoted by concatenation, without the string builder
  // JSON.stringify sets up for each call. Otherwise JSON.stringify escapes exactly what JSON
  // requires, with lower-case hex, as canonical JSON does.
  if (!NEEDS_ESCAPE.test(text)) return '"' + text + '"';
  return JSON.stringify(text);
}

function isPlain(x: unknown): x is Record<string, unknown> {
  if (typeof x !== "object" || x === null || Array.isArray(x)) return false;
  const proto: unknown = Object.getPrototypeOf(x);
  return proto === Object.prototype || proto === null;
}

/** Exactly `count` own enumerable members, none of them inherited through for-in. */
function hasExactly(x: Record<string, unknown>, count: number): boolean {
  let n = 0;
  for (const name in x) {
    if (!Object.hasOwn(x, name)) return false;
    n++;
  }
  return n === count;
}
