/**
 * Numbers whose JSON text is not an integer but whose double is one.
 *
 * A JSON number is read as the nearest double, which is what every number
 * member means (docs/protocol/json.md), but an integer-typed SchemaValue
 * payload is a "JSON integer" (decisions-v1 section 2): `0.99999999999999999`
 * and `1e-400` are numbers that are not integers, although the nearest
 * doubles, 1 and 0, are. Once `JSON.parse` has built the value, only the
 * double is left, so the strict parser notes here which numbers those were:
 * while it scans a document it asks `roundsToInteger` of each number with a
 * fraction or an exponent (nearly all of which a cheap look at their digits
 * settles), and when one does, `markRoundedIntegers` finds the array or
 * object holding it in the parsed value. `isRoundedInteger` then lets the
 * SchemaValue decoder refuse it where an integer belongs, while a float
 * payload keeps the double.
 *
 * Documents holding such a number are rare (no encoder writes one for an
 * integer); only they pay for the second walk, which is linear, like the scan.
 */
import type { JsonValue } from "./json.js";
import { findStringEnd } from "./json-string-end.js";

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;
const LOWER_E = 0x65;
const UPPER_E = 0x45;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;

/** Decimals of at most this many significant digits convert to a double and back unchanged. */
const EXACT_DIGITS = 15;

/**
 * Whether the number `text[start, end)`, with its point at `dot` (-1 when it
 * has none) and `exponent` when it has one, is not an integer while its
 * double is. Text that is not a JSON number answers false (`JSON.parse`
 * refuses it).
 */
export function roundsToInteger(text: string, start: number, dot: number, end: number, exponent: boolean): boolean {
  if (!exponent) {
    // Without an exponent, a number of at most 15 digits (16 characters) is a normal double whose
    // nearest 15-digit decimal is itself: if the double were an integer, so would the number be.
    if (dot < 0 || end - start <= EXACT_DIGITS + 1) return false;
    // A double near an integer n below 10^14 is within n x 2^-53 of it, so a fraction that a
    // double rounds away begins with 15 - (integer digits) zeros or nines; most fractions do not.
    const integerDigits = dot - start - (text.charCodeAt(start) === MINUS ? 1 : 0);
    if (integerDigits < EXACT_DIGITS && !fractionNearInteger(text, dot + 1, end, EXACT_DIGITS - integerDigits)) return false;
  }
  return !denotesInteger(text, start, end) && Number.isInteger(Number(text.slice(start, end)));
}

function isDigit(c: number): boolean {
  return c >= DIGIT_0 && c <= DIGIT_9;
}

/** Whether the first `count` digits from `from` are all 0 or all 9 (and there are that many). */
function fractionNearInteger(text: string, from: number, end: number, count: number): boolean {
  if (from + count > end) return false;
  const first = text.charCodeAt(from);
  if (first !== DIGIT_0 && first !== DIGIT_9) return false;
  for (let i = from + 1; i < from + count; i++) if (text.charCodeAt(i) !== first) return false;
  return true;
}

/** Whether the decimal value of the JSON number `text[start, end)` is an integer (exactly, digit by digit). */
export function denotesInteger(text: string, start: number, end: number): boolean {
  let i = start;
  if (text.charCodeAt(i) === MINUS) i++;
  // The digits before the exponent: how many follow the point, how many zeros end them, any non-zero.
  let fractionDigits = 0;
  let trailingZeros = 0;
  let nonZero = false;
  let inFraction = false;
  for (; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c === DOT) {
      inFraction = true;
      continue;
    }
    if (!isDigit(c)) break;
    if (inFraction) fractionDigits++;
    if (c === DIGIT_0) trailingZeros++;
    else {
      trailingZeros = 0;
      nonZero = true;
    }
  }
  if (!nonZero) return true;
  let exponent = 0;
  if (i < end) {
    i++; // e or E
    const sign = text.charCodeAt(i) === MINUS ? -1 : 1;
    if (text.charCodeAt(i) === MINUS || text.charCodeAt(i) === PLUS) i++;
    // Capped far beyond any digit count an 8 MiB document can hold, so the sum below stays exact.
    for (; i < end; i++) exponent = Math.min(exponent * 10 + (text.charCodeAt(i) - DIGIT_0), 1e12);
    exponent *= sign;
  }
  // The value is (digits without their trailing zeros) x 10^(exponent - fractionDigits + trailingZeros).
  return exponent - fractionDigits + trailingZeros >= 0;
}

