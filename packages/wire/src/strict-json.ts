/**
 * Strict JSON for protocol section 2: RFC 8259 grammar, plus the rules that
 * plain `JSON.parse` does not enforce. Bytes in, data out.
 *
 * The work is split in two so that the common case stays close to native
 * speed: a single linear pre-scan enforces what the grammar leaves open
 * (nesting depth, duplicate member names at any depth, lone surrogate
 * escapes) before anything is allocated, then the engine's own parser checks
 * the grammar and builds the value. The pre-scan never needs to understand
 * more than strings, brackets and number lexemes: whatever it lets through
 * that is not JSON, `JSON.parse` rejects.
 */
import { callerFault, ProtocolError } from "./errors.js";
import type { JsonValue } from "./json.js";
import { LIMITS } from "./limits.js";
import { isBytes, isWellFormedText, utf8ByteLength, utf8Text } from "./utf8.js";

export interface StrictJsonOptions {
  /** Largest accepted input in UTF-8 bytes. Default: 8 MiB (the text message limit). */
  readonly maxBytes?: number;
  /** Deepest accepted nesting of arrays and objects. Default: 128. */
  readonly maxDepth?: number;
  /** Names the document in error messages. Default: "message". */
  readonly what?: string;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;
const LOWER_E = 0x65;
const UPPER_E = 0x45;
const LOWER_U = 0x75;

/** A double holds at most 309 integer digits; longer lexemes may overflow to Infinity. */
const MAX_SAFE_LEXEME_LENGTH = 300;

/**
 * Parses one JSON document strictly. Throws only `ProtocolError`:
 * `limit-exceeded` when the input is larger than `maxBytes` (checked before
 * decoding) or nests deeper than `maxDepth`, `invalid-message` for everything
 * else (invalid UTF-8, invalid JSON, duplicate member names, lone surrogate
 * escapes, numbers that overflow a double).
 */
export function parseStrictJson(input: string | Uint8Array, options?: StrictJsonOptions): JsonValue {
  let bounds: { maxBytes: number; maxDepth: number; what: string };
  let text: string;
  try {
    bounds = readOptions(options);
    text = toText(input, bounds.maxBytes, bounds.what);
  } catch (error) {
    // Only the caller's own objects run code here (a getter of the options, a proxy as input).
    throw callerFault(error);
  }
  const { maxDepth, what } = bounds;
  const mayOverflow = prescan(text, maxDepth, what);
  let value: JsonValue;
  try {
    value = JSON.parse(text) as JsonValue;
  } catch (cause) {
    throw new ProtocolError("invalid-message", `${what} is not valid JSON`, { cause });
  }
  if (mayOverflow && !allNumbersFinite(value)) {
    throw new ProtocolError("invalid-message", `${what} has a number outside the range of a double`);
  }
  return value;
}

/**
 * Options come from the calling code, never from the peer, so a wrong one is
 * the caller's bug: `internal-error`, as in `@golem-stream/schema-value`.
 * It must never switch a bound off (a NaN `maxBytes` compares false with
 * every length), so each bound is checked rather than trusted.
 */
function readOptions(options: unknown): { maxBytes: number; maxDepth: number; what: string } {
  if (options === undefined || options === null) {
    return { maxBytes: LIMITS.maxTextMessageBytes, maxDepth: LIMITS.maxJsonDepth, what: "message" };
  }
  if (typeof options !== "object") throw badOption("options must be an object");
  const { maxBytes, maxDepth, what } = options as Record<string, unknown>;
  return {
    maxBytes: bound(maxBytes, LIMITS.maxTextMessageBytes, "maxBytes"),
    maxDepth: bound(maxDepth, LIMITS.maxJsonDepth, "maxDepth"),
    what: what === undefined ? "message" : typeof what === "string" ? what : badOptionThrow("what must be a string"),
  };
}

function bound(value: unknown, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw badOption(`${name} must be a non-negative integer`);
  }
  return value;
}

function badOption(problem: string): ProtocolError {
  return new ProtocolError("internal-error", `parseStrictJson option ${problem}`);
}

function badOptionThrow(problem: string): never {
  throw badOption(problem);
}

