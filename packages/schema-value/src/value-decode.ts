/**
 * Strict decoding of a native SchemaValue against a graph and an expected
 * type (protocol section 3, decisions-v1 section 2).
 *
 * One walk does everything: shape, restrictions, stream leaves and the byte
 * charge of section 12. The charge is added as nodes are entered and checked
 * against the limit before any array is walked or copied, so a hostile value
 * costs at most `maxByteCharge` worth of work beyond what the JSON parser
 * already bounded. The result is a fresh, normalized copy: the caller's JSON
 * is never retained.
 *
 * Why one file: the decoder is one walk: ValueDecoder's methods recurse into each other over one
 * running byte charge and one list of stream leaves, and the plain-string shortcut above it must
 * agree with that walk, so it sits beside it.
 */
import {
  getMember,
  isJsonObject,
  isWellFormedText,
  LIMITS,
  ProtocolError,
  utf8ByteLength,
  type JsonObject,
  type JsonValue,
} from "@golem-stream/wire";
import { isAsciiStringNodeText } from "@golem-stream/wire/internal";
import { parseSigned, parseUnsigned } from "./decimal.js";
import { clip, guard, limitError, validationError } from "./errors.js";
import { checkedType, SchemaGraph } from "./graph.js";
import { discriminatorHolds } from "./discriminators.js";
import { Location } from "./location.js";
import { valueOptions } from "./options.js";
import { branchByTag } from "./lookup.js";
import {
  canonicalDatetime,
  canonicalF32,
  EXCEPTIONAL_FLOATS,
  floatValue,
  isMimeType,
  isOneScalar,
  isTokenText,
  isUuidV4,
  NUMERIC_WIDTH,
  SMALL_INTEGER_RANGES,
} from "./scalars.js";
import { checkBinary, checkNumeric, checkPath, checkQuantity, checkText, checkUrl } from "./restrictions.js";
import {
  HOST_MANAGED_KINDS,
  type ExceptionalFloat,
  type ResolvedType,
  type SchemaType,
  type SchemaValue,
  type SchemaValueInput,
  type StreamRef,
} from "./types.js";

/**
 * Which stream leaves a value may carry:
 * - `provisional`: client-sent before acceptance, and nested input streams
 *   in input items (`provisionalRef` only);
 * - `stable`: server-sent after acceptance (`streamToken` only);
 * - `forbidden`: no stream type may even be reached (constructor parameters);
 * - `any`: either form, for re-reading values this process produced itself.
 */
export type StreamMode = "provisional" | "stable" | "forbidden" | "any";

export interface DecodeValueOptions {
  /** Default `"forbidden"`: a caller that forgets to say gets errors, not unchecked refs. */
  readonly streams?: StreamMode;
  /** Expected type. Default: `graph.root`. */
  readonly type?: SchemaType;
  /** Prefix of error paths. Default: `"value"`. */
  readonly path?: string;
  /** Default: `LIMITS.maxValueByteCharge` (8 MiB). Over it: `limit-exceeded`. */
  readonly maxByteCharge?: number;
  /** Most stream leaves in one value. Default: `LIMITS.maxStreamsPerSession` (4096). */
  readonly maxStreams?: number;
  /** Copied into every reported stream leaf. */
  readonly direction?: "input" | "output";
}

export interface StreamLeaf {
  /** RFC 6901 pointer into the value JSON; `""` when the value itself is the stream. */
  readonly coordinate: string;
  readonly ref: StreamRef;
  /** The stream's declared element type (may be a `ref` into the same graph). */
  readonly elementType: SchemaType;
  readonly direction?: "input" | "output";
}

export interface DecodedValue {
  /** The normalized native value; `encodeSchemaValue(value)` is its canonical text. */
  readonly value: SchemaValue;
  /** Stream leaves in document order. */
  readonly streams: StreamLeaf[];
  readonly byteCharge: number;
}

/**
 * Value nodes nest at least two JSON levels each, so a value from a JSON
 * document within the 128-level limit never reaches this; it bounds
 * recursion on values built in JavaScript.
 */
