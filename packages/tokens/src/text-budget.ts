/**
 * How many bytes a token leaves for its unbounded text fields. Every other
 * field has a largest size (a UUID, a u64, a digest, a key id, the
 * idempotency key), and the 8192-character limit fixes the whole, so what is
 * left is all the deployment (issuer, audience), the caller (account,
 * principal) and the request (selector names, a stream's coordinate) may
 * take together. A server sizes its limits from it, so that a token it must
 * mint always fits.
 *
 * Computed from the field table, so it cannot drift from the layout. The sums
 * (decisions-v1 §4, §6: 8192 characters, key ids of 64 bytes, an idempotency
 * key of 1024):
 *
 *   session: 6140 decoded bytes (8187 base64url characters after `gai1_`)
 *            − 32 signature − 3 version, kind, key-id length − 64 key id
 *            − 70 field heads (14 × 5: id, u32 length)
 *            − 8 issued-at − 16 session id − 64 agent identity (hex SHA-256)
 *            − 8 attachment generation − 1024 idempotency key − 64 stream-token key id
 *            = 4787 for issuer, audience, account, principal, application,
 *              environment, agent type and method together;
 *   stream:  6140 − 32 − 3 − 64 − 50 (10 heads) − 8 issued-at − 16 session id
 *            − 16 stream id − 8 direction − 64 element schema digest
 *            = 5879 for issuer, audience, account, principal and coordinate;
 *   cursor:  6140 − 32 − 3 − 64 − 45 (9 heads) − 8 − 16 − 16 − 8 position − 8 event
 *            = 5940 for issuer, audience, account and principal.
 */
import { LIMITS } from "@golem-stream/wire";
import { usageError } from "./errors.js";
import { FIELD_TABLE, isTokenKind, type FieldSpec } from "./field-table.js";
import { U64_BYTES, UUID_BYTES } from "./field-values.js";
import { FIELD_HEADER_BYTES, HEADER_FIXED_BYTES, MAX_DECODED_BYTES } from "./payload.js";
import { SIGNATURE_BYTES } from "./signature.js";
import type { TokenKind } from "./types.js";

/** SHA-256 as lower-case hex (fields 20 and 34). */
const SHA256_HEX_BYTES = 64;

/** The largest value of a field, or undefined for free text (bounded only by the token). */
function largestValueBytes(spec: FieldSpec): number | undefined {
  switch (spec.rule) {
    case "text":
      return undefined;
    case "sha256-hex":
      return SHA256_HEX_BYTES;
    case "key-id":
      return LIMITS.maxKeyIdBytes;
    case "idempotency-key":
      return LIMITS.maxIdempotencyKeyBytes;
    case "uuid":
      return UUID_BYTES;
    case "u64":
    case "enum":
      return U64_BYTES;
  }
}

function computeBudget(kind: TokenKind): number {
  let fixed = SIGNATURE_BYTES + HEADER_FIXED_BYTES + LIMITS.maxKeyIdBytes;
  for (const spec of FIELD_TABLE[kind]) fixed += FIELD_HEADER_BYTES + (largestValueBytes(spec) ?? 0);
  return MAX_DECODED_BYTES - fixed;
}

const BUDGETS: Readonly<Record<TokenKind, number>> = {
  session: computeBudget("session"),
  stream: computeBudget("stream"),
  cursor: computeBudget("cursor"),
};

/**
 * UTF-8 bytes the free-text fields of a `kind` token (fields of rule "text":
 * issuer, audience, account, principal, and the session's selector names or
 * the stream's coordinate) may take together when every other field, the
 * optional ones included, is at its largest: 4787 (session), 5879 (stream),
 * 5940 (cursor). Fields within it always mint; past it, a token may be
 * refused with `TokenTooLongError`. Any other `kind` is `internal-error`.
 */
export function textFieldBudget(kind: TokenKind): number {
  // Checked by value, not looked up: `BUDGETS[kind]` would find "toString" through the prototype.
  if (!isTokenKind(kind)) throw usageError('kind must be "session", "stream" or "cursor"', "kind");
  return BUDGETS[kind];
}
