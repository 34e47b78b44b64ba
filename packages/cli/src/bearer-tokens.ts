/**
 * The static bearer tokens `serve` accepts, gathered from `--token` flags,
 * the `GOLEM_STREAM_TOKEN` environment variable and a `--token-file`. When
 * none is given, a random token is created once and kept in the data
 * directory, so a restarted server accepts the clients it accepted before.
 */
import { randomBytes } from "node:crypto";
import { mkdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { replaceFileAtomically } from "./checkpoint/atomic-file.js";
import { usageError } from "./exit-codes.js";

/** RFC 6750 `b64token`: what may follow `Bearer ` in an Authorization header. */
const BEARER_TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;
const MAX_TOKEN_LENGTH = 4096;
const MAX_TOKEN_FILE_BYTES = 1024 * 1024;
export const GENERATED_TOKEN_FILE = "bearer-token";

export function checkBearerToken(token: string, source: string): string {
  if (token.length === 0 || token.length > MAX_TOKEN_LENGTH || !BEARER_TOKEN.test(token)) {
    throw usageError(
      `${source}: a bearer token is 1..${MAX_TOKEN_LENGTH} characters of A-Z a-z 0-9 - . _ ~ + / (then optional =)`,
    );
  }
  return token;
}

/** One token per line; blank lines and lines starting with `#` are ignored. */
export async function readTokenFile(path: string): Promise<string[]> {
  const info = await stat(path).catch((cause: unknown) => {
    throw usageError(`--token-file ${path}: cannot read it`, cause);
  });
  if (info.size > MAX_TOKEN_FILE_BYTES) throw usageError(`--token-file ${path}: larger than 1 MiB`);
  const text = await readFile(path, "utf8");
  return text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((line, index) => checkBearerToken(line, `--token-file ${path}, token ${index + 1}`));
}

export interface TokenSources {
  readonly flags: readonly string[];
  readonly env: string | undefined;
  readonly file: string | undefined;
}

export interface ServeTokens {
  readonly tokens: readonly string[];
  /** Set when the token was generated or loaded from the data directory. */
  readonly generatedFile?: string;
}

/**
 * The static tokens given; with none, the generated one, unless `generate`
 * is false (with `--jwt-jwks`, where JWTs are the credential and a token
 * nobody asked for would be a way in beside them): then none.
 */
export async function resolveServeTokens(sources: TokenSources, dataDir: string, generate = true): Promise<ServeTokens> {
  const tokens = sources.flags.map((t) => checkBearerToken(t, "--token"));
  if (sources.env !== undefined && sources.env !== "") tokens.push(checkBearerToken(sources.env, "GOLEM_STREAM_TOKEN"));
  if (sources.file !== undefined) tokens.push(...(await readTokenFile(sources.file)));
  if (tokens.length > 0 || !generate) return { tokens: [...new Set(tokens)] };
  const generatedFile = join(dataDir, GENERATED_TOKEN_FILE);
  return { tokens: [await loadOrCreateToken(generatedFile)], generatedFile };
}

async function loadOrCreateToken(path: string): Promise<string> {
  const existing = await readFile(path, "utf8").catch((error: unknown) => {
    if ((error as { code?: unknown }).code === "ENOENT") return undefined;
    throw error;
  });
  if (existing !== undefined) return checkBearerToken(existing.trim(), path);
  const token = randomBytes(24).toString("base64url");
  await mkdir(join(path, ".."), { recursive: true, mode: 0o700 });
  await replaceFileAtomically(path, `${token}\n`);
  return token;
}