const MAX_VALUE_DEPTH = LIMITS.maxJsonDepth;

const HOST_MANAGED: ReadonlySet<string> = new Set(HOST_MANAGED_KINDS);
const STREAM_MODES = ["provisional", "stable", "forbidden", "any"] as const;

/**
 * Options are the caller's, not the peer's: a wrong one is a programming
 * error, reported as `internal-error` rather than blamed on the value. A
 * NaN limit in particular must never switch the bound off.
 */
function count(value: unknown, name: string): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new ProtocolError("internal-error", `decodeSchemaValue option ${name} must be a non-negative integer`);
  }
  return value;
}

function oneOf<T extends string>(value: unknown, options: readonly T[], name: string): T {
  if (!options.includes(value as T))
    throw new ProtocolError("internal-error", `decodeSchemaValue option ${name} must be one of ${options.join(", ")}`);
  return value as T;
}

export function decodeSchemaValue(json: SchemaValueInput, graph: SchemaGraph, options: DecodeValueOptions = {}): DecodedValue {
  let plain: DecodedValue | undefined;
  try {
    plain = decodePlainString(json, graph, options);
  } catch {
    // A caller-built value or options can throw from a getter: the walk reports that, as it
    // reports anything wrong with the options (the caller's internal-error, checked first).
    plain = undefined;
  }
  return plain ?? decodeSchemaValueWalk(json, graph, options);
}

/**
 * The common case of a stream of strings, a `string` type with default limits, decoded without
 * setting up the walk (its decoder, location and closure per value, about 600 bytes of garbage
 * per item). The type is the graph's root, or `options.type` when it is one of the graph's own
 * nodes (as `toJs` gives a stream's element type for each item an agent reads): the walk then
 * decodes against that node as it is. Anything else, and anything wrong, is `undefined`: the
 * walk decides and reports. The result is the walk's (a test holds the two to each other): a
 * string node is charged 1, its text its UTF-8 length, and a `string` carries no restriction.
 */
function decodePlainString(json: SchemaValueInput, graph: SchemaGraph, options: DecodeValueOptions): DecodedValue | undefined {
  // Options are checked as the walk checks them (`valueOptions`; a bad one is the caller's bug,
  // reported by the walk), in one read of each member the shortcut needs.
  if (typeof options !== "object" || options === null) return undefined;
  if (options.maxByteCharge !== undefined || options.maxStreams !== undefined) return undefined;
  if (options.streams !== undefined && !STREAM_MODES.includes(options.streams)) return undefined;
  if (options.path !== undefined && typeof options.path !== "string") return undefined;
  const direction = options.direction;
  if (direction !== undefined && direction !== "input" && direction !== "output") return undefined;
  const type = options.type;
  // Null is no type (the walk refuses it), not the root `??` would make of it.
  if (type === null) return undefined;
  const text = plainStringText(json, graph, type);
  if (text === undefined) return undefined;
  // A string the wire just read in place from an all-ASCII message is one byte per character: no scan.
  const bytes = isAsciiStringNodeText(text) ? text.length : utf8ByteLength(text);
  return { value: { kind: "string", value: text }, streams: [], byteCharge: 1 + bytes };
}

/**
 * The text of `json` when it is a plain string node (`{"kind":"string","value":text}`, nothing
 * else) that the walk accepts against `type` (default the graph's root; otherwise one of the
 * graph's own nodes) under the default byte charge limit; otherwise undefined. The shared check
 * of the string shortcuts (`decodeSchemaValue`, `toJs`). A getter on a caller-built value may
 * throw from here: the callers catch it and let the walk report it.
 */
