/**
 * One field value: its checks, its bytes, and back. Minting and verification
 * apply the same rules from opposite sides: a value minting refuses is a
 * value verification rejects, so a verified token always has the shape the
 * typed view promises.
 */
import { LIMITS, U64_MAX } from "@golem-stream/wire";
import { InvalidTokenError } from "./errors.js";
import type { FieldSpec } from "./field-table.js";

export const UUID_BYTES = 16;
export const U64_BYTES = 8;
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const SHA256_HEX_PATTERN = /^[0-9a-f]{64}$/;

/** A typed value checked and ready to write: text stays a string, UUIDs become their hex digits. */
export type PreparedValue =
  | { readonly wire: "text"; readonly text: string; readonly byteLength: number }
  | { readonly wire: "uuid"; readonly bytes: Uint8Array }
  | { readonly wire: "u64"; readonly value: bigint };

/**
 * Checks a typed value for minting. Returns the prepared value, or a
 * sentence saying what the field must be (never echoing the value).
 */
export function prepareFieldValue(spec: FieldSpec, value: unknown): PreparedValue | string {
  switch (spec.rule) {
    case "text":
    case "sha256-hex":
    case "key-id":
    case "idempotency-key": {
      if (typeof value !== "string") return "must be a string";
      const byteLength = wellFormedUtf8Length(value);
      if (byteLength < 0) return "must be well-formed Unicode text (no lone surrogates)";
      const problem = textRuleProblem(spec, value, byteLength);
      return problem ?? { wire: "text", text: value, byteLength };
    }
    case "uuid":
      if (typeof value !== "string" || !UUID_PATTERN.test(value)) {
        return "must be a lower-case hyphenated UUID string";
      }
      return { wire: "uuid", bytes: uuidBytes(value) };
    case "u64":
      if (typeof value !== "bigint" || value < 0n || value > U64_MAX) return "must be a bigint from 0 to 2^64-1";
      return { wire: "u64", value };
    case "enum": {
      const names = spec.names ?? [];
      const index = typeof value === "string" ? names.indexOf(value) : -1;
      if (index < 0) return `must be one of ${names.map((name) => JSON.stringify(name)).join(", ")}`;
      return { wire: "u64", value: BigInt(index + 1) };
    }
  }
}

/**
 * The UTF-8 byte length of `text`, or -1 when it holds a lone surrogate
 * (which has no UTF-8 encoding). One pass for both answers.
 */
function wellFormedUtf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit < 0xd800 || unit > 0xdfff) bytes += 3;
    else if (unit <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i++;
    } else return -1;
  }
  return bytes;
}

/** The 16 bytes of a UUID string already matched by UUID_PATTERN. */
function uuidBytes(value: string): Uint8Array {
  const out = new Uint8Array(UUID_BYTES);
  let o = 0;
  for (let i = 0; i < value.length; i += 2) {
    if (value.charCodeAt(i) === 0x2d) i++; // hyphen
    out[o++] = (hexDigit(value.charCodeAt(i)) << 4) | hexDigit(value.charCodeAt(i + 1));
  }
  return out;
}

function hexDigit(code: number): number {
  return code <= 0x39 ? code - 0x30 : code - 0x57; // 0-9, a-f (lower case only, checked by the pattern)
}

/** The rule-specific problem of well-formed text, or undefined. Shared by both directions. */
function textRuleProblem(spec: FieldSpec, value: string, byteLength: number): string | undefined {
  if (byteLength === 0) return "must not be empty";
  switch (spec.rule) {
    case "sha256-hex":
      return SHA256_HEX_PATTERN.test(value) ? undefined : "must be 64 lower-case hex digits";
    case "key-id":
      return byteLength <= LIMITS.maxKeyIdBytes ? undefined : `must be at most ${LIMITS.maxKeyIdBytes} UTF-8 bytes`;
    case "idempotency-key":
      return byteLength <= LIMITS.maxIdempotencyKeyBytes ? undefined : `must be at most ${LIMITS.maxIdempotencyKeyBytes} UTF-8 bytes`;
    default:
      return undefined;
  }
}

/** Bytes `value` occupies on the wire. */
export function wireLength(value: PreparedValue): number {
  return value.wire === "text" ? value.byteLength : value.wire === "uuid" ? UUID_BYTES : U64_BYTES;
}

