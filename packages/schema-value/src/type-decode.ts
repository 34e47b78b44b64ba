/**
 * Strict decoding of one SchemaType tree (decisions-v1 section 1). Builds a
 * fresh copy, so nothing of the caller's (possibly hostile) JSON is kept, and
 * records what can only be checked once the whole graph is known: refs,
 * union discriminators and map keys.
 */
import { isJsonObject, type JsonObject, type JsonValue } from "@golem-stream/wire";
import { parseSigned, parseUnsigned, I64_MIN, I64_MAX, U64_MAX } from "./decimal.js";
import { clip, graphError } from "./errors.js";
import { array, integer, members, nonEmptyString, oneOf, string, strings, unique, uniqueNames } from "./json-shape.js";
import {
  HOST_MANAGED_KINDS,
  type BinaryRestrictions,
  type Discriminator,
  type HostManagedKind,
  type Metadata,
  type NumericBound,
  type NumericKind,
  type NumericRestrictions,
  type PathSpec,
  type QuantityBound,
  type QuantitySpec,
  type RecordField,
  type SchemaType,
  type TextRestrictions,
  type UnionBranch,
  type UrlRestrictions,
  type VariantCase,
} from "./types.js";

/** Facts gathered while decoding, checked by the graph once all defs are known. */
export interface TypeFacts {
  readonly refs: { id: string; path: string }[];
  readonly regexes: { source: string; path: string }[];
  readonly unions: { type: Extract<SchemaType, { kind: "union" }>; path: string }[];
  readonly mapKeys: { type: SchemaType; path: string }[];
  readonly streams: { path: string }[];
  /**
   * Each type node of the caller's already decoded (null while it is being decoded), and each
   * host-managed payload already copied. A graph built in memory may use one object at many places
   * (`x = t.tuple(x, x)` twenty times is 21 objects for a million places): each is decoded once, and
   * the graph made holds its copy at every place the caller's held the object. Its facts are
   * gathered once, at the first place, which is also the place its errors name.
   */
  readonly decoded: Map<object, SchemaType | null>;
  readonly hostValues: Map<object, JsonObject>;
}

export function newTypeFacts(): TypeFacts {
  return { refs: [], regexes: [], unions: [], mapKeys: [], streams: [], decoded: new Map(), hostValues: new Map() };
}

const U32_MAX = 0xffff_ffff;
const I32_MIN = -0x8000_0000;
const I32_MAX = 0x7fff_ffff;

/** The signed/unsigned range of each integer kind, for restriction bounds. */
const INTEGER_RANGES: Record<Exclude<NumericKind, "f32" | "f64">, readonly [bigint, bigint]> = {
  s8: [-128n, 127n],
  s16: [-32768n, 32767n],
  s32: [-2147483648n, 2147483647n],
  s64: [I64_MIN, I64_MAX],
  u8: [0n, 255n],
  u16: [0n, 65535n],
  u32: [0n, 4294967295n],
  u64: [0n, U64_MAX],
};

const HOST_MANAGED: ReadonlySet<string> = new Set(HOST_MANAGED_KINDS);
const UNIT_KINDS: ReadonlySet<string> = new Set(["bool", "char", "string", "datetime", "duration"]);

/**
 * The type at `path`, decoded once per object of the caller's (see `TypeFacts.decoded`). An
 * object met again while it is still being decoded contains itself, which JSON text cannot say:
 * refused, as recursion goes through a def.
 */
export function decodeType(json: JsonValue | undefined, path: string, facts: TypeFacts): SchemaType {
  if (typeof json !== "object" || json === null) return decodeNode(json, path, facts);
  const known = facts.decoded.get(json);
  if (known === null) throw graphError(path, "contains itself (a type that recurs names a def with a ref)");
  if (known !== undefined) return known;
  facts.decoded.set(json, null);
  const type = decodeNode(json, path, facts);
  facts.decoded.set(json, type);
  return type;
}