/** Arrays and objects holding such numbers, with the member name or index of each and its double. */
const marks = new WeakMap<object, Map<string | number, number>>();
/** Whether any document ever held one: until then a query costs one comparison. */
let anyMarked = false;

/**
 * Finds, in `root` (what `JSON.parse` made of `text`), the array or object
 * holding each number that starts at one of `starts` (ascending positions in
 * `text`, each the start of a number lexeme) and marks it there. `text` is
 * valid JSON; the walk follows its brackets, member names and commas.
 */
export function markRoundedIntegers(text: string, root: JsonValue, starts: readonly number[]): void {
  const holders: (JsonValue[] | { [name: string]: JsonValue })[] = [];
  const keys: (string | number)[] = [];
  let expectName = false;
  let next = 0;
  for (let i = 0; i < text.length && next < starts.length;) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = findStringEnd(text, i + 1);
      if (expectName) {
        keys[keys.length - 1] = memberName(text, i + 1, end);
        expectName = false;
      }
      i = end + 1;
      continue;
    }
    if (c === MINUS || isDigit(c)) {
      const start = i;
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (!isDigit(d) && d !== DOT && d !== LOWER_E && d !== UPPER_E && d !== PLUS && d !== MINUS) break;
      }
      if (start === starts[next]) {
        next++;
        const holder = holders[holders.length - 1];
        const key = keys[keys.length - 1] as string | number;
        if (holder !== undefined) mark(holder, key, (holder as Record<string | number, JsonValue>)[key] as number);
      }
      continue;
    }
    switch (c) {
      case OPEN_BRACE:
      case OPEN_BRACKET: {
        const parent = holders[holders.length - 1];
        const child =
          parent === undefined ? root : (parent as Record<string | number, JsonValue>)[keys[keys.length - 1] as string | number];
        holders.push(child as JsonValue[] | { [name: string]: JsonValue });
        keys.push(c === OPEN_BRACKET ? 0 : "");
        expectName = c === OPEN_BRACE;
        break;
      }
      case CLOSE_BRACE:
      case CLOSE_BRACKET:
        holders.pop();
        keys.pop();
        expectName = false; // after `{}`, no name came to clear it
        break;
      case COMMA:
        if (Array.isArray(holders[holders.length - 1])) keys[keys.length - 1] = (keys[keys.length - 1] as number) + 1;
        else expectName = true;
        break;
    }
    i++;
  }
}

/** The member name whose text is `text[start, end)`, unescaped when it holds an escape. */
function memberName(text: string, start: number, end: number): string {
  for (let i = start; i < end; i++) if (text.charCodeAt(i) === BACKSLASH) return JSON.parse(text.slice(start - 1, end + 1)) as string;
  return text.slice(start, end);
}

function mark(holder: object, key: string | number, value: number): void {
  let members = marks.get(holder);
  if (members === undefined) marks.set(holder, (members = new Map()));
  members.set(key, value);
  anyMarked = true;
}

/**
 * Whether `holder[key]`, a number, was parsed by the strict parser from text
 * that is not an integer although its double is (`0.99999999999999999`,
 * `1e-400`). For the SchemaValue decoder, where a payload must be a JSON
 * integer: true only for the number as it was parsed, so a value a caller
 * puts in its place later is not taken for it.
 */
export function isRoundedInteger(holder: object, key: string | number, value: number): boolean {
  return anyMarked && marks.get(holder)?.get(key) === value;
}
