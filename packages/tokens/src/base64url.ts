/**
 * Strict base64url without padding (RFC 4648 section 5), the token's outer
 * encoding.
 *
 * Strictness is what makes the token text canonical: exactly one string
 * decodes to a given byte sequence, so a token's text can serve as its
 * identity (stream tokens are compared as text by clients).
 *
 * Two implementations with one contract. On Node, `Buffer`'s native codec is
 * about three times faster than any JavaScript loop, which matters because
 * it is a third of a token's cost; but its decoder is lenient (it skips
 * stray characters and accepts padding, the standard alphabet and non-zero
 * final bits), so its output is only accepted when re-encoding it gives back
 * the exact input. Elsewhere the portable functions below run; the tests
 * hold both to the same answers.
 */

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/** Maps a char code to its 6-bit value, or 0xff when the character is not in the alphabet. */
const DECODE_TABLE: Uint8Array = (() => {
  const table = new Uint8Array(128).fill(0xff);
  for (let i = 0; i < ALPHABET.length; i++) table[ALPHABET.charCodeAt(i)] = i;
  return table;
})();

const ENCODE_TABLE: readonly string[] = Array.from(ALPHABET);

/** Node's Buffer when present; the package also runs where it is not. */
const NodeBuffer: typeof Buffer | undefined = typeof globalThis.Buffer === "function" ? globalThis.Buffer : undefined;

export function encodeBase64Url(bytes: Uint8Array): string {
  if (NodeBuffer !== undefined) return NodeBuffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64url");
  return encodeBase64UrlPortable(bytes);
}

/**
 * An encoder of `bytes`' contents at the time of each call, for bytes that are
 * rewritten in place and encoded again and again (the cursor minter's): on
 * Node the `Buffer` view over them is made once, not per call.
 */
export function base64UrlEncoderOf(bytes: Uint8Array): () => string {
  if (NodeBuffer === undefined) return () => encodeBase64UrlPortable(bytes);
  const view = NodeBuffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return () => view.toString("base64url");
}

/**
 * Decodes `text.slice(start)` as strict unpadded base64url. Returns
 * `undefined` (never throws) on any character outside the alphabet,
 * including `=`, on an impossible length, and on non-zero unused bits in the
 * final character. The caller bounds `text.length` first: the output is
 * allocated once, from the length alone.
 */
export function decodeBase64Url(text: string, start = 0): Uint8Array | undefined {
  if (NodeBuffer === undefined) return decodeBase64UrlPortable(text, start);
  if (decodedBase64UrlLength(text.length - start) < 0) return undefined;
  const body = start === 0 ? text : text.slice(start);
  const bytes = NodeBuffer.from(body, "base64url");
  // The one check that makes the lenient native decoder strict.
  if (bytes.toString("base64url") !== body) return undefined;
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export function encodeBase64UrlPortable(bytes: Uint8Array): string {
  const table = ENCODE_TABLE;
  let out = "";
  const whole = bytes.length - (bytes.length % 3);
  let i = 0;
  for (; i < whole; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out += table[n >>> 18]! + table[(n >>> 12) & 63]! + table[(n >>> 6) & 63]! + table[n & 63]!;
  }
  const rest = bytes.length - whole;
  if (rest === 1) {
    const n = bytes[i]! << 16;
    out += table[n >>> 18]! + table[(n >>> 12) & 63]!;
  } else if (rest === 2) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8);
    out += table[n >>> 18]! + table[(n >>> 12) & 63]! + table[(n >>> 6) & 63]!;
  }
  return out;
}

/** The number of unpadded base64url characters `length` bytes encode to. */
export function encodedBase64UrlLength(length: number): number {
  return Math.ceil((length * 4) / 3);
}

/** The number of bytes `length` base64url characters decode to, or -1 for an impossible length (4n + 1). */
export function decodedBase64UrlLength(length: number): number {
  const rest = length % 4;
  if (rest === 1) return -1;
  return Math.floor(length / 4) * 3 + (rest === 0 ? 0 : rest - 1);
}

/** `decodeBase64Url` in plain JavaScript, for runtimes without `Buffer`. */
export function decodeBase64UrlPortable(text: string, start = 0): Uint8Array | undefined {
  const length = text.length - start;
  const size = decodedBase64UrlLength(length);
  if (size < 0) return undefined;
  const out = new Uint8Array(size);
  const table = DECODE_TABLE;
  let o = 0;
  let i = start;
  const wholeEnd = start + length - (length % 4);
  for (; i < wholeEnd; i += 4) {
    const a = sextet(table, text.charCodeAt(i));
    const b = sextet(table, text.charCodeAt(i + 1));
    const c = sextet(table, text.charCodeAt(i + 2));
    const d = sextet(table, text.charCodeAt(i + 3));
    // An invalid character maps to 0xff, which sets a bit above the 24 a
    // quartet can hold; checking once per quartet keeps the loop branch-light.
    const n = (a << 18) | (b << 12) | (c << 6) | d;
    if ((a | b | c | d) > 63) return undefined;
    out[o++] = n >>> 16;
    out[o++] = (n >>> 8) & 0xff;
    out[o++] = n & 0xff;
  }
  const rest = length % 4;
  if (rest === 2) {
    const a = sextet(table, text.charCodeAt(i));
    const b = sextet(table, text.charCodeAt(i + 1));
    // Two characters carry 12 bits for one byte: the low 4 bits must be zero.
    if ((a | b) > 63 || (b & 0x0f) !== 0) return undefined;
    out[o++] = (a << 2) | (b >>> 4);
  } else if (rest === 3) {
    const a = sextet(table, text.charCodeAt(i));
    const b = sextet(table, text.charCodeAt(i + 1));
    const c = sextet(table, text.charCodeAt(i + 2));
    // Three characters carry 18 bits for two bytes: the low 2 bits must be zero.
    if ((a | b | c) > 63 || (c & 0x03) !== 0) return undefined;
    const n = (a << 18) | (b << 12) | (c << 6);
    out[o++] = n >>> 16;
    out[o++] = (n >>> 8) & 0xff;
  }
  return out;
}

function sextet(table: Uint8Array, code: number): number {
  // Codes >= 128 (non-ASCII) fall outside the table: undefined becomes 0xff.
  return code < 128 ? table[code]! : 0xff;
}