function decodeNode(json: JsonValue | undefined, path: string, facts: TypeFacts): SchemaType {
  const node = members(json, path, ["kind", "value"], ["kind", "value"]);
  const kind = node["kind"];
  if (typeof kind !== "string") throw graphError(path, "kind must be a string");
  const value = node["value"];
  if (HOST_MANAGED.has(kind)) {
    // Their members are Golem's, not this protocol's: keep them verbatim
    // (they only ever make a value `unsupported-value`).
    if (!isJsonObject(value)) throw graphError(path, "value must be an object");
    let copy = facts.hostValues.get(value);
    if (copy === undefined) facts.hostValues.set(value, (copy = structuredClone(value)));
    return { kind: kind as HostManagedKind, value: copy };
  }
  if (UNIT_KINDS.has(kind)) {
    const v = members(value, `${path}.value`, ["metadata"], []);
    return { kind, value: withMetadata({}, v, path) } as SchemaType;
  }
  const at = (member: string) => `${path}.${member}`;
  switch (kind) {
    case "ref": {
      const v = members(value, at("value"), ["id", "metadata"], ["id"]);
      const id = nonEmptyString(v["id"], at("id"));
      facts.refs.push({ id, path });
      return { kind, value: withMetadata({ id }, v, path) };
    }
    case "s8":
    case "s16":
    case "s32":
    case "s64":
    case "u8":
    case "u16":
    case "u32":
    case "u64":
    case "f32":
    case "f64": {
      const v = members(value, at("value"), ["restrictions", "metadata"], []);
      const out: { restrictions?: NumericRestrictions } = {};
      if (v["restrictions"] !== undefined) out.restrictions = numericRestrictions(kind, v["restrictions"], at("restrictions"));
      return { kind, value: withMetadata(out, v, path) } as SchemaType;
    }
    case "record": {
      const v = members(value, at("value"), ["fields", "metadata"], ["fields"]);
      const names = new Set<string>();
      const fields = array(v["fields"], at("fields")).map((entry, i): RecordField => {
        const p = `${path}.fields[${i}]`;
        const f = members(entry, p, ["name", "body", "metadata"], ["name", "body"]);
        const name = unique(names, nonEmptyString(f["name"], `${p}.name`), `${p}.name`, "field name");
        return withMetadata({ name, body: decodeType(f["body"], `${p}.body`, facts) }, f, p);
      });
      return { kind, value: withMetadata({ fields }, v, path) };
    }
    case "variant": {
      const v = members(value, at("value"), ["cases", "metadata"], ["cases"]);
      const names = new Set<string>();
      const cases = array(v["cases"], at("cases")).map((entry, i): VariantCase => {
        const p = `${path}.cases[${i}]`;
        const c = members(entry, p, ["name", "payload", "metadata"], ["name"]);
        const name = unique(names, nonEmptyString(c["name"], `${p}.name`), `${p}.name`, "case name");
        const out: VariantCase = { name };
        if (c["payload"] !== undefined) out.payload = decodeType(c["payload"], `${p}.payload`, facts);
        return withMetadata(out, c, p);
      });
      return { kind, value: withMetadata({ cases }, v, path) };
    }
    case "enum": {
      const v = members(value, at("value"), ["cases", "metadata"], ["cases"]);
      return { kind, value: withMetadata({ cases: uniqueNames(v["cases"], at("cases")) }, v, path) };
    }
    case "flags": {
      const v = members(value, at("value"), ["flags", "metadata"], ["flags"]);
      return { kind, value: withMetadata({ flags: uniqueNames(v["flags"], at("flags")) }, v, path) };
    }
    case "tuple": {
      const v = members(value, at("value"), ["elements", "metadata"], ["elements"]);
      const elements = array(v["elements"], at("elements")).map((e, i) => decodeType(e, `${path}.elements[${i}]`, facts));
      return { kind, value: withMetadata({ elements }, v, path) };
    }
    case "list":
    case "option":
    case "stream": {
      const member = kind === "list" ? "element" : "inner";
      const v = members(value, at("value"), [member, "metadata"], [member]);
      const inner = decodeType(v[member], at(member), facts);
      if (kind === "stream") facts.streams.push({ path });
      if (kind === "list") return { kind, value: withMetadata({ element: inner }, v, path) };
      return { kind, value: withMetadata({ inner }, v, path) };
    }
    case "fixed-list": {
      const v = members(value, at("value"), ["element", "length", "metadata"], ["element", "length"]);
      const length = integer(v["length"], at("length"), 0, U32_MAX);
      return { kind, value: withMetadata({ element: decodeType(v["element"], at("element"), facts), length }, v, path) };
    }
    case "map": {
      const v = members(value, at("value"), ["key", "value", "metadata"], ["key", "value"]);
      const key = decodeType(v["key"], at("key"), facts);
      facts.mapKeys.push({ type: key, path: at("key") });
      return { kind, value: withMetadata({ key, value: decodeType(v["value"], at("value"), facts) }, v, path) };
    }
    case "result": {
      const v = members(value, at("value"), ["spec", "metadata"], ["spec"]);
      const s = members(v["spec"], at("spec"), ["ok", "err"], []);
      const spec: { ok?: SchemaType; err?: SchemaType } = {};
      if (s["ok"] !== undefined) spec.ok = decodeType(s["ok"], at("spec.ok"), facts);
      if (s["err"] !== undefined) spec.err = decodeType(s["err"], at("spec.err"), facts);
      return { kind, value: withMetadata({ spec }, v, path) };
    }
    case "text": {
      const v = members(value, at("value"), ["restrictions", "metadata"], ["restrictions"]);
      return { kind, value: withMetadata({ restrictions: textRestrictions(v["restrictions"], at("restrictions"), facts) }, v, path) };
    }
    case "binary": {
      const v = members(value, at("value"), ["restrictions", "metadata"], ["restrictions"]);
      return { kind, value: withMetadata({ restrictions: binaryRestrictions(v["restrictions"], at("restrictions")) }, v, path) };
    }
    case "path": {
      const v = members(value, at("value"), ["spec", "metadata"], ["spec"]);
      return { kind, value: withMetadata({ spec: pathSpec(v["spec"], at("spec")) }, v, path) };
    }
    case "url": {
      const v = members(value, at("value"), ["restrictions", "metadata"], ["restrictions"]);
      const r = members(v["restrictions"], at("restrictions"), ["allowedSchemes", "allowedHosts"], []);
      const restrictions: UrlRestrictions = {};
      if (r["allowedSchemes"] !== undefined) restrictions.allowedSchemes = strings(r["allowedSchemes"], at("restrictions.allowedSchemes"));
      if (r["allowedHosts"] !== undefined) restrictions.allowedHosts = strings(r["allowedHosts"], at("restrictions.allowedHosts"));
      return { kind, value: withMetadata({ restrictions }, v, path) };
    }
    case "quantity": {
      const v = members(value, at("value"), ["spec", "metadata"], ["spec"]);
      return { kind, value: withMetadata({ spec: quantitySpec(v["spec"], at("spec")) }, v, path) };
    }
    case "union": {
      const v = members(value, at("value"), ["spec", "metadata"], ["spec"]);
      const s = members(v["spec"], at("spec"), ["branches"], ["branches"]);
      const tags = new Set<string>();
      const branches = array(s["branches"], at("spec.branches")).map((entry, i): UnionBranch => {
        const p = `${path}.branches[${i}]`;
        const b = members(entry, p, ["tag", "body", "discriminator", "metadata"], ["tag", "body", "discriminator"]);
        const tag = unique(tags, nonEmptyString(b["tag"], `${p}.tag`), `${p}.tag`, "branch tag");
        const body = decodeType(b["body"], `${p}.body`, facts);
        const discriminator = decodeDiscriminator(b["discriminator"], `${p}.discriminator`, facts);
        return withMetadata({ tag, body, discriminator }, b, p);
      });
      if (branches.length === 0) throw graphError(at("spec.branches"), "a union needs at least one branch");
      const type = { kind, value: withMetadata({ spec: { branches } }, v, path) } as const;
      facts.unions.push({ type, path });
      return type;
    }
    default:
      throw graphError(path, `unknown type kind "${clip(kind)}"`);
  }
}