/** Bounds the input before any decoding, then yields well-formed text. */
export function toText(input: unknown, maxBytes: number, what: string): string {
  if (typeof input === "string") {
    // A UTF-16 unit never encodes to fewer than one UTF-8 byte, and never to
    // more than three, so the length alone often settles the bound.
    if (input.length > maxBytes) throw tooLarge(what, maxBytes);
    if (!isWellFormedText(input)) {
      throw new ProtocolError("invalid-message", `${what} is not valid UTF-8 text`);
    }
    if (input.length * 3 > maxBytes && utf8ByteLength(input) > maxBytes) throw tooLarge(what, maxBytes);
    return input;
  }
  if (isBytes(input)) {
    if (input.length > maxBytes) throw tooLarge(what, maxBytes);
    return utf8Text(input, what);
  }
  throw new ProtocolError("invalid-message", `${what} must be a string or a Uint8Array`);
}

function tooLarge(what: string, maxBytes: number): ProtocolError {
  return new ProtocolError("limit-exceeded", `${what} is larger than ${maxBytes} bytes`);
}

/** Objects with more members than this track their names in a `Set` instead of by position. */
const SMALL_OBJECT_MEMBERS = 16;

/**
 * One open container. Frames are reused level by level, so a document
 * allocates at most one per nesting level rather than one per container.
 *
 * An object remembers its member names. While it is small (a protocol
 * object has a handful of members) and its names have no escapes, it keeps
 * only their positions in the text and compares names in place: distinct
 * names usually differ in length, so the check rarely reads a character and
 * never allocates. Past that it keeps the names themselves in a `Set`.
 */
class Frame {
  isObject = false;
  expectName = false;
  private count = 0;
  private readonly starts = new Int32Array(SMALL_OBJECT_MEMBERS);
  private readonly ends = new Int32Array(SMALL_OBJECT_MEMBERS);
  private names: Set<string> | null = null;

  open(isObject: boolean): void {
    this.isObject = isObject;
    this.expectName = isObject;
    this.count = 0;
    this.names = null;
  }

  /** Records the unescaped name `text[start, end)`; false if the object already has it. */
  addRange(text: string, start: number, end: number): boolean {
    if (this.names === null && this.count < SMALL_OBJECT_MEMBERS) {
      const length = end - start;
      for (let k = 0; k < this.count; k++) {
        const other = this.starts[k] as number;
        if ((this.ends[k] as number) - other === length && sameText(text, other, start, length)) return false;
      }
      this.starts[this.count] = start;
      this.ends[this.count] = end;
      this.count++;
      return true;
    }
    return this.addName(text, text.slice(start, end));
  }

  /** Records a name given as a string (an escaped or a late one); false if already there. */
  addName(text: string, name: string): boolean {
    let names = this.names;
    if (names === null) {
      names = this.names = new Set();
      for (let k = 0; k < this.count; k++) names.add(text.slice(this.starts[k], this.ends[k]));
    }
    if (names.has(name)) return false;
    names.add(name);
    return true;
  }
}

/**
 * Frames shared by every parse: parsing is synchronous and calls no user
 * code, so one set serves all documents and a small message allocates none.
 */
const framePool: Frame[] = [];

function sameText(text: string, a: number, b: number, length: number): boolean {
  for (let k = 0; k < length; k++) if (text.charCodeAt(a + k) !== text.charCodeAt(b + k)) return false;
  return true;
}

/**
 * Enforces depth, duplicate names and surrogate pairing in one pass.
 * Returns whether a number might overflow a double (an exponent or a long
 * digit run), which is rare enough to check afterwards on the parsed value.
 */
function prescan(text: string, maxDepth: number, what: string): boolean {
  try {
    return scan(text, maxDepth, what);
  } finally {
    // Let go of the names of large objects: a pooled frame must not keep a document alive.
    for (const frame of framePool) frame.open(false);
  }
}

