/**
 * `v`: builders for native values, typed so that wrong shapes do not
 * compile (`v.u64(5)` needs a bigint, `v.record(...)` takes values, not
 * data). Builders check what they can without a schema (integer ranges,
 * one-scalar chars, UUIDs) and emit the canonical form; checking against a
 * schema is `decodeSchemaValue`'s job.
 */
import { guard, validationError } from "./errors.js";
import { I64_MAX, I64_MIN, U64_MAX } from "./decimal.js";
import { canonicalDatetime, canonicalF32, isOneScalar, isUuidV4, SMALL_INTEGER_RANGES } from "./scalars.js";
import type { SchemaValue, ValueOf } from "./types.js";

type SmallIntegerKind = keyof typeof SMALL_INTEGER_RANGES;

const small =
  <K extends SmallIntegerKind>(kind: K) =>
  (value: number): { kind: K; value: number } => {
    const [min, max] = SMALL_INTEGER_RANGES[kind];
    if (!Number.isInteger(value) || value < min || value > max) throw validationError(`v.${kind}`, `not a ${kind}`);
    return { kind, value: value === 0 ? 0 : value };
  };

function wide(kind: "s64" | "u64", value: bigint): ValueOf<"s64" | "u64"> {
  const [min, max] = kind === "s64" ? [I64_MIN, I64_MAX] : [0n, U64_MAX];
  if (typeof value !== "bigint" || value < min || value > max) throw validationError(`v.${kind}`, `not a ${kind}`);
  return { kind, value: value.toString() };
}

function float(kind: "f32" | "f64", value: number): ValueOf<"f32" | "f64"> {
  if (Number.isNaN(value)) return { kind, value: "NaN" };
  if (value === Infinity) return { kind, value: "Infinity" };
  if (value === -Infinity) return { kind, value: "-Infinity" };
  const normalized = kind === "f32" ? canonicalF32(value) : value;
  if (normalized === undefined) throw validationError("v.f32", `${value} is outside the f32 range`);
  return { kind, value: normalized };
}

/**
 * Builders are called with developer data, not network bytes, but keep the
 * package's promise anyway: a wrong argument is a ProtocolError.
 */
function guarded<A extends unknown[], R>(name: string, build: (...args: A) => R): (...args: A) => R {
  return (...args: A) => guard(`v.${name}`, () => build(...args));
}

const builders = {
  bool: (value: boolean): ValueOf<"bool"> => ({ kind: "bool", value }),
  s8: small("s8"),
  s16: small("s16"),
  s32: small("s32"),
  u8: small("u8"),
  u16: small("u16"),
  u32: small("u32"),
  s64: (value: bigint) => wide("s64", value),
  u64: (value: bigint) => wide("u64", value),
  f32: (value: number) => float("f32", value),
  f64: (value: number) => float("f64", value),
  char: (value: string): ValueOf<"char"> => {
    if (typeof value !== "string" || !isOneScalar(value)) throw validationError("v.char", "a char is exactly one Unicode scalar value");
    return { kind: "char", value };
  },
  string: (value: string): ValueOf<"string"> => ({ kind: "string", value }),
  record: (...fields: SchemaValue[]): ValueOf<"record"> => ({ kind: "record", value: { fields } }),
  variant: (caseIndex: number, payload?: SchemaValue): ValueOf<"variant"> =>
    payload === undefined ? { kind: "variant", value: { case: caseIndex } } : { kind: "variant", value: { case: caseIndex, payload } },
  enum: (caseIndex: number): ValueOf<"enum"> => ({ kind: "enum", value: { case: caseIndex } }),
  flags: (...bits: boolean[]): ValueOf<"flags"> => ({ kind: "flags", value: { bits } }),
  tuple: (...elements: SchemaValue[]): ValueOf<"tuple"> => ({ kind: "tuple", value: { elements } }),
  list: (...elements: SchemaValue[]): ValueOf<"list"> => ({ kind: "list", value: { elements } }),
  fixedList: (...elements: SchemaValue[]): ValueOf<"fixed-list"> => ({ kind: "fixed-list", value: { elements } }),
  map: (...entries: [SchemaValue, SchemaValue][]): ValueOf<"map"> => ({ kind: "map", value: { entries } }),
  /** `null` is None. */
  option: (inner: SchemaValue | null): ValueOf<"option"> => ({ kind: "option", value: { inner } }),
  ok: (value: SchemaValue | null = null): ValueOf<"result"> => ({ kind: "result", value: { tag: "ok", value } }),
  err: (value: SchemaValue | null = null): ValueOf<"result"> => ({ kind: "result", value: { tag: "err", value } }),
  text: (text: string, language?: string): ValueOf<"text"> => ({
    kind: "text",
    value: language === undefined ? { text } : { text, language },
  }),
  binary: (bytes: Uint8Array | readonly number[], mimeType?: string): ValueOf<"binary"> => {
    const array = Array.from(bytes);
    return { kind: "binary", value: mimeType === undefined ? { bytes: array } : { bytes: array, mimeType } };
  },
  path: (path: string): ValueOf<"path"> => ({ kind: "path", value: { path } }),
  url: (url: string): ValueOf<"url"> => ({ kind: "url", value: { url } }),
  /** A `Date` (millisecond precision) or an RFC 3339 UTC string (up to nanoseconds). */
  datetime: (value: Date | string): ValueOf<"datetime"> => {
    const text = value instanceof Date ? (Number.isNaN(value.getTime()) ? "" : value.toISOString()) : value;
    const canonical = typeof text === "string" ? canonicalDatetime(text) : undefined;
    if (canonical === undefined) throw validationError("v.datetime", "not an RFC 3339 UTC timestamp");
    return { kind: "datetime", value: { value: canonical } };
  },
  duration: (nanoseconds: bigint): ValueOf<"duration"> => ({ kind: "duration", value: { nanoseconds: wide("s64", nanoseconds).value } }),
  quantity: (mantissa: bigint, scale: number, unit: string): ValueOf<"quantity"> => ({
    kind: "quantity",
    value: { mantissa: wide("s64", mantissa).value, scale, unit },
  }),
  union: (tag: string, body: SchemaValue): ValueOf<"union"> => ({ kind: "union", value: { tag, body } }),
  streamProvisional: (provisionalRef: string): ValueOf<"stream"> => {
    if (typeof provisionalRef !== "string" || !isUuidV4(provisionalRef))
      throw validationError("v.streamProvisional", "a provisional reference is a lower-case UUIDv4");
    return { kind: "stream", value: { provisionalRef } };
  },
  streamToken: (streamToken: string): ValueOf<"stream"> => ({ kind: "stream", value: { streamToken } }),
};

export const v: typeof builders = Object.fromEntries(
  Object.entries(builders).map(([name, build]) => [name, guarded(name, build as (...args: unknown[]) => unknown)]),
) as typeof builders;
