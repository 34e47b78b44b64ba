/**
 * Static bearer tokens (development, `serve --token`), alone or in front of
 * another authenticator such as `createJwtAuth`'s: a bearer that is one of
 * the tokens is its principal and may do everything; any other bearer goes
 * to the other authenticator, and its callers to the other authorizer.
 */
import { sha256Hex } from "@golem-stream/tokens";
import type { Authenticator, Authorizer, Principal } from "../options.js";

export interface Authentication {
  readonly authenticator: Authenticator;
  readonly authorizer?: Authorizer;
}

/**
 * Each static token is its own principal of account `local`, named by a
 * digest prefix (the token itself is never kept as a name); then `other`.
 */
export function withStaticTokens(tokens: readonly string[], other?: Authentication): Required<Authentication> {
  const principals = new Map<string, Principal>();
  for (const token of tokens) {
    const digest = sha256Hex(token);
    principals.set(digest, { account: "local", principal: `token-${digest.slice(0, 16)}` });
  }
  const staticCallers = new Set(principals.values());
  // Lookup by digest: the comparison never runs over the secret's bytes.
  const authenticator: Authenticator = (bearer, request) => principals.get(sha256Hex(bearer)) ?? other?.authenticator(bearer, request);
  const otherAuthorizer = other?.authorizer;
  const authorizer: Authorizer = (request) => staticCallers.has(request.caller) || otherAuthorizer === undefined || otherAuthorizer(request);
  return { authenticator, authorizer };
}
