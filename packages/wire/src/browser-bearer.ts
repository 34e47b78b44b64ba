/**
 * The browser extension's bytes (docs/protocol/browser.md), outside the
 * frozen v1 protocol: a browser cannot set `Authorization` on a WebSocket,
 * so it offers its bearer token as one extra `Sec-WebSocket-Protocol` entry,
 * `golem-stream.bearer.<base64url of the token>`, beside
 * `golem.agent-invocation.v1`. A server that opted in reads the token from
 * that entry and never selects (echoes) it.
 *
 * A browser cannot read the HTTP status of a refused handshake either, so such
 * a server completes the upgrade of a refused browser request and closes at
 * once with `BROWSER_REFUSAL_CLOSE_BASE + HTTP status` and the error code as
 * the close reason.
 */
import { ProtocolError } from "./errors.js";

/** What a bearer entry starts with; the base64url of the token follows. */
export const BEARER_SUBPROTOCOL_PREFIX = "golem-stream.bearer.";

/**
 * Longest entry accepted, prefix included (16 KiB, the bound on an
 * `Authorization` header); longer ones are not read at all.
 */
export const MAX_BEARER_SUBPROTOCOL_BYTES = 16 * 1024;

/** A refused browser handshake closes with this plus the HTTP status (4401, 4403, 4503 …). */
export const BROWSER_REFUSAL_CLOSE_BASE = 4000;

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const VALUES = new Map([...ALPHABET].map((char, index) => [char, index]));

const BEARER_TOKEN = /^[\x21-\x7e]+$/;

/**
 * Whether `token` can be a bearer token: 1..n visible ASCII characters, as in
 * `Authorization: Bearer <token>` (and so in the browser's subprotocol entry).
 * Anything else, a string with a line end or a space included, is false.
 */
export function isBearerToken(token: unknown): token is string {
  return typeof token === "string" && BEARER_TOKEN.test(token);
}

/**
 * `golem-stream.bearer.<base64url>` for a token of visible ASCII; undefined
 * for anything else (such a token could not travel in `Authorization` either)
 * or for a token whose entry would be longer than 16 KiB. A token that is not
 * a string is the caller's bug: `ProtocolError` `internal-error`.
 */
export function encodeBearerSubprotocol(token: string): string | undefined {
  if (typeof token !== "string") throw notAString("token");
  // The entry's length follows from the token's (unpadded base64url of one byte per character):
  // refused before any character is read, so a huge token costs nothing.
  if (BEARER_SUBPROTOCOL_PREFIX.length + Math.ceil((token.length * 4) / 3) > MAX_BEARER_SUBPROTOCOL_BYTES) return undefined;
  if (!isBearerToken(token)) return undefined;
  let out = BEARER_SUBPROTOCOL_PREFIX;
  for (let at = 0; at < token.length; at += 3) {
    const a = token.charCodeAt(at);
    const b = at + 1 < token.length ? token.charCodeAt(at + 1) : -1;
    const c = at + 2 < token.length ? token.charCodeAt(at + 2) : -1;
    out += ALPHABET[a >> 2]!;
    out += ALPHABET[((a & 3) << 4) | (b < 0 ? 0 : b >> 4)]!;
    if (b >= 0) out += ALPHABET[((b & 15) << 2) | (c < 0 ? 0 : c >> 6)]!;
    if (c >= 0) out += ALPHABET[c & 63]!;
  }
  return out;
}

/**
 * The token of one offered entry, or undefined when the entry is not a bearer
 * entry, is too long, or is not canonical unpadded base64url of visible ASCII.
 * Strict, so that one token has exactly one spelling. An entry that is not a
 * string (a header is split into strings) is the caller's bug: `internal-error`.
 */
export function decodeBearerSubprotocol(entry: string): string | undefined {
  if (typeof entry !== "string") throw notAString("entry");
  if (!entry.startsWith(BEARER_SUBPROTOCOL_PREFIX) || entry.length > MAX_BEARER_SUBPROTOCOL_BYTES) return undefined;
  const text = entry.slice(BEARER_SUBPROTOCOL_PREFIX.length);
  if (text.length === 0 || text.length % 4 === 1) return undefined;
  let token = "";
  let bits = 0;
  let buffered = 0;
  for (const char of text) {
    const value = VALUES.get(char);
    if (value === undefined) return undefined;
    bits = (bits << 6) | value;
    buffered += 6;
    if (buffered >= 8) {
      buffered -= 8;
      const byte = (bits >> buffered) & 0xff;
      if (byte < 0x21 || byte > 0x7e) return undefined;
      token += String.fromCharCode(byte);
    }
    bits &= (1 << buffered) - 1;
  }
  // Leftover bits must be zero: otherwise two spellings would decode to one token.
  return bits === 0 ? token : undefined;
}

function notAString(name: string): ProtocolError {
  return new ProtocolError("internal-error", `the bearer subprotocol ${name} must be a string`, { path: name });
}
