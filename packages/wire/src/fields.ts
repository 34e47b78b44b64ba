/**
 * Codecs for the scalar members of protocol messages: channels, canonical
 * decimals, UUIDs, opaque tokens, keys, MIME types, closed string sets and
 * the JSON shapes of SchemaValues. Each encodes by the same rule it decodes.
 */
import { type Codec, invalidAt, limitAt } from "./codec.js";
import { type ErrorCode, isErrorCode } from "./errors.js";
import { type JsonObject, type JsonValue, isJsonObject } from "./json.js";
import { CHANNEL_MAX, LIMITS, U64_MAX } from "./limits.js";
import type { SchemaGraphJson, SchemaValueJson } from "./messages.js";
import { utf8ByteLength } from "./utf8.js";

/** A codec whose wire and typed forms are the same JSON value, checked by `check`. */
function identity<T extends JsonValue>(check: (value: unknown, at: string) => T): Codec<T> {
  return { decode: check, encode: check };
}

/** Section 4.3: a JSON integer from 1 through 4294967295. */
export const channelCodec: Codec<number> = identity((value, at) => {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > CHANNEL_MAX) {
    throw invalidAt(at, `must be an integer from 1 through ${CHANNEL_MAX}`);
  }
  return value;
});

const CANONICAL_UNSIGNED = /^(?:0|[1-9][0-9]*)$/;
const U64_MAX_DIGITS = 20;

/**
 * Section 2: an unsigned 64-bit integer as a canonical decimal string
 * (`0|[1-9][0-9]*`), syntax checked before range. Typed form: `bigint`.
 */
export const u64Codec: Codec<bigint> = {
  decode(json, at) {
    if (typeof json !== "string") throw invalidAt(at, "must be a canonical decimal string");
    if (!CANONICAL_UNSIGNED.test(json)) throw invalidAt(at, "is not a canonical unsigned decimal");
    if (json.length > U64_MAX_DIGITS) throw invalidAt(at, "is larger than 2^64 - 1");
    const value = BigInt(json);
    if (value > U64_MAX) throw invalidAt(at, "is larger than 2^64 - 1");
    return value;
  },
  encode(value, at) {
    if (typeof value !== "bigint") throw invalidAt(at, "must be a bigint");
    if (value < 0n || value > U64_MAX) throw invalidAt(at, "must be from 0 through 2^64 - 1");
    return value.toString();
  },
};

export const booleanCodec: Codec<boolean> = identity((value, at) => {
  if (typeof value !== "boolean") throw invalidAt(at, "must be true or false");
  return value;
});

/** Any string: free text such as a rejection message. */
export const textCodec: Codec<string> = identity((value, at) => {
  if (typeof value !== "string") throw invalidAt(at, "must be a string");
  return value;
});

/** A non-empty string: a name that must identify something. */
export const nameCodec: Codec<string> = identity((value, at) => {
  if (typeof value !== "string") throw invalidAt(at, "must be a string");
  if (value.length === 0) throw invalidAt(at, "must not be empty");
  return value;
});

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** True for a lower-case hyphenated RFC 4122 UUID of version 4. */
export function isUuidV4(value: unknown): value is string {
  return typeof value === "string" && value.length === 36 && UUID_V4.test(value);
}

/** Section 2: attempt IDs, provisional references and phantom IDs. */
export const uuidV4Codec: Codec<string> = identity((value, at) => {
  if (!isUuidV4(value)) throw invalidAt(at, "must be a lower-case hyphenated UUIDv4");
  return value;
});

const VISIBLE_ASCII = /^[\x21-\x7e]+$/;

/**
 * An opaque token (section 10): 1..8192 visible ASCII characters. Whether it
 * is a well-formed, correctly signed `gai1_` token is the tokens package's
 * question; this layer only keeps what it forwards bounded and printable.
 */
export const tokenCodec: Codec<string> = identity((value, at) => {
  if (typeof value !== "string") throw invalidAt(at, "must be a token string");
  if (value.length === 0) throw invalidAt(at, "must not be empty");
  if (value.length > LIMITS.maxTokenBytes) throw limitAt(at, `is longer than ${LIMITS.maxTokenBytes} bytes`);
  if (!VISIBLE_ASCII.test(value)) throw invalidAt(at, "must contain only visible ASCII characters");
  return value;
});

/** Section 2: a non-empty UTF-8 string of at most 1 KiB. */
export const idempotencyKeyCodec: Codec<string> = identity((value, at) => {
  if (typeof value !== "string") throw invalidAt(at, "must be a string");
  if (value.length === 0) throw invalidAt(at, "must not be empty");
  if (utf8ByteLength(value) > LIMITS.maxIdempotencyKeyBytes) {
    throw limitAt(at, `is longer than ${LIMITS.maxIdempotencyKeyBytes} UTF-8 bytes`);
  }
  return value;
});

const MIME_TYPE = /^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+$/;

/** Section 3.1: the MIME type syntax. */
export const mimeTypeCodec: Codec<string> = identity((value, at) => {
  if (typeof value !== "string" || !MIME_TYPE.test(value)) throw invalidAt(at, "must be a MIME type such as text/plain");
  return value;
});

/** One of a closed set of strings. */
export function oneOfCodec<T extends string>(allowed: readonly T[]): Codec<T> {
  const set: ReadonlySet<string> = new Set(allowed);
  const list = allowed.join(", ");
  return identity((value, at) => {
    if (typeof value !== "string" || !set.has(value)) throw invalidAt(at, `must be one of ${list}`);
    return value as T;
  });
}

/** A public error code of the frozen v1 set (decisions section 5). */
export const errorCodeCodec: Codec<ErrorCode> = identity((value, at) => {
  if (!isErrorCode(value)) throw invalidAt(at, "must be a v1 error code");
  return value;
});

/**
 * Section 3: a SchemaValue node has exactly `kind` (a string) and `value`.
 * Only the outer shape is checked here; validating the node against its
 * schema is `@golem-stream/schema-value`'s job.
 */
export const schemaValueCodec: Codec<SchemaValueJson> = identity((value, at) => {
  if (!isSchemaValueShape(value)) {
    throw invalidAt(at, 'must be a SchemaValue: an object with exactly "kind" (a string) and "value"');
  }
  return value;
});

function isSchemaValueShape(value: unknown): value is SchemaValueJson & JsonObject {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const node = value as Readonly<Record<string, unknown>>;
  let members = 0;
  for (const name in node) {
    if (name !== "kind" && name !== "value") return false;
    members++;
  }
  return members === 2 && typeof node["kind"] === "string" && node["value"] !== undefined;
}

/** A result graph (decisions section 1): a JSON object, checked by schema-value. */
export const schemaGraphCodec: Codec<SchemaGraphJson> = identity((value, at) => {
  if (!isJsonObject(value as JsonValue)) throw invalidAt(at, "must be a SchemaGraph object");
  return value as SchemaGraphJson;
});

/** A member whose only legal value is `literal`. */
export function literalCodec<T extends string>(literal: T): Codec<T> {
  return identity((value, at) => {
    if (value !== literal) throw invalidAt(at, `must be ${JSON.stringify(literal)}`);
    return literal;
  });
}
