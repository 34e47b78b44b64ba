/**
 * `serve --jwt-*`: bearer JWTs verified against a JWKS (a URL, or a file
 * read again when it changes), beside the static tokens. The flags only;
 * what they build is jwt-authentication.ts, loaded by `serve`.
 */
import { InvalidArgumentError, Option } from "commander";
import { isZeroDuration, parseDuration } from "./duration.js";

export interface JwtServeOptions {
  /** `--jwt-jwks`: an http(s) URL, or a file path. */
  readonly jwtJwks?: string;
  readonly jwtIssuer?: string;
  readonly jwtAudience?: string;
  readonly jwtAccountClaim?: string;
  readonly jwtPrincipalClaim?: string;
  readonly jwtAuthorizationClaim?: string;
  readonly jwtAuthorizationPrefix?: string;
  /** `--jwt-clock-skew`, ms. */
  readonly jwtClockSkew?: number;
}

/** `0` (any zero duration), or a strict duration of at most 1 hour. */
function parseClockSkew(value: string): number {
  const ms = isZeroDuration(value) ? 0 : parseDuration(value);
  if (ms === undefined || ms > 3_600_000)
    throw new InvalidArgumentError("a clock skew is 0 or a whole number and a unit up to 1h: 30s, 2m");
  return ms;
}

/** The options; `serve --help` lists them in this order. */
export function jwtFlags() {
  return {
    jwks: new Option(
      "--jwt-jwks <url|file>",
      "accept bearer JWTs signed (RS256, ES256, EdDSA) by a key of this JWKS: an https:// URL (cached, fetched again for an unknown key at most every 30s) or a file (read again the same way); needs --jwt-issuer and --jwt-audience",
    ),
    issuer: new Option("--jwt-issuer <iss>", "with --jwt-jwks: the iss a token must have"),
    audience: new Option("--jwt-audience <aud>", "with --jwt-jwks: the aud a token must have"),
    principalClaim: new Option("--jwt-principal-claim <claim>", "with --jwt-jwks: the claim naming the caller (default: sub)"),
    accountClaim: new Option(
      "--jwt-account-claim <claim>",
      "with --jwt-jwks: the claim naming the account its sessions belong to (default: iss, one account per issuer)",
    ),
    authorizationClaim: new Option(
      "--jwt-authorization-claim <claim>",
      "with --jwt-jwks: only allow what this claim grants (scope or roles: application[/environment[/agentType[/method]]], * for any name)",
    ),
    authorizationPrefix: new Option(
      "--jwt-authorization-prefix <prefix>",
      "with --jwt-authorization-claim: only entries starting with this are grants (e.g. stream:)",
    ),
    clockSkew: new Option(
      "--jwt-clock-skew <duration>",
      "with --jwt-jwks: clock difference allowed on exp and nbf (default: 60s)",
    ).argParser(parseClockSkew),
  };
}