// ---------------------------------------------------------------- restrictions

function numericRestrictions(kind: NumericKind, json: JsonValue | undefined, path: string): NumericRestrictions {
  const r = members(json, path, ["min", "max", "unit"], []);
  const out: NumericRestrictions = {};
  if (r["min"] !== undefined) out.min = numericBound(kind, r["min"], `${path}.min`);
  if (r["max"] !== undefined) out.max = numericBound(kind, r["max"], `${path}.max`);
  if (r["unit"] !== undefined) out.unit = string(r["unit"], `${path}.unit`);
  return out;
}

/**
 * A bound must be of the family of its type and inside the type's range (an
 * f32 bound: a value f32 holds exactly); a mismatched bound is a graph error
 * here (Golem's validator silently ignores it, which would let a schema
 * promise a check that never happens).
 */
function numericBound(kind: NumericKind, json: JsonValue | undefined, path: string): NumericBound {
  const b = members(json, path, ["kind", "value"], ["kind", "value"]);
  const family = b["kind"];
  const text = b["value"];
  if (kind === "f32" || kind === "f64") {
    if (family !== "float-bits") throw graphError(path, `a ${kind} bound must be float-bits`);
    const bits = parseUnsigned(text);
    if (bits === undefined) throw graphError(`${path}.value`, "must be a canonical unsigned decimal string in u64 range");
    const bound = floatFromBits(bits);
    if (!Number.isFinite(bound)) throw graphError(`${path}.value`, "must be the bits of a finite f64");
    // Golem's well-formedness check refuses an f32 bound that does not round-trip through f32, and its validator skips one.
    if (kind === "f32" && Math.fround(bound) !== bound) throw graphError(`${path}.value`, "must be the bits of an f32 value");
    return { kind: "float-bits", value: text as string };
  }
  const [min, max] = INTEGER_RANGES[kind];
  const signed = kind.startsWith("s");
  if (family !== (signed ? "signed" : "unsigned")) {
    throw graphError(path, `a ${kind} bound must be ${signed ? "signed" : "unsigned"}`);
  }
  const value = signed ? parseSigned(text, min, max) : parseUnsigned(text, max);
  if (value === undefined) throw graphError(`${path}.value`, `must be a canonical decimal string in ${kind} range`);
  return { kind: family, value: text as string };
}

