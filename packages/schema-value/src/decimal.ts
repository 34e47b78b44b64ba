/**
 * Canonical decimal strings (protocol section 2): syntax first, then range.
 * `-0`, a leading `+` and leading zeroes are never canonical.
 */
const UNSIGNED = /^(?:0|[1-9][0-9]*)$/;
const SIGNED = /^(?:0|-?[1-9][0-9]*)$/;

export const I64_MIN = -(1n << 63n);
export const I64_MAX = (1n << 63n) - 1n;
export const U64_MAX = (1n << 64n) - 1n;

/** The longest canonical string any 64-bit bound can have ("-9223372036854775808"). */
const MAX_DIGITS = 20;

/** Parses a canonical unsigned decimal in `[0, max]`, or returns undefined. */
export function parseUnsigned(text: unknown, max: bigint = U64_MAX): bigint | undefined {
  if (typeof text !== "string" || text.length > MAX_DIGITS || !UNSIGNED.test(text)) return undefined;
  const value = BigInt(text);
  return value <= max ? value : undefined;
}

/** Parses a canonical signed decimal in `[min, max]`, or returns undefined. */
export function parseSigned(text: unknown, min: bigint = I64_MIN, max: bigint = I64_MAX): bigint | undefined {
  if (typeof text !== "string" || text.length > MAX_DIGITS || !SIGNED.test(text)) return undefined;
  const value = BigInt(text);
  return value >= min && value <= max ? value : undefined;
}
