/**
 * The authenticator's result, checked once when a request is authenticated.
 * `account` and `principal` are written into every token the server mints
 * for the caller, so an identity that cannot be written is refused here,
 * before any session exists, rather than by the first mint (which would be
 * an `internal-error` in the middle of a start).
 */
import { ProtocolError, utf8ByteLength } from "@golem-stream/wire";
import type { Logger, Principal } from "../options.js";

/**
 * Returns `caller` if tokens can carry it. Not two non-empty strings: the
 * authenticator broke its contract, `internal-error`. Longer than
 * `maxBytes` UTF-8 bytes together: `forbidden` (the credential is valid, but
 * this server cannot serve that identity; retrying will not help). The log
 * line names sizes only: an identity may be personal data.
 */
export function checkCallerIdentity(caller: Principal, maxBytes: number, logger: Logger): Principal {
  const { account, principal } = caller as { account: unknown; principal: unknown };
  if (typeof account !== "string" || typeof principal !== "string" || account === "" || principal === "") {
    logger.error("authenticator returned an invalid identity", {
      event: "auth.invalid-identity",
      account: describe(account),
      principal: describe(principal),
    });
    throw new ProtocolError("internal-error", "internal error");
  }
  for (const member of ["formerPrincipals", "formerAccounts"] as const) {
    const former = (caller as Partial<Record<typeof member, unknown>>)[member];
    if (former !== undefined && !(Array.isArray(former) && former.every((name) => typeof name === "string" && name !== ""))) {
      logger.error(`authenticator returned invalid ${member}`, { event: "auth.invalid-identity", [member]: describe(former) });
      throw new ProtocolError("internal-error", "internal error");
    }
  }
  const accountBytes = utf8ByteLength(account);
  const principalBytes = utf8ByteLength(principal);
  if (accountBytes + principalBytes > maxBytes) {
    logger.error("authenticator returned an identity longer than limits.maxCallerIdentityBytes", {
      event: "auth.invalid-identity",
      accountBytes,
      principalBytes,
      limit: maxBytes,
    });
    throw new ProtocolError(
      "forbidden",
      `the authenticated identity is too long to be bound into tokens (account and principal at most ${maxBytes} UTF-8 bytes together)`,
    );
  }
  return caller;
}

function describe(value: unknown): string {
  return typeof value === "string" ? `string of ${utf8ByteLength(value)} bytes` : typeof value;
}
