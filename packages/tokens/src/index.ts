/**
 * @golem-stream/tokens — the protocol's opaque `gai1_` tokens (section 10).
 *
 *   const keyring = Keyring.fromJSON(await readFile("keyring.json", "utf8"));
 *   const token = mintToken("session", fields, keyring);
 *   const { fields, keyId } = verifyToken(token, "session", keyring); // or throws InvalidTokenError
 */
export { mintToken, verifyToken, inspectToken, streamTokenKeyId, refreshedSessionFields, type MintOptions } from "./tokens.js";
export { cursorMinter, type CursorMinter, type CursorStreamFields } from "./cursor-minter.js";
export { Keyring, KEYRING_FILE_VERSIONS, KEYRING_LIMITS, type KeyRole, type KeyringInit, type KeyringKeyInit } from "./keyring.js";
export {
  InvalidTokenError,
  isInvalidTokenError,
  TokenTooLongError,
  INVALID_TOKEN_REASONS,
  INVALID_TOKEN_MESSAGE,
  type InvalidTokenReason,
} from "./errors.js";
export { assertTokenIdentity, type ExpectedTokenIdentity } from "./identity.js";
export { sha256Hex } from "./sha256.js";
export { TOKEN_PREFIX } from "./payload.js";
export { textFieldBudget } from "./text-budget.js";
export { SIGNATURE_DOMAIN } from "./signature.js";
export {
  TOKEN_KINDS,
  type TokenKind,
  type TokenFields,
  type TokenFieldsByKind,
  type CommonTokenFields,
  type SessionTokenFields,
  type StreamTokenFields,
  type CursorTokenFields,
  type StreamDirection,
  type CursorEvent,
  type VerifiedToken,
  type InspectedToken,
} from "./types.js";
// The wire types in this package's signatures (InvalidTokenError is a ProtocolError).
export type { ProtocolError, ProtocolErrorOptions, ErrorCode, JsonValue, JsonObject, JsonArray, JsonPrimitive } from "@golem-stream/wire";