export function floatFromBits(bits: bigint): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setBigUint64(0, bits);
  return view.getFloat64(0);
}

function textRestrictions(json: JsonValue | undefined, path: string, facts: TypeFacts): TextRestrictions {
  const r = members(json, path, ["languages", "minLength", "maxLength", "regex"], []);
  const out: TextRestrictions = {};
  if (r["languages"] !== undefined) out.languages = strings(r["languages"], `${path}.languages`);
  if (r["minLength"] !== undefined) out.minLength = integer(r["minLength"], `${path}.minLength`, 0, U32_MAX);
  if (r["maxLength"] !== undefined) out.maxLength = integer(r["maxLength"], `${path}.maxLength`, 0, U32_MAX);
  if (r["regex"] !== undefined) {
    out.regex = string(r["regex"], `${path}.regex`);
    facts.regexes.push({ source: out.regex, path: `${path}.regex` });
  }
  return out;
}

function binaryRestrictions(json: JsonValue | undefined, path: string): BinaryRestrictions {
  const r = members(json, path, ["mimeTypes", "minBytes", "maxBytes"], []);
  const out: BinaryRestrictions = {};
  if (r["mimeTypes"] !== undefined) out.mimeTypes = strings(r["mimeTypes"], `${path}.mimeTypes`);
  if (r["minBytes"] !== undefined) out.minBytes = integer(r["minBytes"], `${path}.minBytes`, 0, U32_MAX);
  if (r["maxBytes"] !== undefined) out.maxBytes = integer(r["maxBytes"], `${path}.maxBytes`, 0, U32_MAX);
  return out;
}

function pathSpec(json: JsonValue | undefined, path: string): PathSpec {
  const s = members(json, path, ["direction", "kind", "allowedMimeTypes", "allowedExtensions"], ["direction", "kind"]);
  const direction = oneOf(s["direction"], `${path}.direction`, ["input", "output", "in-out"] as const);
  const kind = oneOf(s["kind"], `${path}.kind`, ["file", "directory", "any"] as const);
  const out: PathSpec = { direction, kind };
  if (s["allowedMimeTypes"] !== undefined) out.allowedMimeTypes = strings(s["allowedMimeTypes"], `${path}.allowedMimeTypes`);
  if (s["allowedExtensions"] !== undefined) out.allowedExtensions = strings(s["allowedExtensions"], `${path}.allowedExtensions`);
  return out;
}

