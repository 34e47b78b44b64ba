/**
 * How the session token's room for free text is shared out, so that every
 * token the server must mint fits 8192 characters (docs/protocol/server.md,
 * *Tokens that would be too long*). The session token carries the most
 * bounded fields, so it binds: a cursor token then always fits, and a
 * stream token whenever its coordinate has at most 5879 − 4275 = 1604 bytes
 * (more than a value within JSON's 128 nesting levels makes).
 *
 *   4787  bytes of free text in a session token (`textFieldBudget("session")`,
 *         every other field at its largest: a 1 KiB idempotency key, 64-byte key ids)
 * −  512  application, environment, agent type and method: 4 × 128 (MAX_SELECTOR_NAME_BYTES)
 * = 4275  for issuer + audience + account + principal (DEPLOYMENT_AND_CALLER_BYTES)
 * −   32  the default issuer (`golem-stream`, 12) and audience (`golem-stream-session`, 20)
 * = 4243  the ceiling of limits.maxCallerIdentityBytes (MAX_CALLER_IDENTITY_BYTES)
 *
 * A server checks its issuer and audience against what its identity limit
 * leaves (4275 − maxCallerIdentityBytes; 2227 at the default 2048), and a
 * StaticAgentHost checks every name against MAX_SELECTOR_NAME_BYTES.
 */
import { textFieldBudget } from "@golem-stream/tokens";
import { isWellFormedText, utf8ByteLength } from "@golem-stream/wire";

/**
 * An application, environment, agent type or method name: 1..128 UTF-8
 * bytes. Not a protocol limit (the wire bounds a name only by its message):
 * this server's, so that the four names of a selector always fit its tokens.
 */
export const MAX_SELECTOR_NAME_BYTES = 128;

const SELECTOR_NAMES = 4;

export const DEFAULT_ISSUER = "golem-stream";
export const DEFAULT_AUDIENCE = "golem-stream-session";

/** What the session token leaves for the issuer, audience, account and principal together. */
const DEPLOYMENT_AND_CALLER_BYTES = textFieldBudget("session") - SELECTOR_NAMES * MAX_SELECTOR_NAME_BYTES;

/**
 * The ceiling of `limits.maxCallerIdentityBytes`: a server with the default
 * issuer and audience may raise the limit this far.
 */
export const MAX_CALLER_IDENTITY_BYTES = DEPLOYMENT_AND_CALLER_BYTES - utf8ByteLength(DEFAULT_ISSUER) - utf8ByteLength(DEFAULT_AUDIENCE);

/**
 * Checks `options.issuer` and `options.audience` (already known to be
 * non-empty strings) against what an identity of `maxCallerIdentityBytes`
 * leaves them. Too long, and every start would be refused `limit-exceeded`:
 * a `RangeError` at construction instead.
 */
export function checkIssuerAndAudience(issuer: string, audience: string, maxCallerIdentityBytes: number): void {
  for (const [name, value] of [
    ["issuer", issuer],
    ["audience", audience],
  ] as const) {
    if (!isWellFormedText(value))
      throw new TypeError(`options.${name} must be well-formed Unicode text (no lone surrogates): tokens carry it as UTF-8`);
  }
  const bytes = utf8ByteLength(issuer) + utf8ByteLength(audience);
  const room = DEPLOYMENT_AND_CALLER_BYTES - maxCallerIdentityBytes;
  if (bytes > room) {
    throw new RangeError(
      `options.issuer and options.audience are ${bytes} UTF-8 bytes together, over the ${room} a session token leaves them ` +
        `next to a caller identity of limits.maxCallerIdentityBytes (${maxCallerIdentityBytes}) and selector names of up to ` +
        `${MAX_SELECTOR_NAME_BYTES} bytes each (8192 characters in all): shorten them or lower limits.maxCallerIdentityBytes`,
    );
  }
}

/**
 * Throws when `name` cannot be a selector name: a `TypeError` when it is not
 * a non-empty well-formed string, a `RangeError` when it is longer than
 * MAX_SELECTOR_NAME_BYTES. `subject` starts the message ("… method name").
 */
export function checkSelectorName(name: unknown, subject: string): void {
  if (typeof name !== "string" || name === "") throw new TypeError(`${subject} must be a non-empty string`);
  if (!isWellFormedText(name)) throw new TypeError(`${subject} must be well-formed Unicode text (no lone surrogates)`);
  const bytes = utf8ByteLength(name);
  if (bytes > MAX_SELECTOR_NAME_BYTES) {
    throw new RangeError(
      `${subject} is ${bytes} UTF-8 bytes long, over the ${MAX_SELECTOR_NAME_BYTES} a selector name may have (it is written into every session token)`,
    );
  }
}