export function plainStringText(json: SchemaValueInput, graph: SchemaGraph, type: SchemaType | undefined): string | undefined {
  if (!(graph instanceof SchemaGraph)) return undefined;
  const expected = type ?? graph.root;
  if (expected !== graph.root && !graph.owns(expected)) return undefined;
  if (graph.resolve(expected).kind !== "string") return undefined;
  if (!isJsonObject(json as JsonValue) || !hasTwoMembers(json as JsonObject)) return undefined;
  const kind = getMember(json as JsonObject, "kind");
  const text = getMember(json as JsonObject, "value");
  if (kind !== "string" || typeof text !== "string" || !isWellFormedText(text)) return undefined;
  // The walk's charge: 1 for the node, then the text's UTF-8 length, at most 3 bytes per unit.
  if (1 + 3 * text.length > LIMITS.maxValueByteCharge && 1 + utf8ByteLength(text) > LIMITS.maxValueByteCharge) return undefined;
  return text;
}

/** `decodeSchemaValue` by the full walk (exported for the tests that hold the shortcut to it). */
export function decodeSchemaValueWalk(json: SchemaValueInput, graph: SchemaGraph, options: DecodeValueOptions = {}): DecodedValue {
  return walkValue(json, graph, valueOptions(options));
}

/** The walk, for options `valueOptions` has checked. */
function walkValue(json: SchemaValueInput, graph: SchemaGraph, options: DecodeValueOptions): DecodedValue {
  return guard("value", () => {
    const prefix = options.path ?? "value";
    if (typeof prefix !== "string") throw new ProtocolError("internal-error", "decodeSchemaValue option path must be a string");
    const [checkedGraph, type] = checkedType(graph, options.type);
    const decoder = new ValueDecoder(checkedGraph, options, prefix);
    const value = decoder.node(json as JsonValue, type);
    return { value, streams: decoder.streams, byteCharge: decoder.charge };
  });
}

class ValueDecoder {
  readonly streams: StreamLeaf[] = [];
  charge = 0;
  private readonly location: Location;
  private readonly mode: StreamMode;
  private readonly maxCharge: number;
  private readonly maxStreams: number;
  /** Stream references met so far; made at the first one (most values carry none). */
  private seenRefs: Set<string> | undefined;

  constructor(
    private readonly graph: SchemaGraph,
    private readonly options: DecodeValueOptions,
    prefix: string,
  ) {
    this.location = new Location(prefix);
    this.mode = oneOf(options.streams ?? "forbidden", STREAM_MODES, "streams");
    this.maxCharge = count(options.maxByteCharge ?? LIMITS.maxValueByteCharge, "maxByteCharge");
    this.maxStreams = count(options.maxStreams ?? LIMITS.maxStreamsPerSession, "maxStreams");
  }

  // ---------------------------------------------------------------- walk

  node(json: JsonValue, type: SchemaType): SchemaValue {
    if (this.location.depth > MAX_VALUE_DEPTH) throw limitError(this.location.path(), "value nests too deeply");
    this.add(1);
    const resolved = type.kind === "ref" ? this.graph.resolve(type) : type;
    if (!isJsonObject(json)) throw this.invalid("must be an object with kind and value");
    const kind = getMember(json, "kind");
    const payload = getMember(json, "value");
    if (typeof kind !== "string" || payload === undefined || !hasTwoMembers(json)) {
      throw this.invalid("must be an object with exactly kind and value");
    }
    if (HOST_MANAGED.has(resolved.kind) || HOST_MANAGED.has(kind)) {
      const managed = HOST_MANAGED.has(resolved.kind) ? resolved.kind : kind;
      throw new ProtocolError("unsupported-value", `${this.location.path()}: ${managed} values cannot cross the public boundary`, {
        path: this.location.path(),
      });
    }
    if (resolved.kind === "stream" && this.mode === "forbidden") throw this.invalid("streams are not allowed here");
    if (kind !== resolved.kind) throw this.invalid(`expected a ${resolved.kind} value, found ${clip(kind)}`);
    return this.payload(resolved, payload);
  }

