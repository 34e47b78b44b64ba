/**
 * The auth folder owns the authenticators and authorizers a server can be
 * given: static bearer tokens, JWTs checked against a JWKS (a file, or a URL
 * fetched with a bounded body), and grants read from a JWT claim. It imports
 * only the server's root modules.
 *
 * `createJwtAuth`: bearer JWTs verified with `jose` against a JSON Web Key
 * Set, for `createSessionServer({ authenticator, authorizer })` and
 * `golem-stream serve --jwt-jwks`. Signatures RS256, ES256 or EdDSA only:
 * never `none`, never an HMAC (HS*), so a token "signed" with the public key
 * as an HMAC secret is refused. `iss`, `aud` and `exp` are required.
 *
 * The caller is `{ principal: <principalClaim>, account: <accountClaim> }`
 * (defaults `sub` and `iss`: every caller of one issuer shares one account).
 * With `authorization`, a claim lists what the caller may use (jwt-grants.ts);
 * the server asks at every start, resume, takeover and discovery, with the
 * claims of the token that attachment presented: a resume re-authenticates.
 *
 * Refusals are logged by reason (jose's error code and the claim's name),
 * never with the token or a claim's value.
 */
import { jwtVerify, type JSONWebKeySet, type JWTPayload, type JWTVerifyGetKey } from "jose";
import { silentLogger, type Authenticator, type Authorizer, type Logger, type Principal } from "../options.js";
import { grantCovers, grantsOf, type Grant } from "./jwt-grants.js";
import { MAX_JWKS_RESPONSE_BYTES } from "./bounded-fetch.js";
import { jwksUrl } from "./jwks-url.js";
import { jwksFile, parseJwks } from "./jwks-file.js";

/** The signature algorithms a token may use. */
export type JwtAlgorithm = "RS256" | "ES256" | "EdDSA";
export const JWT_ALGORITHMS: readonly JwtAlgorithm[] = ["RS256", "ES256", "EdDSA"];

/** Longest bearer JWT considered (16 KiB, the server's Authorization header bound); longer is refused unparsed. */
export const MAX_JWT_CHARS = 16 * 1024;

export const JWT_DEFAULTS = {
  clockToleranceSeconds: 60,
  principalClaim: "sub",
  accountClaim: "iss",
  authorizationPrefix: "",
  jwksCooldownMs: 30_000,
  jwksMaxAgeMs: 600_000,
  jwksTimeoutMs: 5_000,
} as const;

/** How keys are fetched (or read, for a file) again. */
export interface JwksRefreshOptions {
  /**
   * After a fetch, successful or not, how long before the set is fetched
   * again (default 30 000 ms): bounds the fetches a stream of tokens with
   * made-up `kid`s can cause, also while the identity provider fails. Within
   * it a token naming a key the set lacks is refused, and while no set was
   * ever had a handshake fails `internal-error` without a fetch.
   */
  readonly cooldownMs?: number;
  /** How long a fetched set is used before it is fetched again (default 600 000 ms, 10 minutes). */
  readonly maxAgeMs?: number;
  /** How long a fetch of `jwksUrl` may take (default 5000 ms); then the handshake fails `internal-error`. */
  readonly timeoutMs?: number;
}

export interface JwtAuthorizationOptions {
  /**
   * The claim listing the caller's grants: a space-separated string (`scope`)
   * or an array of strings (`roles`). Each grant is
   * `application[/environment[/agentType[/method]]]`, `*` for any name.
   * A token without the claim may do nothing.
   */
  readonly claim: string;
  /** Only entries starting with this are grants, read without it (e.g. `stream:`); default `""` (every entry). */
  readonly prefix?: string;
}

export interface JwtAuthOptions {
  /** Where the keys are: exactly one of `jwksUrl` (http: or https:; https in production), `jwksFile` or `jwks`. */
  readonly jwksUrl?: string | URL;
  /** A JWKS file, read again as `refresh` says (rotate keys by rewriting it). */
  readonly jwksFile?: string;
  /** A fixed key set. */
  readonly jwks?: JSONWebKeySet;
  /** The `iss` a token must have (one of these). Required. */
  readonly issuer: string | readonly string[];
  /** An `aud` a token must have (one of these). Required. */
  readonly audience: string | readonly string[];
  /** Accepted signature algorithms, a subset of RS256, ES256, EdDSA (default all three). */
  readonly algorithms?: readonly JwtAlgorithm[];
  /** Clock skew allowed on `exp`, `nbf` and `iat`, seconds (default 60). */
  readonly clockToleranceSeconds?: number;
  /** The claim naming the principal (default `sub`). */
  readonly principalClaim?: string;
  /** The claim naming the account sessions belong to (default `iss`: one account per issuer). */
  readonly accountClaim?: string;
  /** Authorization by claim; default off (every valid token may do everything). */
  readonly authorization?: JwtAuthorizationOptions;
  /** Key set refresh and fetch limits (`jwksUrl`, `jwksFile`). */
  readonly refresh?: JwksRefreshOptions;
  /** Refusals by reason, and key set failures; never a token or a claim's value. */
  readonly logger?: Logger;
  /** Clock in ms since the epoch (tests). */
  readonly now?: () => number;
}

