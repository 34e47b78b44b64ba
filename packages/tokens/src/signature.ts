/**
 * The token signature (protocol section 10.2):
 *
 *   HMAC-SHA256(key, ASCII("golem.agent-invocation.token.v1") || 0x00 ||
 *                    ASCII(kind word) || 0x00 || payload)
 *
 * HMAC's key schedule (hashing the padded key into the inner and outer
 * states) costs two SHA-256 blocks, and the constant domain prefix is the
 * same for every token of a kind. Both are done once per key and kind in
 * `PreparedHmac`; each token then only clones that state and hashes its
 * payload.
 */
import { _HMAC } from "@noble/hashes/hmac.js";
import { sha256, type _SHA256 } from "@noble/hashes/sha2.js";
import type { TokenKind } from "./types.js";

/** The signature domain string. */
export const SIGNATURE_DOMAIN = "golem.agent-invocation.token.v1";

/** HMAC-SHA256 output length. */
export const SIGNATURE_BYTES = 32;

/** The bytes signed before the payload: domain, 0x00, kind word, 0x00. */
export function signaturePrefix(kind: TokenKind): Uint8Array {
  const text = `${SIGNATURE_DOMAIN}\u0000${kind}\u0000`;
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  return out;
}

/** noble's HMAC state over SHA-256 (what `hmac.create(sha256, key)` builds). */
type HmacState = _HMAC<_SHA256>;

/** A keyed state handed from one PreparedHmac to the next (`extended`); not exported from the package. */
class KeyedState {
  constructor(readonly state: HmacState) {}
}

/**
 * HMAC-SHA256 under one key with a fixed message prefix, keyed once and
 * reused. With an empty prefix it is plain HMAC-SHA256 (the RFC 4231 tests
 * run through this class for that reason).
 *
 * Not re-entrant, by design: `macInto` runs to completion synchronously, so
 * one scratch state per instance is enough and no call allocates a state.
 */
export class PreparedHmac {
  readonly #keyed: HmacState;
  readonly #scratch: HmacState;

  constructor(key: Uint8Array | KeyedState, prefix: Uint8Array = new Uint8Array(0)) {
    this.#keyed = key instanceof KeyedState ? key.state : new _HMAC<_SHA256>(sha256, key);
    if (prefix.length > 0) this.#keyed.update(prefix);
    this.#scratch = this.#keyed.clone();
  }

  /** HMAC under the same key with `more` appended to the prefix; this one is unchanged. */
  extended(more: Uint8Array): PreparedHmac {
    return new PreparedHmac(new KeyedState(this.#keyed.clone()), more);
  }

  /**
   * Makes `target` (made by `extended` of this one) HMAC under the same key
   * with `more` appended to this one's prefix, in place: what `extended(more)`
   * returns, without allocating a state. This one is unchanged.
   */
  extendInto(more: Uint8Array, target: PreparedHmac): void {
    this.#keyed._cloneInto(target.#keyed);
    target.#keyed.update(more);
  }

  /** Writes HMAC(key, prefix || message) into `out[0..32)`. */
  macInto(message: Uint8Array, out: Uint8Array): void {
    // `_cloneInto(target)` is noble's way to reuse a keyed state: it copies
    // the inner and outer hash states into `target` without re-keying.
    this.#keyed._cloneInto(this.#scratch);
    this.#scratch.update(message);
    this.#scratch.digestInto(out);
  }

  mac(message: Uint8Array): Uint8Array {
    const out = new Uint8Array(SIGNATURE_BYTES);
    this.macInto(message, out);
    return out;
  }

  /** Never shows key-derived state. */
  toString(): string {
    return "PreparedHmac(<redacted>)";
  }

  toJSON(): string {
    return "<redacted>";
  }

  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return this.toString();
  }
}

/**
 * Compares two 32-byte values in time independent of where they differ, so
 * a forger cannot learn a valid signature byte by byte from timing.
 */
export function constantTimeEqual(a: Uint8Array, aStart: number, b: Uint8Array, length: number): boolean {
  let difference = 0;
  for (let i = 0; i < length; i++) difference |= a[aStart + i]! ^ b[i]!;
  return difference === 0;
}
