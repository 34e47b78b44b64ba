/**
 * Authorization by a claim of the caller's JWT: the claim lists grants, each
 * naming what the caller may use as `application[/environment[/agentType[/method]]]`.
 * A segment is a name or `*` (any name); segments left out cover everything
 * below, so `shop` grants the whole application `shop` and `*` everything.
 * Names are compared exactly; a name holding `/` is matched only by `*` or
 * by a shorter grant. An entry that is not a grant (an empty segment, more
 * than four segments) grants nothing.
 */
import type { AuthorizationRequest } from "../options.js";

/** One grant: its segments, each a name or `*`. */
export type Grant = readonly string[];

const MAX_GRANT_SEGMENTS = 4;

/**
 * The grants in a claim's value: a space-separated string (OAuth `scope`,
 * RFC 8693 section 4.2) or an array of strings (`roles`, `groups`). Entries
 * not starting with `prefix` are someone else's and are skipped; the prefix
 * is removed from the others. Any other value grants nothing.
 */
export function grantsOf(value: unknown, prefix: string): readonly Grant[] {
  const entries =
    typeof value === "string"
      ? value.split(" ")
      : Array.isArray(value)
        ? value.filter((entry): entry is string => typeof entry === "string")
        : [];
  const grants: Grant[] = [];
  for (const entry of entries) {
    if (entry === "" || !entry.startsWith(prefix)) continue;
    const segments = entry.slice(prefix.length).split("/");
    if (segments.length > MAX_GRANT_SEGMENTS || segments.some((segment) => segment === "")) continue;
    grants.push(segments);
  }
  return grants;
}

/**
 * Whether a grant covers the request. Only the names the request carries
 * are compared: `discover` names an application and environment, so any
 * grant inside that environment lets the caller read its catalogue; start,
 * resume and takeover name all four.
 */
export function grantCovers(grant: Grant, request: AuthorizationRequest): boolean {
  const names = [request.application, request.environment, request.agentType, request.method];
  for (let index = 0; index < grant.length; index++) {
    const name = names[index];
    if (name === undefined) return true;
    const segment = grant[index];
    if (segment !== "*" && segment !== name) return false;
  }
  return true;
}