  private payload(type: ResolvedType, payload: JsonValue): SchemaValue {
    switch (type.kind) {
      case "bool":
        if (typeof payload !== "boolean") throw this.invalid("a bool payload must be true or false");
        this.add(1);
        return { kind: type.kind, value: payload };
      case "s8":
      case "s16":
      case "s32":
      case "u8":
      case "u16":
      case "u32": {
        const [min, max] = SMALL_INTEGER_RANGES[type.kind];
        if (typeof payload !== "number" || !Number.isInteger(payload) || payload < min || payload > max) {
          throw this.invalid(`must be an integer from ${min} through ${max}`);
        }
        this.add(NUMERIC_WIDTH[type.kind]);
        this.restriction(checkNumeric(type.value.restrictions, payload));
        return { kind: type.kind, value: payload === 0 ? 0 : payload };
      }
      case "s64":
      case "u64": {
        const value = type.kind === "s64" ? parseSigned(payload) : parseUnsigned(payload);
        if (value === undefined)
          throw this.invalid(`must be a canonical ${type.kind === "s64" ? "signed" : "unsigned"} decimal string in ${type.kind} range`);
        this.add(8);
        this.restriction(checkNumeric(type.value.restrictions, value));
        return { kind: type.kind, value: payload as string };
      }
      case "f32":
      case "f64": {
        let value: number | ExceptionalFloat;
        if (typeof payload === "string" && EXCEPTIONAL_FLOATS.has(payload)) value = payload as ExceptionalFloat;
        else if (typeof payload === "number" && Number.isFinite(payload)) {
          const normalized = type.kind === "f32" ? canonicalF32(payload) : payload;
          if (normalized === undefined) throw this.invalid("is outside the f32 range");
          value = normalized;
        } else throw this.invalid('must be a finite JSON number or "NaN", "Infinity", "-Infinity"');
        this.add(NUMERIC_WIDTH[type.kind]);
        // An f32 is compared as the f32 itself (Golem widens it to f64), not as the shorter decimal it is written as.
        const compared = type.kind === "f32" ? Math.fround(floatValue(value)) : floatValue(value);
        this.restriction(checkNumeric(type.value.restrictions, compared));
        return { kind: type.kind, value };
      }
      case "char":
        if (typeof payload !== "string" || !isOneScalar(payload)) throw this.invalid("a char must be exactly one Unicode scalar value");
        this.add(utf8ByteLength(payload));
        return { kind: type.kind, value: payload };
      case "string":
        return { kind: type.kind, value: this.text(payload, "a string payload") };
      case "record": {
        const fields = this.elements(payload, "fields");
        const declared = type.value.fields;
        if (fields.length !== declared.length) throw this.invalid(`a record needs ${declared.length} fields, found ${fields.length}`);
        const out = new Array<SchemaValue>(fields.length);
        for (let i = 0; i < fields.length; i++) out[i] = this.child(fields[i], (declared[i] as { body: SchemaType }).body, "fields", i);
        return { kind: type.kind, value: { fields: out } };
      }
      case "tuple":
      case "list":
      case "fixed-list": {
        const elements = this.elements(payload, "elements");
        if (type.kind === "tuple" && elements.length !== type.value.elements.length) {
          throw this.invalid(`a tuple needs ${type.value.elements.length} elements, found ${elements.length}`);
        }
        if (type.kind === "fixed-list" && elements.length !== type.value.length) {
          throw this.invalid(`a fixed-list needs ${type.value.length} elements, found ${elements.length}`);
        }
        const out = new Array<SchemaValue>(elements.length);
        for (let i = 0; i < elements.length; i++) {
          const elementType = type.kind === "tuple" ? (type.value.elements[i] as SchemaType) : type.value.element;
          out[i] = this.child(elements[i], elementType, "elements", i);
        }
        return { kind: type.kind, value: { elements: out } };
      }
      case "map": {
        const entries = this.elements(payload, "entries");
        const out = new Array<[SchemaValue, SchemaValue]>(entries.length);
        for (let i = 0; i < entries.length; i++) {
          const entry = entries[i];
          if (!Array.isArray(entry) || entry.length !== 2) throw this.invalidAt("entries", i, "a map entry must be a [key, value] pair");
          out[i] = [this.child(entry[0], type.value.key, "entries", i, 0), this.child(entry[1], type.value.value, "entries", i, 1)];
        }
        return { kind: type.kind, value: { entries: out } };
      }
      case "variant": {
        const p = this.object(payload, ["case", "payload"], ["case"]);
        const index = this.caseIndex(p, type.value.cases.length);
        const declared = type.value.cases[index]?.payload;
        const child = getMember(p, "payload");
        if ((declared === undefined) !== (child === undefined)) {
          throw this.invalid(declared === undefined ? "this case carries no payload" : "this case needs a payload");
        }
        if (declared === undefined || child === undefined) return { kind: type.kind, value: { case: index } };
        return { kind: type.kind, value: { case: index, payload: this.child(child, declared, "payload") } };
      }
      case "enum": {
        const p = this.object(payload, ["case"], ["case"]);
        return { kind: type.kind, value: { case: this.caseIndex(p, type.value.cases.length) } };
      }
      case "flags": {
        const bits = this.elements(payload, "bits");
        if (bits.length !== type.value.flags.length) throw this.invalid(`flags need ${type.value.flags.length} bits, found ${bits.length}`);
        this.add(bits.length);
        const out = new Array<boolean>(bits.length);
        for (let i = 0; i < bits.length; i++) {
          const bit = bits[i];
          if (typeof bit !== "boolean") throw this.invalidAt("bits", i, "a flag bit must be true or false");
          out[i] = bit;
        }
        return { kind: type.kind, value: { bits: out } };
      }
      case "option": {
        const p = this.object(payload, ["inner"], ["inner"]);
        const inner = getMember(p, "inner");
        if (inner === null || inner === undefined) return { kind: type.kind, value: { inner: null } };
        return { kind: type.kind, value: { inner: this.child(inner, type.value.inner, "inner") } };
      }
      case "result": {
        const p = this.object(payload, ["tag", "value"], ["tag", "value"]);
        const tag = getMember(p, "tag");
        if (tag !== "ok" && tag !== "err") throw this.invalid('a result tag must be "ok" or "err"');
        this.add(tag.length);
        const declared = type.value.spec[tag];
        const child = getMember(p, "value");
        if ((declared === undefined) !== (child === null)) {
          throw this.invalid(declared === undefined ? `the ${tag} side carries no value` : `the ${tag} side needs a value`);
        }
        if (declared === undefined || child === null || child === undefined) return { kind: type.kind, value: { tag, value: null } };
        return { kind: type.kind, value: { tag, value: this.child(child, declared, "value") } };
      }
      case "text": {
        const p = this.object(payload, ["text", "language"], ["text"]);
        const text = this.text(getMember(p, "text"), "text");
        const languageJson = getMember(p, "language");
        const language = languageJson === undefined ? undefined : this.text(languageJson, "language");
        this.restriction(checkText(type.value.restrictions, text, language, (source) => this.graph.regex(source)));
        return { kind: type.kind, value: language === undefined ? { text } : { text, language } };
      }
      case "binary": {
        const p = this.object(payload, ["bytes", "mimeType"], ["bytes"]);
        const bytes = this.array(p, "bytes");
        this.add(bytes.length);
        const out = new Array<number>(bytes.length);
        for (let i = 0; i < bytes.length; i++) {
          const byte = bytes[i];
          if (typeof byte !== "number" || !Number.isInteger(byte) || byte < 0 || byte > 255) {
            throw this.invalidAt("bytes", i, "a byte must be an integer from 0 through 255");
          }
          out[i] = byte === 0 ? 0 : byte;
        }
        const mimeJson = getMember(p, "mimeType");
        let mimeType: string | undefined;
        if (mimeJson !== undefined) {
          if (typeof mimeJson !== "string" || !isMimeType(mimeJson)) throw this.invalid("mimeType must be an ASCII type/subtype");
          this.add(mimeJson.length);
          mimeType = mimeJson;
        }
        this.restriction(checkBinary(type.value.restrictions, out.length, mimeType));
        return { kind: type.kind, value: mimeType === undefined ? { bytes: out } : { bytes: out, mimeType } };
      }
      case "path": {
        const path = this.text(getMember(this.object(payload, ["path"], ["path"]), "path"), "path");
        this.restriction(checkPath(type.value.spec, path));
        return { kind: type.kind, value: { path } };
      }
      case "url": {
        const url = this.text(getMember(this.object(payload, ["url"], ["url"]), "url"), "url");
        this.restriction(checkUrl(type.value.restrictions, url));
        return { kind: type.kind, value: { url } };
      }
      case "datetime": {
        const text = getMember(this.object(payload, ["value"], ["value"]), "value");
        const canonical = typeof text === "string" ? canonicalDatetime(text) : undefined;
        if (canonical === undefined) throw this.invalid("a datetime must be an RFC 3339 UTC timestamp (YYYY-MM-DDTHH:MM:SS[.fraction]Z)");
        this.add(canonical.length);
        return { kind: type.kind, value: { value: canonical } };
      }
      case "duration": {
        const nanoseconds = getMember(this.object(payload, ["nanoseconds"], ["nanoseconds"]), "nanoseconds");
        if (parseSigned(nanoseconds) === undefined)
          throw this.invalid("nanoseconds must be a canonical signed decimal string in i64 range");
        this.add(8);
        return { kind: type.kind, value: { nanoseconds: nanoseconds as string } };
      }
      case "quantity": {
        const p = this.object(payload, ["mantissa", "scale", "unit"], ["mantissa", "scale", "unit"]);
        const mantissaJson = getMember(p, "mantissa");
        const mantissa = parseSigned(mantissaJson);
        if (mantissa === undefined) throw this.invalid("mantissa must be a canonical signed decimal string in i64 range");
        const scale = getMember(p, "scale");
        if (typeof scale !== "number" || !Number.isInteger(scale) || scale < -0x8000_0000 || scale > 0x7fff_ffff) {
          throw this.invalid("scale must be an i32 integer");
        }
        this.add(12);
        const unit = this.text(getMember(p, "unit"), "unit");
        this.restriction(checkQuantity(type.value.spec, mantissa, scale, unit));
        return { kind: type.kind, value: { mantissa: mantissaJson as string, scale: scale === 0 ? 0 : scale, unit } };
      }
      case "union": {
        const p = this.object(payload, ["tag", "body"], ["tag", "body"]);
        const tag = this.text(getMember(p, "tag"), "tag");
        const branch = branchByTag(type.value.spec.branches, tag);
        if (branch === undefined) throw this.invalid(`no union branch is tagged "${clip(tag)}"`);
        const body = this.child(getMember(p, "body") ?? null, branch.body, "body");
        if (!discriminatorHolds(this.graph, branch, body))
          throw this.invalid(`the body does not satisfy the discriminator of branch "${clip(tag)}"`);
        return { kind: type.kind, value: { tag, body } };
      }
      case "stream":
        return { kind: type.kind, value: this.streamLeaf(payload, type.value.inner) };
      case "secret":
      case "quota-token":
      case "permission-card":
      case "future":
        // Rejected in node() before the payload is read.
        throw this.invalid("host-managed values cannot cross the public boundary");
    }
  }

