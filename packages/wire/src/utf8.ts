/**
 * UTF-8 helpers that never accept ill-formed text. Pure functions; no Node
 * APIs, so the codecs also run in browsers.
 */
import { ProtocolError, wrongArgument } from "./errors.js";

const strictDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const encoder = new TextEncoder();
const NON_ASCII = /[^\x00-\x7f]/;

/**
 * Decodes UTF-8, rejecting invalid sequences, overlongs and encoded surrogates. A BOM is kept as U+FEFF.
 * Anything but a `Uint8Array` is not UTF-8 bytes (`invalid-message`, as a decoder says of data that is
 * neither text nor bytes); a `what` that is not a string is the caller's bug (`internal-error`), as a
 * wrong-typed argument of every helper here is.
 */
export function decodeUtf8(bytes: Uint8Array, what = "message"): string {
  if (typeof what !== "string") throw wrongArgument("decodeUtf8", "what", "a string");
  if (!isBytes(bytes)) throw new ProtocolError("invalid-message", `${what} must be a Uint8Array`);
  return utf8Text(bytes, what);
}

/** `decodeUtf8` for the package's own callers, which checked both arguments already. */
export function utf8Text(bytes: Uint8Array, what: string): string {
  try {
    return strictDecoder.decode(bytes);
  } catch (cause) {
    throw new ProtocolError("invalid-message", `${what} is not valid UTF-8`, { cause });
  }
}

/**
 * True for a `Uint8Array` (a `Buffer` included). `ArrayBuffer.isView` asks
 * first because it reads an internal slot: a proxy of the caller's posing as
 * bytes is refused without running its traps, which `instanceof` would.
 */
export function isBytes(value: unknown): value is Uint8Array {
  return ArrayBuffer.isView(value) && value instanceof Uint8Array;
}

export function encodeUtf8(text: string): Uint8Array {
  if (typeof text !== "string") throw wrongArgument("encodeUtf8", "text", "a string");
  return encoder.encode(text);
}

/**
 * `String.prototype.isWellFormed` (ES2024, Node 20): native, and for a
 * string the engine stores one byte per character it costs nothing at all.
 * Older runtimes use the loop below, which gives the same answers.
 */
const nativeIsWellFormed = (String.prototype as { readonly isWellFormed?: (this: string) => boolean }).isWellFormed;

/** True when `text` has no lone surrogate, so it encodes to UTF-8 losslessly. */
export function isWellFormedText(text: string): boolean {
  if (typeof text !== "string") throw wrongArgument("isWellFormedText", "text", "a string");
  if (nativeIsWellFormed !== undefined) return nativeIsWellFormed.call(text);
  return isWellFormedLoop(text);
}

/** The portable check; exported for the test that holds it to the native one. */
export function isWellFormedLoop(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0xd800 || unit > 0xdfff) continue;
    if (unit > 0xdbff) return false;
    const next = text.charCodeAt(i + 1);
    if (!(next >= 0xdc00 && next <= 0xdfff)) return false;
    i++;
  }
  return true;
}

/**
 * The UTF-8 byte length of well-formed `text`, computed without allocating.
 * Lone surrogates count 3 bytes, as their replacement character would.
 */
export function utf8ByteLength(text: string): number {
  if (typeof text !== "string") throw wrongArgument("utf8ByteLength", "text", "a string");
  // Protocol text is mostly ASCII: a native search skips the ASCII prefix,
  // one byte per character, and the loop counts only from the first other one.
  const first = text.search(NON_ASCII);
  if (first < 0) return text.length;
  let bytes = first;
  for (let i = first; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/** Compares two strings by Unicode code point (not UTF-16 code unit). */
export function compareCodePoints(a: string, b: string): number {
  if (typeof a !== "string" || typeof b !== "string")
    throw wrongArgument("compareCodePoints", typeof a !== "string" ? "a" : "b", "a string");
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // Surrogates (D800-DFFF) encode code points above U+FFFF, which sort after
    // every BMP unit, including E000-FFFF that compares higher as a code unit.
    const xHigh = x >= 0xd800 && x <= 0xdfff;
    const yHigh = y >= 0xd800 && y <= 0xdfff;
    if (xHigh !== yHigh) return xHigh ? 1 : -1;
    return x - y;
  }
  return a.length - b.length;
}
