/**
 * Static bearer tokens (development, `serve --token`), alone or in front of
 * another authenticator such as `createJwtAuth`'s: a bearer that is one of
 * the tokens is its principal and may do everything; any other bearer goes
 * to the other authenticator, and its callers to the other authorizer.
 */
import { createHmac } from "node:crypto";
import { sha256Hex } from "@golem-stream/tokens";
import type { Authenticator, Authorizer, Principal } from "../options.js";

export interface Authentication {
  readonly authenticator: Authenticator;
  readonly authorizer?: Authorizer;
}

/**
 * Each static token is its own principal of account `local`, named by an
 * HMAC-SHA-256 of the token under `secret` (`token-` and 16 hex digits); then
 * `other`. The name is in every session token the server signs (signed, not
 * encrypted): keyed, it tells nothing about the bearer token to whoever
 * reads one, where a bare hash would let them test guesses offline. The name
 * earlier releases used (the bare SHA-256 prefix) is kept as a former
 * principal, so sessions started under it stay resumable.
 */
export function withStaticTokens(tokens: readonly string[], secret: Uint8Array, other?: Authentication): Required<Authentication> {
  const keyed = (token: string): string => createHmac("sha256", secret).update(token).digest("hex");
  const principals = new Map<string, Principal>();
  for (const token of tokens) {
    const digest = keyed(token);
    principals.set(digest, { account: "local", principal: `token-${digest.slice(0, 16)}`, formerPrincipals: [`token-${sha256Hex(token).slice(0, 16)}`] });
  }
  const staticCallers = new Set(principals.values());
  // Lookup by keyed digest: the comparison never runs over the secret's bytes.
  const authenticator: Authenticator = (bearer, request) => principals.get(keyed(bearer)) ?? other?.authenticator(bearer, request);
  const otherAuthorizer = other?.authorizer;
  const authorizer: Authorizer = (request) => staticCallers.has(request.caller) || otherAuthorizer === undefined || otherAuthorizer(request);
  return { authenticator, authorizer };
}
