/**
 * Scalar syntax of the native form (decisions-v1 section 2) and the
 * canonical forms the decoder normalizes to. Pure functions.
 */

/** Range of each 32-bit-or-narrower integer kind carried as a JSON number. */
export const SMALL_INTEGER_RANGES = {
  s8: [-128, 127],
  s16: [-32768, 32767],
  s32: [-2147483648, 2147483647],
  u8: [0, 255],
  u16: [0, 65535],
  u32: [0, 4294967295],
} as const;

/** Schema width in bytes, charged for integer and float payloads (section 12). */
export const NUMERIC_WIDTH = { s8: 1, u8: 1, s16: 2, u16: 2, s32: 4, u32: 4, f32: 4, s64: 8, u64: 8, f64: 8 } as const;

export const EXCEPTIONAL_FLOATS: ReadonlySet<string> = new Set(["NaN", "Infinity", "-Infinity"]);

/**
 * The canonical JSON number of an f32: the shortest decimal that rounds to
 * the same f32; of two, the closer one; of two equally close, the one whose
 * last digit is even (as ryu, and so serde_json, write an f32, and as
 * ECMAScript writes a double). As a JS number. A value that is not finite as
 * f32 returns undefined. `-0` is kept (it is a distinct f32).
 */
export function canonicalF32(value: number): number | undefined {
  const single = Math.fround(value);
  if (!Number.isFinite(single)) return undefined;
  if (single === 0) return single;
  const magnitude = Math.abs(single);
  f32View.setFloat32(0, magnitude);
  const bits = f32View.getUint32(0);
  // At a power of two (above the smallest normal) the gap to the f32 below is half the gap above,
  // so the decimals that round to it are not centred on it.
  const lopsided = (bits & 0x7fffff) === 0 && bits >>> 23 > 1;
  const halfwayPossible = mayBeHalfway(magnitude);
  for (let precision = 1; precision <= 9; precision++) {
    // The nearest decimal of this many digits (of two equally near, the larger).
    const text = magnitude.toExponential(precision - 1);
    const nearest = Number(text);
    const nearestFits = Math.fround(nearest) === magnitude;
    if (nearestFits && !halfwayPossible) return single < 0 ? -nearest : nearest;
    // The next decimal on the other side of the value can fit only when the nearest fits too (and the
    // value may lie halfway between them), or when the nearest is just outside a lopsided interval on
    // its narrow side: 2^-96 is 1.2621775e-29, not 1.2621774e-29.
    if (!nearestFits && !lopsided) continue;
    const exponentAt = text.indexOf("e");
    const digits = Number(text.slice(0, exponentAt).replace(".", ""));
    const exponent = Number(text.slice(exponentAt + 1)) - precision + 1;
    const otherDigits = nearest < magnitude ? digits + 1 : digits - 1;
    const other = Number(`${otherDigits}e${exponent}`);
    const otherFits = Math.fround(other) === magnitude;
    // Both fit and the value lies halfway between them: the even one (2097152.25 is 2097152.2).
    if (nearestFits && otherFits && digits % 2 === 1 && isHalfway(bits, Math.min(digits, otherDigits), exponent)) {
      return single < 0 ? -other : other;
    }
    if (nearestFits) return single < 0 ? -nearest : nearest;
    if (otherFits) return single < 0 ? -other : other;
  }
  return single; // unreachable: 9 significant digits always round-trip an f32
}

const f32View = new DataView(new ArrayBuffer(4));

/**
 * Whether a positive f32 could lie exactly halfway between two decimals of
 * at most 9 digits: then it is (2n + 1) / 2 x 10^k with 2n + 1 < 2 x 10^9,
 * which for a value that is not an integer (an integer f32 never does) needs
 * k >= -13, so 2^14 times the value is an integer. Most values are not.
 */
function mayBeHalfway(magnitude: number): boolean {
  return !Number.isInteger(magnitude) && Number.isInteger(magnitude * 16384);
}

/** Whether the positive f32 with these bits is exactly (low + 1/2) x 10^exponent. Exact, in bigint. */
function isHalfway(bits: number, low: number, exponent: number): boolean {
  const biased = bits >>> 23;
  const fraction = bits & 0x7fffff;
  // The f32 is mantissa x 2^power.
  const mantissa = BigInt(biased === 0 ? fraction : fraction | 0x800000);
  const power = (biased === 0 ? 1 : biased) - 150;
  // 2 x mantissa x 2^power = (2 x low + 1) x 10^exponent, both sides scaled to integers.
  let left = 2n * mantissa;
  let right = BigInt(2 * low + 1);
  if (power >= 0) left <<= BigInt(power);
  else right <<= BigInt(-power);
  if (exponent >= 0) right *= 10n ** BigInt(exponent);
  else left *= 10n ** BigInt(-exponent);
  return left === right;
}

/** The f64 value of an f32/f64 payload, exceptional strings included. */
export function floatValue(payload: number | string): number {
  if (typeof payload === "number") return payload;
  return payload === "NaN" ? Number.NaN : payload === "Infinity" ? Infinity : -Infinity;
}

/** Exactly one Unicode scalar value (a lone surrogate is not one). */
export function isOneScalar(text: string): boolean {
  if (text.length === 1) {
    const unit = text.charCodeAt(0);
    return unit < 0xd800 || unit > 0xdfff;
  }
  if (text.length !== 2) return false;
  const high = text.charCodeAt(0);
  const low = text.charCodeAt(1);
  return high >= 0xd800 && high <= 0xdbff && low >= 0xdc00 && low <= 0xdfff;
}

const DATETIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?[Zz]$/;

/**
 * Parses an RFC 3339 UTC timestamp (`Z` offset only, up to nanosecond
 * precision, no leap second) and returns its canonical text: upper-case `T`
 * and `Z`, fraction without trailing zeroes, no fraction when it is zero.
 * Returns undefined for anything else.
 */
export function canonicalDatetime(text: string): string | undefined {
  const match = DATETIME.exec(text);
  if (match === null) return undefined;
  const [, y, mo, d, h, mi, s, fraction] = match;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) return undefined;
  const trimmed = (fraction ?? "").replace(/0+$/, "");
  return `${y}-${mo}-${d}T${h}:${mi}:${s}${trimmed.length > 0 ? `.${trimmed}` : ""}Z`;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** Protocol 3.1: MIME types are ASCII type/subtype tokens. */
const MIME_TYPE = /^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+$/;

export function isMimeType(text: string): boolean {
  return MIME_TYPE.test(text);
}

/** A lower-case RFC 4122 UUID of version 4 (protocol section 2). */
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

export function isUuidV4(text: string): boolean {
  return UUID_V4.test(text);
}

/**
 * A stable stream token as this layer sees it: non-empty visible ASCII, at
 * most `maxBytes`. Its signature is the tokens package's business.
 */
export function isTokenText(text: string, maxBytes: number): boolean {
  if (text.length === 0 || text.length > maxBytes) return false;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x21 || unit > 0x7e) return false;
  }
  return true;
}
