/**
 * Checks of the numbers an application passes as options, to the client and to its transports. A
 * wrong one is refused where it is given, naming the option, rather than turning a bound off
 * later: NaN compares false with every length; `ws` reads a negative or NaN `maxPayload` as no
 * limit and keeps only its low 32 bits; Node fires a timer of more than 2^31 - 1 ms at once.
 */
import { ClientError } from "./errors.js";

/** setTimeout's largest delay; beyond it Node fires at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** `value`, or `fallback` when it is undefined: a safe integer from `min` through `max`, or an invalid-argument error. */
export function integerOption(value: unknown, fallback: number, name: string, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min || value > max) {
    const rule =
      max === Number.MAX_SAFE_INTEGER
        ? min === 1
          ? "a positive integer"
          : `an integer of at least ${min}`
        : `an integer from ${min} through ${max}`;
    throw new ClientError("invalid-argument", `${name} must be ${rule}`);
  }
  return value;
}

/** A timer's delay in ms, 0 allowed. */
export function nonNegativeMs(value: unknown, fallback: number, name: string): number {
  return integerOption(value, fallback, name, 0, MAX_TIMER_MS);
}

/** A timer's delay in ms, at least 1. */
export function positiveMs(value: unknown, fallback: number, name: string): number {
  return integerOption(value, fallback, name, 1, MAX_TIMER_MS);
}

/** A count or a size, at least 1. */
export function positiveInteger(value: unknown, fallback: number, name: string): number {
  return integerOption(value, fallback, name, 1, Number.MAX_SAFE_INTEGER);
}

/** An options argument: undefined (every default) or an object, never null, a primitive or a function. */
export function optionsObject<T extends object>(options: T | undefined, name: string): Partial<T> {
  if (options === undefined) return {};
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new ClientError("invalid-argument", `${name} options must be an object`);
  }
  return options;
}

/**
 * A `signal` option: undefined or an `AbortSignal`. Anything else is refused before any I/O;
 * `fetch` would throw a TypeError for it only once the request was made.
 */
export function signalOption(signal: unknown): AbortSignal | undefined {
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw new ClientError("invalid-argument", "signal must be an AbortSignal");
  return signal;
}
