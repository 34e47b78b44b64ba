/**
 * The identity half of token checking (protocol section 10.2): a token with
 * a valid signature is still refused when it was issued to another
 * deployment, account, principal or session. Which values to expect is the
 * server's knowledge; comparing them in one place keeps the failure uniform.
 */
import { InvalidTokenError, readingArguments, usageError } from "./errors.js";
import type { CommonTokenFields } from "./types.js";

/** The values a token must carry; members left undefined are not compared. */
export interface ExpectedTokenIdentity {
  readonly issuer?: string | undefined;
  readonly audience?: string | undefined;
  readonly account?: string | undefined;
  readonly principal?: string | undefined;
  /** The parent session (the type-specific parent identity of stream and cursor tokens). */
  readonly sessionId?: string | undefined;
}

const CHECKED: readonly (readonly [keyof ExpectedTokenIdentity, number])[] = [
  ["issuer", 1],
  ["audience", 2],
  ["account", 3],
  ["principal", 4],
  ["sessionId", 16],
];

/**
 * Throws `InvalidTokenError` with reason `identity-mismatch` (and `path`
 * naming the field id) unless every given member of `expected` equals the
 * token's field.
 */
export function assertTokenIdentity(fields: CommonTokenFields & { readonly sessionId: string }, expected: ExpectedTokenIdentity): void {
  readingArguments(() => compareIdentity(fields, expected));
}

function compareIdentity(fields: CommonTokenFields & { readonly sessionId: string }, expected: ExpectedTokenIdentity): void {
  if (typeof fields !== "object" || fields === null) throw usageError("fields must be an object", "fields");
  if (typeof expected !== "object" || expected === null) throw usageError("expected must be an object", "expected");
  for (const [name, id] of CHECKED) {
    const want = expected[name];
    if (want === undefined) continue;
    const have: unknown = fields[name];
    if (typeof have !== "string") throw usageError(`fields.${name} must be a string`, `fields.${name}`);
    if (have !== want) throw new InvalidTokenError("identity-mismatch", id);
  }
}