export interface JwtAuth {
  /** For `SessionServerOptions.authenticator`. */
  readonly authenticator: Authenticator;
  /**
   * For `SessionServerOptions.authorizer`: allows a caller this authenticator
   * authenticated when its grants cover the request (everything when
   * `authorization` is off); refuses every other caller.
   */
  readonly authorizer: Authorizer;
  /** The verified claims behind a caller this authenticator returned (for an authorizer of your own). */
  claimsOf(caller: Principal): Readonly<JWTPayload> | undefined;
}

/** jose error codes that mean the token is not acceptable (anything else is the key source failing). */
const REFUSED_TOKEN_CODES = new Set([
  "ERR_JWT_EXPIRED",
  "ERR_JWT_CLAIM_VALIDATION_FAILED",
  "ERR_JWT_INVALID",
  "ERR_JWS_INVALID",
  "ERR_JWS_SIGNATURE_VERIFICATION_FAILED",
  "ERR_JOSE_ALG_NOT_ALLOWED",
  "ERR_JOSE_NOT_SUPPORTED",
  "ERR_JWKS_NO_MATCHING_KEY",
  "ERR_JWKS_MULTIPLE_MATCHING_KEYS",
]);

interface Verified {
  readonly claims: Readonly<JWTPayload>;
  readonly grants: readonly Grant[] | undefined;
}

export function createJwtAuth(options: JwtAuthOptions): JwtAuth {
  const settings = checkJwtOptions(options);
  const logger = options.logger ?? silentLogger;
  const now = options.now ?? Date.now;
  const keys = keySource(options, settings.refresh, now, logger);
  const verified = new WeakMap<Principal, Verified>();
  const verifyOptions = {
    algorithms: [...settings.algorithms],
    issuer: [...settings.issuers],
    audience: [...settings.audiences],
    clockTolerance: settings.clockToleranceSeconds,
    requiredClaims: ["exp"],
  };

  const refuse = (reason: string, claim?: string): undefined => {
    logger.info("bearer JWT refused", { event: "auth.jwt-refused", reason, ...(claim === undefined ? {} : { claim }) });
    return undefined;
  };

  const authenticator: Authenticator = async (token) => {
    if (token.length > MAX_JWT_CHARS) return refuse("too-long");
    let claims: JWTPayload;
    try {
      ({ payload: claims } = await jwtVerify(token, keys, { ...verifyOptions, currentDate: new Date(now()) }));
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (typeof code === "string" && REFUSED_TOKEN_CODES.has(code)) {
        const claim = (error as { claim?: unknown }).claim;
        return refuse(code, typeof claim === "string" ? claim : undefined);
      }
      // The keys could not be had (a fetch failed, timed out, or the set is invalid): not the
      // caller's fault, so not `unauthenticated`; the server answers `internal-error` (retryable).
      throw new Error(
        `cannot verify bearer JWTs: the key set is unavailable (${typeof code === "string" ? code : error instanceof Error ? error.name : "error"})`,
      );
    }
    // jose checks `iat` only against a maximum age; a token issued in the future (beyond the
    // clock tolerance) is refused here, as the tolerance's documentation says.
    if (typeof claims.iat === "number" && claims.iat > now() / 1000 + settings.clockToleranceSeconds) {
      return refuse("ERR_JWT_CLAIM_VALIDATION_FAILED", "iat");
    }
    const principal = claims[settings.principalClaim];
    const account = claims[settings.accountClaim];
    if (typeof principal !== "string" || principal === "") return refuse("identity-claim-missing", settings.principalClaim);
    if (typeof account !== "string" || account === "") return refuse("identity-claim-missing", settings.accountClaim);
    const caller: Principal = { account, principal };
    const grants =
      settings.authorization === undefined ? undefined : grantsOf(claims[settings.authorization.claim], settings.authorization.prefix);
    verified.set(caller, { claims, grants });
    return caller;
  };

  const authorizer: Authorizer = (request) => {
    const found = verified.get(request.caller);
    if (found === undefined) return false;
    return found.grants === undefined || found.grants.some((grant) => grantCovers(grant, request));
  };

  return { authenticator, authorizer, claimsOf: (caller) => verified.get(caller)?.claims };
}

function keySource(options: JwtAuthOptions, refresh: Required<JwksRefreshOptions>, now: () => number, logger: Logger): JWTVerifyGetKey {
  if (options.jwksUrl !== undefined) {
    return jwksUrl({
      url: new URL(options.jwksUrl),
      cooldownMs: refresh.cooldownMs,
      maxAgeMs: refresh.maxAgeMs,
      timeoutMs: refresh.timeoutMs,
      maxBytes: MAX_JWKS_RESPONSE_BYTES,
      now,
      logger,
    });
  }
  if (options.jwksFile !== undefined) {
    return jwksFile({ path: options.jwksFile, cooldownMs: refresh.cooldownMs, maxAgeMs: refresh.maxAgeMs, now, logger });
  }
  return parseJwks(JSON.stringify(options.jwks), "options.jwks");
}

