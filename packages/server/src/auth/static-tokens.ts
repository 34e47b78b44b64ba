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

/** A static token in a named account, shared with the other tokens of that account. */
export interface GroupedToken {
  readonly token: string;
  /** 1..64 of `A-Z a-z 0-9 . _ -`, not starting with `token-` (the names of single tokens' accounts). */
  readonly account: string;
}

/** A static token: alone (its own account), or grouped into a named account. */
export type StaticToken = string | GroupedToken;

/** The account every static token shared before each became its own: kept as a former account. */
const SHARED_ACCOUNT = "local";
const ACCOUNT_NAME = /^[A-Za-z0-9._-]{1,64}$/;

/** Throws a `TypeError` naming the rule when `name` cannot name a group of static tokens. */
export function checkTokenAccount(name: string): string {
  if (typeof name !== "string" || !ACCOUNT_NAME.test(name) || name.startsWith("token-")) {
    throw new TypeError(
      `a token account is 1..64 of A-Z a-z 0-9 . _ - and does not start with "token-" (the names of single tokens' accounts), got ${JSON.stringify(name)}`,
    );
  }
  return name;
}

/**
 * Throws a `TypeError` unless every entry is a non-empty token or a
 * `GroupedToken` with a valid account, and no token is given in two
 * accounts (alone counts as its own).
 */
export function checkStaticTokens(tokens: readonly StaticToken[]): void {
  if (!Array.isArray(tokens)) throw new TypeError("static tokens must be an array");
  const accounts = new Map<string, string | undefined>();
  for (const entry of tokens as readonly unknown[]) {
    const grouped = typeof entry === "object" && entry !== null;
    const token: unknown = grouped ? (entry as { token?: unknown }).token : entry;
    if (typeof token !== "string" || token.length === 0) throw new TypeError("a static token is a non-empty string, or { token, account }");
    const account = grouped ? checkTokenAccount((entry as { account?: unknown }).account as string) : undefined;
    if (accounts.has(token) && accounts.get(token) !== account) {
      throw new TypeError(`a static token is given in two accounts (${accounts.get(token) ?? "its own"}, ${account ?? "its own"})`);
    }
    accounts.set(token, account);
  }
}

/**
 * Each static token is its own principal, named by an HMAC-SHA-256 of the
 * token under `secret` (`token-` and 16 hex digits), and its own account of
 * the same name, so that no token holder can see or claim another's
 * idempotency keys (they are scoped by account). A token given with an
 * `account` is in that account instead, with every other token given the
 * same one: grouped tokens share idempotency keys (each still its own
 * principal). Then `other`.
 *
 * The name is in every session token the server signs (signed, not
 * encrypted): keyed, it tells nothing about the bearer token to whoever
 * reads one, where a bare hash would let them test guesses offline. Names
 * of earlier releases stay usable for the sessions started under them:
 * account `local` (which every static token shared) is a former account,
 * and the bare SHA-256 prefix a former principal.
 */
export function withStaticTokens(tokens: readonly StaticToken[], secret: Uint8Array, other?: Authentication): Required<Authentication> {
  checkStaticTokens(tokens);
  const keyed = (token: string): string => createHmac("sha256", secret).update(token).digest("hex");
  const principals = new Map<string, Principal>();
  for (const entry of tokens) {
    const token = typeof entry === "string" ? entry : entry.token;
    const digest = keyed(token);
    const name = `token-${digest.slice(0, 16)}`;
    const account = typeof entry === "string" ? name : entry.account;
    principals.set(digest, {
      account,
      principal: name,
      formerPrincipals: [`token-${sha256Hex(token).slice(0, 16)}`],
      ...(account === SHARED_ACCOUNT ? {} : { formerAccounts: [SHARED_ACCOUNT] }),
    });
  }
  const staticCallers = new Set(principals.values());
  // Lookup by keyed digest: the comparison never runs over the secret's bytes.
  const authenticator: Authenticator = (bearer, request) => principals.get(keyed(bearer)) ?? other?.authenticator(bearer, request);
  const otherAuthorizer = other?.authorizer;
  const authorizer: Authorizer = (request) =>
    staticCallers.has(request.caller) || otherAuthorizer === undefined || otherAuthorizer(request);
  return { authenticator, authorizer };
}
