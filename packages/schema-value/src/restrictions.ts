/**
 * Restrictions applied after a value's shape is decoded (protocol 3.1),
 * with Golem's validator semantics as decisions-v1 section 1 states them.
 * Each check returns an error message, or undefined when the value passes;
 * the caller adds the structural path.
 */
import type {
  BinaryRestrictions,
  NumericBound,
  NumericRestrictions,
  PathSpec,
  QuantityBound,
  QuantitySpec,
  TextRestrictions,
  UrlRestrictions,
} from "./types.js";
import { clip } from "./errors.js";
import { listIncludes, listIncludesIgnoringCase } from "./lookup.js";
import { floatFromBits } from "./type-decode.js";

// Bounds are validated with the graph; their numeric form is cached per
// bound object so a list of 10k restricted numbers parses each bound once.
const boundCache = new WeakMap<NumericBound, bigint | number>();

function boundValue(bound: NumericBound): bigint | number {
  let value = boundCache.get(bound);
  if (value === undefined) {
    value = bound.kind === "float-bits" ? floatFromBits(BigInt(bound.value)) : BigInt(bound.value);
    boundCache.set(bound, value);
  }
  return value;
}

/**
 * `value` is a bigint for integers, a number for floats (NaN fails every
 * bound, as a NaN compares with nothing).
 */
export function checkNumeric(restrictions: NumericRestrictions | undefined, value: bigint | number): string | undefined {
  if (restrictions === undefined) return undefined;
  const { min, max } = restrictions;
  if (min !== undefined && !(value >= boundValue(min))) return `below the minimum ${describe(min)}`;
  if (max !== undefined && !(value <= boundValue(max))) return `above the maximum ${describe(max)}`;
  return undefined;
}

function describe(bound: NumericBound): string {
  return bound.kind === "float-bits" ? String(boundValue(bound)) : bound.value;
}

/** Counts Unicode scalar values (a surrogate pair is one). */
export function scalarLength(text: string): number {
  let length = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) i++;
    length++;
  }
  return length;
}

export function checkText(
  r: TextRestrictions,
  text: string,
  language: string | undefined,
  regex: (source: string) => RegExp,
): string | undefined {
  if (r.languages !== undefined && language !== undefined && !listIncludes(r.languages, language)) {
    return `language "${clip(language)}" is not allowed`;
  }
  if (r.minLength !== undefined || r.maxLength !== undefined) {
    const length = scalarLength(text);
    if (r.minLength !== undefined && length < r.minLength) return `has ${length} characters, fewer than ${r.minLength}`;
    if (r.maxLength !== undefined && length > r.maxLength) return `has ${length} characters, more than ${r.maxLength}`;
  }
  // Unanchored search, as Golem's `Regex::is_match`.
  if (r.regex !== undefined && !regex(r.regex).test(text)) return "does not match the required pattern";
  return undefined;
}

export function checkBinary(r: BinaryRestrictions, length: number, mimeType: string | undefined): string | undefined {
  if (r.mimeTypes !== undefined && mimeType !== undefined && !listIncludes(r.mimeTypes, mimeType)) {
    return `MIME type "${clip(mimeType)}" is not allowed`;
  }
  if (r.minBytes !== undefined && length < r.minBytes) return `has ${length} bytes, fewer than ${r.minBytes}`;
  if (r.maxBytes !== undefined && length > r.maxBytes) return `has ${length} bytes, more than ${r.maxBytes}`;
  return undefined;
}

/** Extension of the last `/`-separated segment, if it has a non-empty one. */
export function fileExtension(path: string): string | undefined {
  const name = path.slice(path.lastIndexOf("/") + 1);
  const dot = name.lastIndexOf(".");
  if (dot < 0 || dot === name.length - 1) return undefined;
  return name.slice(dot + 1);
}

/** `allowedMimeTypes` is not checkable from a path string; the agent host enforces it. */
export function checkPath(spec: PathSpec, path: string): string | undefined {
  if (path.length === 0) return "a path must not be empty";
  const extension = fileExtension(path);
  if (spec.allowedExtensions !== undefined && extension !== undefined && !listIncludes(spec.allowedExtensions, extension)) {
    return `extension "${clip(extension)}" is not allowed`;
  }
  return undefined;
}

export function checkUrl(r: UrlRestrictions, url: string): string | undefined {
  if (url.length === 0) return "a URL must not be empty";
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "is not a valid URL";
  }
  if (r.allowedSchemes !== undefined) {
    const scheme = parsed.protocol.slice(0, -1).toLowerCase();
    if (!listIncludesIgnoringCase(r.allowedSchemes, scheme)) return `scheme "${clip(scheme)}" is not allowed`;
  }
  if (r.allowedHosts !== undefined) {
    const host = parsed.hostname.toLowerCase();
    if (host.length === 0) return "a host is required";
    if (!listIncludesIgnoringCase(r.allowedHosts, host)) return `host "${clip(host)}" is not allowed`;
  }
  return undefined;
}

export function checkQuantity(spec: QuantitySpec, mantissa: bigint, scale: number, unit: string): string | undefined {
  const unitAllowed = spec.allowedSuffixes.length === 0 ? unit === spec.baseUnit : listIncludes(spec.allowedSuffixes, unit);
  if (!unitAllowed) return `unit "${clip(unit)}" is not allowed`;
  if (spec.min !== undefined && compareQuantity(mantissa, scale, spec.min) < 0) return "is below the minimum";
  if (spec.max !== undefined && compareQuantity(mantissa, scale, spec.max) > 0) return "is above the maximum";
  return undefined;
}

/**
 * Compares `mantissa x 10^-scale` with a bound exactly. Mantissas are i64
 * (at most 19 digits), so when the scales differ by more than 40 the
 * magnitudes already differ by orders of magnitude and the decimal exponent
 * decides; otherwise the shift is small and bigint arithmetic is exact. This
 * keeps the work bounded for any i32 scale.
 */
export function compareQuantity(mantissa: bigint, scale: number, bound: QuantityBound): number {
  const other = BigInt(bound.mantissa);
  const sign = (x: bigint) => (x > 0n ? 1 : x < 0n ? -1 : 0);
  const a = sign(mantissa);
  const b = sign(other);
  if (a !== b || a === 0) return Math.sign(a - b);
  if (Math.abs(scale - bound.scale) > 40) {
    // Decimal exponent of the leading digit: digits - 1 - scale.
    const exponent = (m: bigint, s: number) => (m < 0n ? -m : m).toString().length - s;
    const difference = exponent(mantissa, scale) - exponent(other, bound.scale);
    return a * Math.sign(difference);
  }
  const common = Math.max(scale, bound.scale);
  const left = mantissa * 10n ** BigInt(common - scale);
  const right = other * 10n ** BigInt(common - bound.scale);
  return left < right ? -1 : left > right ? 1 : 0;
}
