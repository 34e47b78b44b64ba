/**
 * The token's bytes (protocol section 10.1):
 *
 *   gai1_ base64url-no-pad( payload || HMAC-SHA256 signature (32 bytes) )
 *
 *   payload = u8 format-version (1) | u8 token-kind (1 session, 2 stream, 3 cursor)
 *           | u8 key-id-length (1..64) | key-id UTF-8
 *           | fields: u8 id | u32 big-endian length | bytes, ids strictly increasing
 *
 * Decoding is split in the order verification must check things: the
 * envelope (length, prefix, base64url) and header first, so the signature is
 * checked before any field is parsed; fields only after.
 */
import { LIMITS } from "@golem-stream/wire";
import { decodeBase64Url, decodedBase64UrlLength, encodeBase64Url, encodedBase64UrlLength } from "./base64url.js";
import { InvalidTokenError, TokenTooLongError } from "./errors.js";
import { FIELD_BY_ID, FIELD_TABLE, KIND_BYTE, kindOfByte } from "./field-table.js";
import { readFieldValue, readUtf8, wireLength, writeFieldValue, type PreparedValue } from "./field-values.js";
import { SIGNATURE_BYTES } from "./signature.js";
import type { TokenFields, TokenKind } from "./types.js";

export const TOKEN_PREFIX = "gai1_";
export const FORMAT_VERSION = 1;
/** version, kind, key-id length. */
export const HEADER_FIXED_BYTES = 3;
/** field id, u32 length. */
export const FIELD_HEADER_BYTES = 5;
/** The smallest decodable token: the fixed header, a one-byte key id, no fields, the signature. */
const MIN_DECODED_BYTES = HEADER_FIXED_BYTES + 1 + SIGNATURE_BYTES;
/** The largest decoded token the 8192-character limit allows. */
export const MAX_DECODED_BYTES = decodedBase64UrlLength(LIMITS.maxTokenBytes - TOKEN_PREFIX.length);

/** A field ready to write. */
export interface PreparedField {
  readonly id: number;
  readonly value: PreparedValue;
}

/**
 * Lays out `payload || room for the signature` in one allocation. The caller
 * writes the signature into the last 32 bytes, then encodes the whole.
 */
export function layoutPayload(kind: TokenKind, keyId: Uint8Array, fields: readonly PreparedField[]): Uint8Array {
  let size = HEADER_FIXED_BYTES + keyId.length + SIGNATURE_BYTES;
  for (const field of fields) size += FIELD_HEADER_BYTES + wireLength(field.value);
  // Verification rejects anything longer, so minting it would hand out a dead token.
  if (size > MAX_DECODED_BYTES) throw new TokenTooLongError(kind, TOKEN_PREFIX.length + encodedBase64UrlLength(size));
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  out[0] = FORMAT_VERSION;
  out[1] = KIND_BYTE[kind];
  out[2] = keyId.length;
  out.set(keyId, HEADER_FIXED_BYTES);
  let pos = HEADER_FIXED_BYTES + keyId.length;
  for (const field of fields) {
    out[pos] = field.id;
    view.setUint32(pos + 1, wireLength(field.value), false);
    pos = writeFieldValue(field.value, out, view, pos + FIELD_HEADER_BYTES);
  }
  return out;
}

export function tokenText(signedBytes: Uint8Array): string {
  return TOKEN_PREFIX + encodeBase64Url(signedBytes);
}

/**
 * Checks the outer form and decodes it: `payload || signature` bytes.
 * The length is bounded before anything is decoded or allocated.
 */
export function decodeEnvelope(token: unknown): Uint8Array {
  if (typeof token !== "string") throw new InvalidTokenError("not-a-string");
  // A UTF-16 unit is at least one UTF-8 byte, so this bounds the byte length
  // too; any non-ASCII character fails the base64url alphabet below.
  if (token.length > LIMITS.maxTokenBytes) throw new InvalidTokenError("too-long");
  if (!token.startsWith(TOKEN_PREFIX)) throw new InvalidTokenError("bad-prefix");
  const bytes = decodeBase64Url(token, TOKEN_PREFIX.length);
  if (bytes === undefined) throw new InvalidTokenError("bad-base64");
  if (bytes.length < MIN_DECODED_BYTES) throw new InvalidTokenError("too-short");
  return bytes;
}

