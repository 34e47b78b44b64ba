/**
 * How this package fails.
 *
 * Hostile input (a token from the network) fails with `InvalidTokenError`:
 * public code `invalid-token`, one generic public message, and a closed
 * machine-readable `reason` for logs. Neither the message nor the reason ever
 * contains the token, a field value or key material, so the whole error is
 * safe to log and its `message` is safe to send to the peer.
 *
 * Programming and configuration mistakes (minting with malformed fields, a
 * malformed keyring file, a wrong-typed argument) fail with a plain
 * `ProtocolError("internal-error")`: they are faults of the server, never of
 * the peer, and `internal-error` is the code the peer would see for them.
 *
 * Well-formed fields too long together for the 8192-character token limit
 * fail with `TokenTooLongError` (`limit-exceeded`): their length may come
 * from a peer or an agent (a selector name, a stream's coordinate), so the
 * caller can refuse that request instead of failing as a fault.
 */
import { CLOSE_PROTOCOL_ERROR, LIMITS, ProtocolError } from "@golem-stream/wire";
import type { TokenKind } from "./types.js";

/**
 * Why a token was rejected, listed in the order verification reaches them
 * (the field reasons are checked field by field, and `missing-field` after
 * the last one; docs/protocol/tokens.md gives the exact order).
 * Stable: log pipelines and the golden vectors match on these strings.
 */
export const INVALID_TOKEN_REASONS = [
  /** The token is not a string. */
  "not-a-string",
  /** Longer than 8192 characters; checked before anything is decoded. */
  "too-long",
  /** Does not start with `gai1_`. */
  "bad-prefix",
  /** Not strict base64url: padding, a stray character, an impossible length or non-zero final bits. */
  "bad-base64",
  /** Decodes to fewer bytes than the smallest possible header plus signature. */
  "too-short",
  /** Format-version byte is not 1. */
  "bad-version",
  /** Token-kind byte is not 1 (session), 2 (stream) or 3 (cursor). */
  "bad-kind",
  /** A valid kind, but not the one the caller expects here. */
  "wrong-kind",
  /** Key id length is 0, above 64, runs past the payload, or is not UTF-8. */
  "bad-key-id",
  /** The key id names no key of the keyring. */
  "unknown-key",
  /** The HMAC does not match. */
  "bad-signature",
  /** A field header or value runs past the end of the payload. */
  "truncated-field",
  /** A field id is lower than the one before it. */
  "field-order",
  /** A field id repeats the one before it. */
  "duplicate-field",
  /** A field id this token kind does not define. */
  "unknown-field",
  /** A required field of this kind is absent. */
  "missing-field",
  /** A UUID field is not 16 bytes or an integer field is not 8 bytes. */
  "bad-field-length",
  /** A text field is empty. */
  "empty-field",
  /** A text field is not valid UTF-8. */
  "bad-utf8",
  /** A well-typed field holds a value its field does not allow (an unknown direction, a malformed digest, ...). */
  "bad-field-value",
  /** Authentic, but issued to another deployment, caller or session (`assertTokenIdentity`). */
  "identity-mismatch",
] as const;

export type InvalidTokenReason = (typeof INVALID_TOKEN_REASONS)[number];

/** The one public message of every rejected token: it reveals nothing about why. */
export const INVALID_TOKEN_MESSAGE = "the token is invalid";

/**
 * A rejected token. `code` is always `invalid-token`; `reason` says why, for
 * logs and tests. `path` names the offending field (for example `fields.33`)
 * when the reason concerns one field.
 */
export class InvalidTokenError extends ProtocolError {
  readonly reason: InvalidTokenReason;

  constructor(reason: InvalidTokenReason, fieldId?: number) {
    super("invalid-token", INVALID_TOKEN_MESSAGE, fieldId === undefined ? {} : { path: `fields.${fieldId}` });
    this.reason = reason;
  }
}

export function isInvalidTokenError(value: unknown): value is InvalidTokenError {
  return value instanceof InvalidTokenError;
}

/** A programming or configuration mistake; the message names what is wrong, never a secret or a value. */
export function usageError(message: string, path?: string): ProtocolError {
  return new ProtocolError("internal-error", message, path === undefined ? {} : { path });
}

/**
 * Runs a public function's work on the caller's arguments: an error that is
 * not a `ProtocolError` can only come from the caller's own objects (a getter
 * or a proxy trap that throws while a field is read), so it becomes the
 * caller's `internal-error`, with the original as `cause` for the log, and
 * never escapes raw.
 */
export function readingArguments<T>(run: () => T): T {
  try {
    return run();
  } catch (cause) {
    throw argumentFault(cause);
  }
}

/** What `readingArguments` throws for `cause`: the cause itself when it is a `ProtocolError`. */
export function argumentFault(cause: unknown): ProtocolError {
  if (cause instanceof ProtocolError) return cause;
  return new ProtocolError("internal-error", "an argument could not be read", { cause });
}

/**
 * Fields that are each valid but make the token longer than 8192 characters
 * (decisions-v1 section 6): nothing was minted. Code `limit-exceeded`, never
 * retryable; the message names the kind and the length, never a field value.
 * A peer's request that caused it was not itself oversized, so its close
 * status is 1002, not 1009.
 */
export class TokenTooLongError extends ProtocolError {
  readonly kind: TokenKind;
  /** The length the token would have had, in characters. */
  readonly characters: number;

  constructor(
    kind: TokenKind,
    characters: number,
    message = `the ${kind} token would be ${characters} characters long, over the limit of ${LIMITS.maxTokenBytes}`,
  ) {
    super("limit-exceeded", message, { path: "fields" });
    this.kind = kind;
    this.characters = characters;
  }

  override get closeCode(): number {
    return CLOSE_PROTOCOL_ERROR;
  }
}