  private child(json: JsonValue | undefined, type: SchemaType, member: string, index?: number, subIndex?: number): SchemaValue {
    const entered = this.location.enter(member, index, subIndex);
    const value = this.node(json ?? null, type);
    this.location.leave(entered);
    return value;
  }

  // ---------------------------------------------------------------- streams

  private streamLeaf(payload: JsonValue, elementType: SchemaType): StreamRef {
    const p = this.object(payload, ["provisionalRef", "streamToken"], []);
    const provisional = getMember(p, "provisionalRef");
    const token = getMember(p, "streamToken");
    if ((provisional === undefined) === (token === undefined))
      throw this.invalid("a stream needs exactly one of provisionalRef and streamToken");
    let ref: StreamRef;
    let key: string;
    if (provisional !== undefined) {
      if (this.mode === "stable") throw this.invalid("a provisional stream reference is not valid here; expected a streamToken");
      if (typeof provisional !== "string" || !isUuidV4(provisional)) throw this.invalid("provisionalRef must be a lower-case UUIDv4");
      this.add(16);
      ref = { provisionalRef: provisional };
      key = `p${provisional}`;
    } else {
      if (this.mode === "provisional") throw this.invalid("a stream token is not valid here; expected a provisionalRef");
      if (typeof token !== "string" || !isTokenText(token, LIMITS.maxTokenBytes)) {
        throw this.invalid(`streamToken must be non-empty visible ASCII of at most ${LIMITS.maxTokenBytes} bytes`);
      }
      this.add(token.length);
      ref = { streamToken: token };
      key = `t${token}`;
    }
    this.seenRefs ??= new Set();
    if (this.seenRefs.has(key)) {
      throw new ProtocolError("stream-already-consumed", `${this.location.path()}: the stream reference occurs at two coordinates`, {
        path: this.location.path(),
      });
    }
    this.seenRefs.add(key);
    if (this.streams.length >= this.maxStreams) throw limitError(this.location.path(), `more than ${this.maxStreams} streams in one value`);
    const leaf: StreamLeaf = { coordinate: this.location.pointer(), ref, elementType };
    this.streams.push(this.options.direction === undefined ? leaf : { ...leaf, direction: this.options.direction });
    return ref;
  }