/** The header of a decoded token. */
export interface TokenHeader {
  readonly kind: TokenKind;
  readonly keyId: string;
  /** Where the fields start. */
  readonly fieldsStart: number;
  /** Where the payload ends and the signature starts. */
  readonly payloadEnd: number;
}

/**
 * Reads version, kind and key id. With `expectedKind`, a token of another
 * kind is `wrong-kind` here, before any key is looked up.
 */
export function readHeader(bytes: Uint8Array, expectedKind: TokenKind | undefined): TokenHeader {
  const payloadEnd = bytes.length - SIGNATURE_BYTES;
  if (bytes[0] !== FORMAT_VERSION) throw new InvalidTokenError("bad-version");
  const kind = kindOfByte(bytes[1]!);
  if (kind === undefined) throw new InvalidTokenError("bad-kind");
  if (expectedKind !== undefined && kind !== expectedKind) throw new InvalidTokenError("wrong-kind");
  const keyIdLength = bytes[2]!;
  const fieldsStart = HEADER_FIXED_BYTES + keyIdLength;
  if (keyIdLength === 0 || keyIdLength > LIMITS.maxKeyIdBytes || fieldsStart > payloadEnd) {
    throw new InvalidTokenError("bad-key-id");
  }
  const keyId = readUtf8(bytes, HEADER_FIXED_BYTES, fieldsStart);
  if (keyId === undefined) throw new InvalidTokenError("bad-key-id");
  return { kind, keyId, fieldsStart, payloadEnd };
}

/**
 * Parses the fields of a `kind` token in `bytes[start..end)` into the typed
 * view. Checks, per field: header bounds, order, repetition, the id is one
 * of the kind's, value bounds, then the value itself; afterwards, that every
 * required field was present.
 */
export function readFields<K extends TokenKind>(kind: K, bytes: Uint8Array, start: number, end: number): TokenFields<K> {
  const byId = FIELD_BY_ID[kind];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const fields: Record<string, string | bigint> = {};
  let previousId = -1;
  let requiredSeen = 0;
  let pos = start;
  while (pos < end) {
    if (end - pos < FIELD_HEADER_BYTES) throw new InvalidTokenError("truncated-field");
    const id = bytes[pos]!;
    if (id < previousId) throw new InvalidTokenError("field-order", id);
    if (id === previousId) throw new InvalidTokenError("duplicate-field", id);
    const spec = byId[id];
    if (spec === undefined) throw new InvalidTokenError("unknown-field", id);
    const length = view.getUint32(pos + 1, false);
    pos += FIELD_HEADER_BYTES;
    if (length > end - pos) throw new InvalidTokenError("truncated-field", id);
    fields[spec.name] = readFieldValue(spec, bytes, view, pos, pos + length);
    if (!spec.optional) requiredSeen++;
    previousId = id;
    pos += length;
  }
  const specs = FIELD_TABLE[kind];
  if (requiredSeen !== requiredCount(kind)) {
    const missing = specs.find((spec) => !spec.optional && !(spec.name in fields));
    throw new InvalidTokenError("missing-field", missing?.id);
  }
  // The table, not the input, decided every member name and value type above.
  return fields as unknown as TokenFields<K>;
}

const REQUIRED_COUNT: Readonly<Record<TokenKind, number>> = {
  session: FIELD_TABLE.session.filter((spec) => !spec.optional).length,
  stream: FIELD_TABLE.stream.filter((spec) => !spec.optional).length,
  cursor: FIELD_TABLE.cursor.filter((spec) => !spec.optional).length,
};

function requiredCount(kind: TokenKind): number {
  return REQUIRED_COUNT[kind];
}
