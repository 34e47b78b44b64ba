/**
 * @golem-stream/wire — the protocol's bytes, and nothing else. Every function
 * is pure: bytes in, data out; nothing here opens a socket.
 *
 * Start with the message codecs: `decodeClientMessage` and
 * `encodeServerMessage` (server side), `decodeServerMessage` and
 * `encodeClientMessage` (client side); `encodeMessage` encodes either
 * direction. Every failure is a `ProtocolError` with a stable `code`.
 *
 * The fast-path encoders the other golem-stream packages use are in
 * `@golem-stream/wire/internal` (internal.ts).
 */
export { decodeClientMessage, decodeServerMessage } from "./decode.js";
export { recoverAttemptId } from "./attempt-recovery.js";
export { encodeMessage, encodeClientMessage, encodeServerMessage, type EncodeOptions, type TextMessage } from "./encode.js";
export { BINARY_KINDS, type BinaryKind, type EnvelopeAllocator } from "./binary-envelope.js";
export { EnvelopePool } from "./envelope-pool.js";
export * from "./messages.js";
export {
  ProtocolError,
  isProtocolError,
  isErrorCode,
  defaultRetryable,
  httpStatusFor,
  closeCodeFor,
  ERROR_CODES,
  CLOSE_NORMAL,
  CLOSE_PROTOCOL_ERROR,
  CLOSE_MESSAGE_TOO_BIG,
  CLOSE_INTERNAL_ERROR,
  type ErrorCode,
  type ProtocolErrorOptions,
} from "./errors.js";
export { parseStrictJson, type StrictJsonOptions } from "./strict-json.js";
export { canonicalJson, type CanonicalJsonOptions } from "./canonical-json.js";
export { LIMITS, KiB, MiB, MAX_BINARY_MESSAGE_BYTES, U64_MAX, CHANNEL_MAX } from "./limits.js";
export { type JsonValue, type JsonObject, type JsonArray, type JsonPrimitive, isJsonObject, getMember } from "./json.js";
export { decodeUtf8, encodeUtf8, utf8ByteLength, isWellFormedText, compareCodePoints } from "./utf8.js";
export {
  BEARER_SUBPROTOCOL_PREFIX,
  MAX_BEARER_SUBPROTOCOL_BYTES,
  BROWSER_REFUSAL_CLOSE_BASE,
  encodeBearerSubprotocol,
  decodeBearerSubprotocol,
  isBearerToken,
} from "./browser-bearer.js";