function quantitySpec(json: JsonValue | undefined, path: string): QuantitySpec {
  const s = members(json, path, ["baseUnit", "allowedSuffixes", "min", "max"], ["baseUnit", "allowedSuffixes"]);
  const out: QuantitySpec = {
    baseUnit: string(s["baseUnit"], `${path}.baseUnit`),
    allowedSuffixes: strings(s["allowedSuffixes"], `${path}.allowedSuffixes`),
  };
  if (s["min"] !== undefined) out.min = quantityBound(s["min"], `${path}.min`);
  if (s["max"] !== undefined) out.max = quantityBound(s["max"], `${path}.max`);
  return out;
}

function quantityBound(json: JsonValue | undefined, path: string): QuantityBound {
  const q = members(json, path, ["mantissa", "scale", "unit"], ["mantissa", "scale", "unit"]);
  const mantissa = q["mantissa"];
  if (parseSigned(mantissa) === undefined) throw graphError(`${path}.mantissa`, "must be a canonical signed decimal string in i64 range");
  return {
    mantissa: mantissa as string,
    scale: integer(q["scale"], `${path}.scale`, I32_MIN, I32_MAX),
    unit: string(q["unit"], `${path}.unit`),
  };
}

function decodeDiscriminator(json: JsonValue | undefined, path: string, facts: TypeFacts): Discriminator {
  const d = members(json, path, ["rule", "value"], ["rule", "value"]);
  const rule = d["rule"];
  const at = `${path}.value`;
  switch (rule) {
    case "prefix":
    case "suffix":
    case "contains":
    case "regex": {
      const member = rule === "contains" ? "substring" : rule;
      const v = members(d["value"], at, [member], [member]);
      const text = string(v[member], `${at}.${member}`);
      if (rule === "regex") facts.regexes.push({ source: text, path: `${at}.regex` });
      return { rule, value: { [member]: text } } as Discriminator;
    }
    case "field-equals": {
      const v = members(d["value"], at, ["fieldName", "literal"], ["fieldName"]);
      const out: { fieldName: string; literal?: string } = { fieldName: nonEmptyString(v["fieldName"], `${at}.fieldName`) };
      if (v["literal"] !== undefined) out.literal = string(v["literal"], `${at}.literal`);
      return { rule, value: out };
    }
    case "field-absent": {
      const v = members(d["value"], at, ["fieldName"], ["fieldName"]);
      return { rule, value: { fieldName: nonEmptyString(v["fieldName"], `${at}.fieldName`) } };
    }
    default:
      throw graphError(`${path}.rule`, "must be one of prefix, suffix, contains, regex, field-equals, field-absent");
  }
}

// ---------------------------------------------------------------- metadata

function withMetadata<T extends object>(target: T, source: JsonObject, path: string): T & { metadata?: Metadata } {
  const json = source["metadata"];
  if (json === undefined) return target;
  return Object.assign(target, { metadata: metadata(json, `${path}.metadata`) });
}

function metadata(json: JsonValue, path: string): Metadata {
  const m = members(json, path, ["doc", "aliases", "examples", "deprecated", "role"], []);
  const out: Metadata = {};
  if (m["doc"] !== undefined) out.doc = string(m["doc"], `${path}.doc`);
  if (m["aliases"] !== undefined) out.aliases = strings(m["aliases"], `${path}.aliases`);
  if (m["examples"] !== undefined) out.examples = strings(m["examples"], `${path}.examples`);
  if (m["deprecated"] !== undefined) out.deprecated = string(m["deprecated"], `${path}.deprecated`);
  if (m["role"] !== undefined) {
    const r = members(m["role"], `${path}.role`, ["tag", "value"], ["tag"]);
    const tag = oneOf(r["tag"], `${path}.role.tag`, ["multimodal", "unstructured-text", "unstructured-binary", "other"] as const);
    if (tag === "other") out.role = { tag, value: string(r["value"], `${path}.role.value`) };
    else if (r["value"] !== undefined) throw graphError(`${path}.role.value`, `role ${tag} carries no value`);
    else out.role = { tag };
  }
  return out;
}
