/**
 * Durations on the command line: a whole number and one unit, `90s`, `30m`,
 * `24h`, `7d` (or `ms`). Strict on purpose: `1.5h`, `1h30m`, a bare number
 * or a zero are refused rather than guessed, because a retention set wrong
 * silently loses sessions.
 */
const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** Milliseconds, or undefined if `text` is not a positive duration below 2^53 ms. */
export function parseDuration(text: string): number | undefined {
  const match = /^([1-9][0-9]{0,14})(ms|s|m|h|d)$/.exec(text);
  if (match === null) return undefined;
  const value = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  return Number.isSafeInteger(value) ? value : undefined;
}

/**
 * Whether `text` is a zero duration, where an option allows one (off, at once): `0` or a zero
 * in any unit, `0ms`, `0s`, … A zero does not need a unit, but one given is not an error.
 */
export function isZeroDuration(text: string): boolean {
  return /^0(ms|s|m|h|d)?$/.test(text);
}
