/**
 * Verification keys fetched from a JWKS URL: fetched when a token first
 * needs them, again when the copy is older than `maxAgeMs`, and when a token
 * names a key it lacks once `cooldownMs` has passed since the last fetch. A
 * caller decides when that is (any `kid` it makes up, any time), so a failing
 * identity provider must not be asked once per handshake either: after a
 * fetch that failed, nothing is fetched for `cooldownMs`. Meanwhile the keys
 * had before are used (a token naming an unknown key is refused), and while
 * no key set was ever had the handshake fails `internal-error` without a
 * fetch. A failure is logged.
 */
import { errors, type FlattenedJWSInput, type JWSHeaderParameters, type JWTVerifyGetKey } from "jose";
import type { Logger } from "../options.js";
import { boundedFetch } from "./bounded-fetch.js";
import { parseJwks } from "./jwks-file.js";

export interface JwksUrlOptions {
  readonly url: URL;
  readonly cooldownMs: number;
  readonly maxAgeMs: number;
  readonly timeoutMs: number;
  readonly maxBytes: number;
  readonly now: () => number;
  readonly logger: Logger;
}

type KeySet = ReturnType<typeof parseJwks>;

/** A jose key resolver over the URL. */
export function jwksUrl(options: JwksUrlOptions): JWTVerifyGetKey {
  const { url, cooldownMs, maxAgeMs, timeoutMs, now, logger } = options;
  const fetchBounded = boundedFetch(options.maxBytes);
  let keys: KeySet | undefined;
  /** When the last fetch started, whatever its outcome; undefined before the first. */
  let attemptedAt: number | undefined;
  /** When the last fetch started, if it failed. */
  let failedAt: number | undefined;
  /** When the keys were fetched. */
  let fetchedAt = 0;
  let fetching: Promise<void> | undefined;
  let lastFailure = "";

  const fetchKeys = async (): Promise<void> => {
    const response = await fetchBounded(url.href, {
      method: "GET",
      headers: new Headers({ accept: "application/json, application/jwk-set+json" }),
      // A redirect is the identity provider's mistake or someone else's answer: not followed.
      redirect: "manual",
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (response.status !== 200) throw new Error(`the key set's URL answered ${response.status}`);
    keys = parseJwks(await response.text(), "the key set's URL");
    fetchedAt = now();
  };

  /** Fetches the set again (one fetch at a time); a failure keeps the keys had before. */
  const refresh = (): Promise<void> =>
    (fetching ??= (async () => {
      attemptedAt = now();
      try {
        await fetchKeys();
        failedAt = undefined;
      } catch (error) {
        failedAt = attemptedAt;
        lastFailure = error instanceof Error ? error.name : "error";
        logger.warn("cannot fetch the JWKS; keeping the keys had before", {
          event: "auth.jwks-fetch-failed",
          error: error instanceof Error ? error.message : String(error),
        });
      } finally {
        fetching = undefined;
      }
    })());

  const cooledDown = (since: number | undefined): boolean => since === undefined || now() - since >= cooldownMs;

  return async (header: JWSHeaderParameters, token: FlattenedJWSInput) => {
    // A set that is still fresh is used while a refresh (for a key it lacks) is under way: a made-up
    // `kid` sent to an identity provider that hangs must not hold every other handshake.
    if (keys === undefined || now() - fetchedAt >= maxAgeMs) {
      if (fetching !== undefined) await fetching;
      else if (cooledDown(failedAt)) await refresh();
    }
    if (keys === undefined) throw new KeySetUnavailable(lastFailure);
    try {
      return await keys(header, token);
    } catch (error) {
      if (!(error instanceof errors.JWKSNoMatchingKey) || !cooledDown(attemptedAt)) throw error;
      await refresh();
      return keys(header, token);
    }
  };
}

/**
 * No key set was ever had: not the caller's fault (jwt-auth.ts answers `internal-error`). Named
 * after the last fetch's failure (`TypeError`, `RangeError`, …), which the handshake's log shows.
 */
class KeySetUnavailable extends Error {
  constructor(failure: string) {
    super("the key set could not be fetched");
    this.name = failure === "" ? "Error" : failure;
  }
}