interface CheckedOptions {
  readonly algorithms: readonly JwtAlgorithm[];
  readonly issuers: readonly string[];
  readonly audiences: readonly string[];
  readonly clockToleranceSeconds: number;
  readonly principalClaim: string;
  readonly accountClaim: string;
  readonly authorization: { readonly claim: string; readonly prefix: string } | undefined;
  readonly refresh: Required<JwksRefreshOptions>;
}

/** Configuration mistakes fail at creation, with the option's name. */
function checkJwtOptions(options: JwtAuthOptions): CheckedOptions {
  if (typeof options !== "object" || options === null) throw new TypeError("createJwtAuth needs an options object");
  const sources = (["jwksUrl", "jwksFile", "jwks"] as const).filter((name) => options[name] !== undefined);
  if (sources.length !== 1) throw new TypeError("createJwtAuth needs exactly one of options.jwksUrl, options.jwksFile and options.jwks");
  if (options.jwksUrl !== undefined) {
    let url: URL;
    try {
      url = new URL(options.jwksUrl);
    } catch {
      throw new TypeError("options.jwksUrl must be an absolute http: or https: URL");
    }
    if (url.protocol !== "https:" && url.protocol !== "http:") throw new TypeError("options.jwksUrl must be an http: or https: URL");
  }
  if (options.jwksFile !== undefined && (typeof options.jwksFile !== "string" || options.jwksFile === ""))
    throw new TypeError("options.jwksFile must be a non-empty path");
  if (options.jwks !== undefined && (typeof options.jwks !== "object" || options.jwks === null))
    throw new TypeError("options.jwks must be a JWKS object");
  const algorithms = options.algorithms ?? JWT_ALGORITHMS;
  if (!Array.isArray(algorithms) || algorithms.length === 0 || !algorithms.every((name) => JWT_ALGORITHMS.includes(name))) {
    throw new TypeError(`options.algorithms must be a non-empty subset of ${JWT_ALGORITHMS.join(", ")}`);
  }
  const clockToleranceSeconds = options.clockToleranceSeconds ?? JWT_DEFAULTS.clockToleranceSeconds;
  if (typeof clockToleranceSeconds !== "number" || !Number.isFinite(clockToleranceSeconds) || clockToleranceSeconds < 0) {
    throw new TypeError("options.clockToleranceSeconds must be a non-negative number of seconds");
  }
  const authorization = options.authorization;
  if (authorization !== undefined) {
    if (typeof authorization !== "object" || authorization === null) throw new TypeError("options.authorization must be an object");
    claimName(authorization.claim, "options.authorization.claim");
    if (authorization.prefix !== undefined && typeof authorization.prefix !== "string")
      throw new TypeError("options.authorization.prefix must be a string");
  }
  const refresh = options.refresh ?? {};
  const checked = {
    cooldownMs: refresh.cooldownMs ?? JWT_DEFAULTS.jwksCooldownMs,
    maxAgeMs: refresh.maxAgeMs ?? JWT_DEFAULTS.jwksMaxAgeMs,
    timeoutMs: refresh.timeoutMs ?? JWT_DEFAULTS.jwksTimeoutMs,
  };
  for (const [name, value] of Object.entries(checked)) {
    if (!Number.isSafeInteger(value) || value < 0) throw new TypeError(`options.refresh.${name} must be a non-negative integer (ms)`);
  }
  return {
    algorithms,
    issuers: names(options.issuer, "options.issuer"),
    audiences: names(options.audience, "options.audience"),
    clockToleranceSeconds,
    principalClaim: claimName(options.principalClaim ?? JWT_DEFAULTS.principalClaim, "options.principalClaim"),
    accountClaim: claimName(options.accountClaim ?? JWT_DEFAULTS.accountClaim, "options.accountClaim"),
    authorization:
      authorization === undefined
        ? undefined
        : { claim: authorization.claim, prefix: authorization.prefix ?? JWT_DEFAULTS.authorizationPrefix },
    refresh: checked,
  };
}

function names(value: string | readonly string[] | undefined, option: string): readonly string[] {
  const list = typeof value === "string" ? [value] : value;
  if (!Array.isArray(list) || list.length === 0 || !list.every((item) => typeof item === "string" && item !== "")) {
    throw new TypeError(`${option} is required: a non-empty string or array of non-empty strings`);
  }
  return list;
}

function claimName(value: unknown, option: string): string {
  if (typeof value !== "string" || value === "") throw new TypeError(`${option} must be a non-empty claim name`);
  return value;
}
