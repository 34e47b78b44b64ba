/**
 * What `serve --jwt-*` builds: `createJwtAuth` of @golem-stream/server from
 * the flags, checked before anything starts. A mistake (a flag without
 * --jwt-jwks, a missing issuer, an unreadable JWKS file) is a usage error
 * naming the flag. Refusals go to the server's log by reason only.
 */
import { resolve } from "node:path";
import type { Authentication, Logger } from "@golem-stream/server";
import { usageError } from "./exit-codes.js";
import type { JwtServeOptions } from "./jwt-flags.js";
import { loadServer } from "./optional-packages.js";

export interface JwtSettings {
  readonly authentication: Authentication;
  /** One line for the start banner: where the keys come from, and the issuer and audience. */
  readonly description: string;
}

const DEPENDENT_FLAGS = [
  ["--jwt-issuer", "jwtIssuer"],
  ["--jwt-audience", "jwtAudience"],
  ["--jwt-principal-claim", "jwtPrincipalClaim"],
  ["--jwt-account-claim", "jwtAccountClaim"],
  ["--jwt-authorization-claim", "jwtAuthorizationClaim"],
  ["--jwt-authorization-prefix", "jwtAuthorizationPrefix"],
  ["--jwt-clock-skew", "jwtClockSkew"],
] as const satisfies readonly (readonly [string, keyof JwtServeOptions])[];

/** The JWT authentication the flags ask for, or undefined without --jwt-jwks. */
export async function jwtAuthentication(options: JwtServeOptions, logger: Logger): Promise<JwtSettings | undefined> {
  const source = options.jwtJwks;
  if (source === undefined) {
    const given = DEPENDENT_FLAGS.filter(([, name]) => options[name] !== undefined).map(([flag]) => flag);
    if (given.length > 0) throw usageError(`${given.join(", ")} ${given.length === 1 ? "needs" : "need"} --jwt-jwks URL|FILE`);
    return undefined;
  }
  if (options.jwtIssuer === undefined || options.jwtAudience === undefined)
    throw usageError("--jwt-jwks needs --jwt-issuer and --jwt-audience");
  if (options.jwtAuthorizationPrefix !== undefined && options.jwtAuthorizationClaim === undefined) {
    throw usageError("--jwt-authorization-prefix needs --jwt-authorization-claim");
  }
  const isUrl = /^https?:\/\//i.test(source);
  const { createJwtAuth } = await loadServer();
  let authentication: Authentication;
  try {
    authentication = createJwtAuth({
      ...(isUrl ? { jwksUrl: source } : { jwksFile: resolve(source) }),
      issuer: options.jwtIssuer,
      audience: options.jwtAudience,
      ...(options.jwtPrincipalClaim === undefined ? {} : { principalClaim: options.jwtPrincipalClaim }),
      ...(options.jwtAccountClaim === undefined ? {} : { accountClaim: options.jwtAccountClaim }),
      ...(options.jwtClockSkew === undefined ? {} : { clockToleranceSeconds: options.jwtClockSkew / 1000 }),
      ...(options.jwtAuthorizationClaim === undefined
        ? {}
        : {
            authorization: {
              claim: options.jwtAuthorizationClaim,
              ...(options.jwtAuthorizationPrefix === undefined ? {} : { prefix: options.jwtAuthorizationPrefix }),
            },
          }),
      logger,
    });
  } catch (error) {
    throw usageError(`--jwt-jwks: ${error instanceof Error ? error.message : String(error)}`);
  }
  const keys = isUrl ? source : resolve(source);
  const authorization = options.jwtAuthorizationClaim === undefined ? "" : `, authorized by the ${options.jwtAuthorizationClaim} claim`;
  return {
    authentication,
    description: `bearer JWTs of issuer ${options.jwtIssuer} for audience ${options.jwtAudience}, keys from ${keys}${authorization}`,
  };
}
