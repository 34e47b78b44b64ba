/**
 * Verification keys from a JWKS file on disk: read once when created (a file
 * that cannot be read or is not a JWKS fails then, naming the file), and
 * read again when its copy is older than `maxAgeMs` or a token names a key
 * it lacks, at most once per `cooldownMs`: rotating keys means rewriting the
 * file, and no restart is needed. A re-read that fails keeps the keys read
 * before (logged), so a half-written file does not lock every caller out.
 */
import { readFileSync, statSync } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import {
  createLocalJWKSet,
  errors,
  type FlattenedJWSInput,
  type JSONWebKeySet,
  type JWSHeaderParameters,
  type JWTVerifyGetKey,
} from "jose";
import type { Logger } from "../options.js";

/** Largest JWKS file read (1 MiB): a key set is a few kilobytes. */
export const MAX_JWKS_FILE_BYTES = 1024 * 1024;

export interface JwksFileOptions {
  readonly path: string;
  readonly cooldownMs: number;
  readonly maxAgeMs: number;
  readonly now: () => number;
  readonly logger: Logger;
}

type KeySet = ReturnType<typeof createLocalJWKSet>;

/** Parses a JWKS document; throws a TypeError saying what is wrong (never quoting the text). */
export function parseJwks(text: string, source: string): KeySet {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new TypeError(`${source} is not JSON`);
  }
  const keys = (parsed as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || keys.some((key) => typeof key !== "object" || key === null || Array.isArray(key))) {
    throw new TypeError(`${source} is not a JWKS: it needs a "keys" array of JWK objects`);
  }
  try {
    return createLocalJWKSet(parsed as JSONWebKeySet);
  } catch (error) {
    throw new TypeError(`${source} is not a valid JWKS (${(error as Error).message})`);
  }
}

function readSync(path: string): KeySet {
  let text: string;
  try {
    if (statSync(path).size > MAX_JWKS_FILE_BYTES) throw new TypeError(`the JWKS file ${path} is larger than ${MAX_JWKS_FILE_BYTES} bytes`);
    text = readFileSync(path, "utf8");
  } catch (error) {
    if (error instanceof TypeError) throw error;
    throw new TypeError(`the JWKS file ${path} cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  return parseJwks(text, `the JWKS file ${path}`);
}

async function read(path: string): Promise<KeySet> {
  const info = await stat(path);
  if (info.size > MAX_JWKS_FILE_BYTES) throw new TypeError(`the JWKS file ${path} is larger than ${MAX_JWKS_FILE_BYTES} bytes`);
  return parseJwks(await readFile(path, "utf8"), `the JWKS file ${path}`);
}

/** A jose key resolver over the file. */
export function jwksFile(options: JwksFileOptions): JWTVerifyGetKey {
  const { path, cooldownMs, maxAgeMs, now, logger } = options;
  let keys = readSync(path);
  let readAt = now();
  let reading: Promise<void> | undefined;

  /** Reads the file again (one read at a time); a failure keeps the current keys. */
  const reload = (): Promise<void> =>
    (reading ??= read(path)
      .then((fresh) => {
        keys = fresh;
      })
      .catch((error: unknown) => {
        logger.warn("cannot re-read the JWKS file; keeping the keys read before", {
          event: "auth.jwks-file-unreadable",
          path,
          error: error instanceof TypeError ? error.message : String((error as NodeJS.ErrnoException).code ?? error),
        });
      })
      .finally(() => {
        readAt = now();
        reading = undefined;
      }));

  return async (header: JWSHeaderParameters, token: FlattenedJWSInput) => {
    if (now() - readAt >= maxAgeMs) await reload();
    try {
      return await keys(header, token);
    } catch (error) {
      if (!(error instanceof errors.JWKSNoMatchingKey) || now() - readAt < cooldownMs) throw error;
      await reload();
      return keys(header, token);
    }
  };
}