/** Writes `value` at `pos` (the caller sized `out`); returns the position after it. */
export function writeFieldValue(value: PreparedValue, out: Uint8Array, view: DataView, pos: number): number {
  switch (value.wire) {
    case "text":
      return writeUtf8(value.text, out, pos);
    case "uuid":
      out.set(value.bytes, pos);
      return pos + UUID_BYTES;
    case "u64":
      view.setBigUint64(pos, value.value, false);
      return pos + U64_BYTES;
  }
}

/** Encodes well-formed `text` as UTF-8 into `out` at `pos`, without allocating. */
function writeUtf8(text: string, out: Uint8Array, pos: number): number {
  for (let i = 0; i < text.length; i++) {
    let code = text.charCodeAt(i);
    if (code < 0x80) {
      out[pos++] = code;
    } else if (code < 0x800) {
      out[pos++] = 0xc0 | (code >> 6);
      out[pos++] = 0x80 | (code & 0x3f);
    } else if (code >= 0xd800 && code <= 0xdbff) {
      // Callers checked well-formedness, so a high surrogate has its low half.
      code = 0x10000 + ((code - 0xd800) << 10) + (text.charCodeAt(++i) - 0xdc00);
      out[pos++] = 0xf0 | (code >> 18);
      out[pos++] = 0x80 | ((code >> 12) & 0x3f);
      out[pos++] = 0x80 | ((code >> 6) & 0x3f);
      out[pos++] = 0x80 | (code & 0x3f);
    } else {
      out[pos++] = 0xe0 | (code >> 12);
      out[pos++] = 0x80 | ((code >> 6) & 0x3f);
      out[pos++] = 0x80 | (code & 0x3f);
    }
  }
  return pos;
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Up to this many bytes, building the string in JavaScript beats a TextDecoder call. */
const SHORT_TEXT_BYTES = 64;

/**
 * Decodes `bytes[start..end)` as strict UTF-8, or returns undefined. Short
 * ASCII text, the common case for almost every field, is built directly:
 * a TextDecoder call costs more than the string.
 */
export function readUtf8(bytes: Uint8Array, start: number, end: number): string | undefined {
  if (end - start <= SHORT_TEXT_BYTES) {
    let text = "";
    for (let i = start; i < end; i++) {
      const byte = bytes[i]!;
      if (byte >= 0x80) return decodeStrictUtf8(bytes, start, end);
      text += String.fromCharCode(byte);
    }
    return text;
  }
  return decodeStrictUtf8(bytes, start, end);
}

function decodeStrictUtf8(bytes: Uint8Array, start: number, end: number): string | undefined {
  try {
    return strictUtf8.decode(bytes.subarray(start, end));
  } catch {
    return undefined;
  }
}

const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, "0"));

/**
 * Reads one field value of `spec` from `bytes[start..end)`. Throws
 * `InvalidTokenError` naming the field id: `bad-field-length`,
 * `empty-field`, `bad-utf8` or `bad-field-value`.
 */
export function readFieldValue(spec: FieldSpec, bytes: Uint8Array, view: DataView, start: number, end: number): string | bigint {
  const length = end - start;
  switch (spec.wire) {
    case "text": {
      if (length === 0) throw new InvalidTokenError("empty-field", spec.id);
      const text = readUtf8(bytes, start, end);
      if (text === undefined) throw new InvalidTokenError("bad-utf8", spec.id);
      // Plain text has no rule beyond non-empty UTF-8, checked above; skip the call for the common case.
      if (spec.rule !== "text" && textRuleProblem(spec, text, length) !== undefined) {
        throw new InvalidTokenError("bad-field-value", spec.id);
      }
      return text;
    }
    case "uuid": {
      if (length !== UUID_BYTES) throw new InvalidTokenError("bad-field-length", spec.id);
      let hex = "";
      for (let i = 0; i < UUID_BYTES; i++) {
        hex += HEX[bytes[start + i]!]!;
        if (i === 3 || i === 5 || i === 7 || i === 9) hex += "-";
      }
      return hex;
    }
    case "u64": {
      if (length !== U64_BYTES) throw new InvalidTokenError("bad-field-length", spec.id);
      const value = view.getBigUint64(start, false);
      if (spec.rule !== "enum") return value;
      const name = value >= 1n && value <= BigInt(spec.names?.length ?? 0) ? spec.names?.[Number(value) - 1] : undefined;
      if (name === undefined) throw new InvalidTokenError("bad-field-value", spec.id);
      return name;
    }
  }
}