  // ---------------------------------------------------------------- payload helpers

  /** Adds to the byte charge, failing as soon as it passes the limit. */
  private add(bytes: number): void {
    this.charge += bytes;
    if (this.charge > this.maxCharge) {
      throw limitError(this.location.path(), `the value's byte charge exceeds ${this.maxCharge}`);
    }
  }

  /** A string payload member, charged at its UTF-8 length. */
  private text(json: JsonValue | undefined, what: string): string {
    if (typeof json !== "string" || !isWellFormedText(json)) throw this.invalid(`${what} must be a string`);
    this.add(utf8ByteLength(json));
    return json;
  }

  private object(json: JsonValue, allowed: readonly string[], required: readonly string[]): JsonObject {
    if (!isJsonObject(json)) throw this.invalid("the payload must be an object");
    for (const name in json) {
      if (!allowed.includes(name)) throw this.invalid(`unknown payload member "${clip(name)}"`);
    }
    for (const name of required) {
      if (getMember(json, name) === undefined) throw this.invalid(`missing payload member "${name}"`);
    }
    return json;
  }

  /**
   * The array of a payload object holding only `member` (`fields`,
   * `elements`, `entries`, `bits`), with its four-byte count charged.
   */
  private elements(payload: JsonValue, member: string): JsonValue[] {
    const p = this.object(payload, [member], [member]);
    this.add(4);
    return this.array(p, member);
  }