/** The single pass of `prescan`, over frames from the shared pool. */
function scan(text: string, maxDepth: number, what: string): boolean {
  const frames = framePool;
  let depth = 0;
  let top: Frame | null = null;
  let mayOverflow = false;
  const length = text.length;
  // The next backslash at or after the current string, found lazily: most
  // documents have none, and the search only ever moves forward, so it
  // costs one pass over the text in total.
  let nextBackslash = -1;
  let i = 0;
  while (i < length) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const start = i + 1;
      let end = text.indexOf('"', start);
      if (end < 0) break; // unterminated: JSON.parse reports it
      if (nextBackslash < start && nextBackslash !== length) {
        nextBackslash = text.indexOf("\\", start);
        if (nextBackslash < 0) nextBackslash = length;
      }
      const escaped = nextBackslash < end;
      if (escaped) {
        end = findStringEnd(text, start);
        if (end < 0) break;
        checkEscapes(text, start, end, what);
      }
      if (top !== null && top.expectName) {
        const added = escaped ? top.addName(text, unescapeName(text, start, end)) : top.addRange(text, start, end);
        if (!added) throw new ProtocolError("invalid-message", `${what} has a duplicate member name`);
        top.expectName = false;
      }
      i = end + 1;
      continue;
    }
    if (c === MINUS || (c >= DIGIT_0 && c <= DIGIT_9)) {
      // A number lexeme, or garbage that JSON.parse will reject. Letters of
      // true/false/null never get here, so an `e` below is an exponent.
      const start = i;
      for (i++; i < length; i++) {
        const d = text.charCodeAt(i);
        if (d >= DIGIT_0 && d <= DIGIT_9) continue;
        if (d === LOWER_E || d === UPPER_E) mayOverflow = true;
        else if (d !== DOT && d !== PLUS && d !== MINUS) break;
      }
      if (i - start > MAX_SAFE_LEXEME_LENGTH) mayOverflow = true;
      continue;
    }
    switch (c) {
      case OPEN_BRACE:
      case OPEN_BRACKET: {
        if (depth >= maxDepth) throw new ProtocolError("limit-exceeded", `${what} nests deeper than ${maxDepth}`);
        let frame = frames[depth];
        if (frame === undefined) frames.push((frame = new Frame()));
        frame.open(c === OPEN_BRACE);
        depth++;
        top = frame;
        break;
      }
      case CLOSE_BRACE:
      case CLOSE_BRACKET:
        if (depth > 0) depth--;
        top = depth > 0 ? (frames[depth - 1] as Frame) : null;
        break;
      case COMMA:
        if (top !== null && top.isObject) top.expectName = true;
        break;
      case COLON:
        if (top !== null) top.expectName = false;
        break;
    }
    i++;
  }
  return mayOverflow;
}

/** Index of the closing quote of a string whose body starts at `start`, or -1. */
export function findStringEnd(text: string, start: number): number {
  let i = start;
  for (;;) {
    const quote = text.indexOf('"', i);
    if (quote < 0) return -1;
    // The quote is escaped when an odd number of backslashes precede it.
    // Each backslash run is counted once, so the whole scan stays linear.
    let backslashes = 0;
    for (let j = quote - 1; j >= start && text.charCodeAt(j) === BACKSLASH; j--) backslashes++;
    if (backslashes % 2 === 0) return quote;
    i = quote + 1;
  }
}

/** Rejects `\u` escapes in `text[start, end)` that would produce a lone surrogate. */
function checkEscapes(text: string, start: number, end: number, what: string): void {
  let pendingHigh = false;
  for (let i = start; i < end; i++) {
    if (text.charCodeAt(i) !== BACKSLASH) {
      if (pendingHigh) throw loneSurrogate(what);
      continue;
    }
    if (text.charCodeAt(i + 1) !== LOWER_U) {
      if (pendingHigh) throw loneSurrogate(what);
      i++;
      continue;
    }
    const unit = Number.parseInt(text.slice(i + 2, i + 6), 16);
    i += 5;
    if (Number.isNaN(unit)) continue; // malformed escape: JSON.parse reports it
    const isHigh = unit >= 0xd800 && unit <= 0xdbff;
    const isLow = unit >= 0xdc00 && unit <= 0xdfff;
    if (pendingHigh) {
      if (!isLow) throw loneSurrogate(what);
      pendingHigh = false;
    } else if (isLow) {
      throw loneSurrogate(what);
    } else {
      pendingHigh = isHigh;
    }
  }
  if (pendingHigh) throw loneSurrogate(what);
}

function loneSurrogate(what: string): ProtocolError {
  return new ProtocolError("invalid-message", `${what} has an escaped lone surrogate`);
}

function unescapeName(text: string, start: number, end: number): string {
  try {
    return JSON.parse(text.slice(start - 1, end + 1)) as string;
  } catch (cause) {
    throw new ProtocolError("invalid-message", "member name is not a valid JSON string", { cause });
  }
}

function allNumbersFinite(value: JsonValue): boolean {
  if (typeof value === "number") return Number.isFinite(value);
  if (typeof value !== "object" || value === null) return true;
  if (Array.isArray(value)) return value.every(allNumbersFinite);
  return Object.values(value).every(allNumbersFinite);
}
