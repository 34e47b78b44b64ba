/**
 * Who the caller of a first message is to a session, and whether it may act:
 * the authorizer's answer as a protocol error, and the caller's former names
 * (`formerAccounts`, `formerPrincipals`), under which a session token or a
 * recorded session may still be its own after a rename. Shared by the
 * start, resume and exact-replay rules.
 */
import { ProtocolError } from "@golem-stream/wire";
import type { VerifiedToken } from "@golem-stream/tokens";
import type { AuthorizationRequest, Authorizer, Principal } from "../options.js";
import type { TokenService } from "./token-service.js";

/** `forbidden` unless the authorizer allows `request`; an authorizer that throws is an `internal-error`. */
export async function authorizeOrThrow(authorize: Authorizer, request: AuthorizationRequest): Promise<void> {
  let allowed: boolean;
  try {
    allowed = await authorize(request);
  } catch (error) {
    throw new ProtocolError("internal-error", "internal error", { cause: error });
  }
  if (allowed !== true) throw new ProtocolError("forbidden", "the caller may not perform this operation");
}

/**
 * Verifies a session token as the caller's, under its account or one of
 * its `formerAccounts` and its principal or one of its `formerPrincipals`;
 * returns the caller under the names that matched, which then stand for
 * the caller in everything about this session.
 */
export function verifyUnderAnyName(
  tokens: TokenService,
  token: string,
  caller: Principal,
): { verified: VerifiedToken<"session">; caller: Principal } {
  try {
    return { verified: tokens.verifySession(token, caller), caller };
  } catch (error) {
    for (const former of formerNames(caller)) {
      try {
        return { verified: tokens.verifySession(token, former), caller: former };
      } catch {
        // The next names, or the first error.
      }
    }
    throw error;
  }
}

/** The caller under the session's recorded account and principal when those are among its names. */
export function underRecordedName(caller: Principal, recorded: { readonly account: string; readonly principal: string }): Principal {
  if (caller.account === recorded.account && caller.principal === recorded.principal) return caller;
  const known = formerNames(caller).some((former) => former.account === recorded.account && former.principal === recorded.principal);
  return known ? { account: recorded.account, principal: recorded.principal } : caller;
}

/** Every earlier pair of names of `caller` (account and principal), its current pair left out. */
function formerNames(caller: Principal): Principal[] {
  const names: Principal[] = [];
  for (const account of [caller.account, ...(caller.formerAccounts ?? [])]) {
    for (const principal of [caller.principal, ...(caller.formerPrincipals ?? [])]) {
      if (account !== caller.account || principal !== caller.principal) names.push({ account, principal });
    }
  }
  return names;
}