  /**
   * An array member, bounded by the remaining charge before anything is
   * walked or copied: every element costs at least one byte.
   */
  private array(p: JsonObject, member: string): JsonValue[] {
    const array = getMember(p, member);
    if (!Array.isArray(array)) throw this.invalid(`${member} must be an array`);
    if (array.length > this.maxCharge - this.charge) {
      throw limitError(this.location.path(), `the value's byte charge exceeds ${this.maxCharge}`);
    }
    return array;
  }

  private caseIndex(payload: JsonObject, count: number): number {
    const index = getMember(payload, "case");
    if (typeof index !== "number" || !Number.isInteger(index) || index < 0 || index >= count) {
      throw this.invalid(`case must be an integer from 0 through ${count - 1}`);
    }
    this.add(4);
    return index === 0 ? 0 : index;
  }

  private restriction(message: string | undefined): void {
    if (message !== undefined) throw this.invalid(message);
  }

  private invalid(message: string): ProtocolError {
    return validationError(this.location.path(), message);
  }

  private invalidAt(member: string, index: number, message: string): ProtocolError {
    const entered = this.location.enter(member, index);
    const error = this.invalid(message);
    this.location.leave(entered);
    return error;
  }
}

/**
 * Exactly two enumerable members (kind and value, already read as own).
 * Counted with for-in to avoid allocating a key array per node; an
 * inherited enumerable member also counts, and so is refused.
 */
function hasTwoMembers(json: JsonObject): boolean {
  let count = 0;
  for (const name in json) {
    void name;
    if (++count > 2) return false;
  }
  return count === 2;
}
