/**
 * The static bearer tokens `serve` accepts, gathered from `--token` flags,
 * the `GOLEM_STREAM_TOKEN` environment variable and a `--token-file`. When
 * none is given, a random token is created once and kept in the data
 * directory, so a restarted server accepts the clients it accepted before.
 */
import { randomBytes } from "node:crypto";
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { replaceFileAtomically } from "./checkpoint/atomic-file.js";
import { usageError } from "./exit-codes.js";
import { makeDirectory } from "./make-directory.js";

/** RFC 6750 `b64token`: what may follow `Bearer ` in an Authorization header. */
const BEARER_TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;
const MAX_TOKEN_LENGTH = 4096;
const MAX_TOKEN_FILE_BYTES = 1024 * 1024;
export const GENERATED_TOKEN_FILE = "bearer-token";

export function checkBearerToken(token: string, source: string): string {
  if (token.length === 0 || token.length > MAX_TOKEN_LENGTH || !BEARER_TOKEN.test(token)) {
    throw usageError(`${source}: a bearer token is 1..${MAX_TOKEN_LENGTH} characters of A-Z a-z 0-9 - . _ ~ + / (then optional =)`);
  }
  return token;
}

/**
 * The server's rule for the name of an account that groups tokens
 * (`checkTokenAccount` in @golem-stream/server), checked here too so that a
 * bad file is a usage error naming its line before anything starts.
 */
const TOKEN_ACCOUNT = /^[A-Za-z0-9._-]{1,64}$/;

/** The tokens of a token file, and the account each grouped one is in. */
export interface TokenFile {
  readonly tokens: readonly string[];
  /** Token to account, for the lines `ACCOUNT: TOKEN`; a token alone is in its own account. */
  readonly accounts: ReadonlyMap<string, string>;
}

/**
 * One token per line, alone (its own account) or as `ACCOUNT: TOKEN` (in
 * that account, with every other token of it; a bearer token cannot hold
 * `:`, so a file of bare tokens reads as before). Blank lines and lines
 * starting with `#` are ignored.
 */
export async function readTokenFile(path: string): Promise<TokenFile> {
  const info = await stat(path).catch((cause: unknown) => {
    const code = (cause as { code?: unknown }).code;
    throw usageError(`--token-file ${path}: cannot read it${typeof code === "string" ? ` (${code})` : ""}`, cause);
  });
  if (info.size > MAX_TOKEN_FILE_BYTES) throw usageError(`--token-file ${path}: larger than 1 MiB`);
  const text = await readFile(path, "utf8");
  const tokens: string[] = [];
  const accounts = new Map<string, string>();
  const seen = new Map<string, string | undefined>();
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) return;
    const where = `--token-file ${path}, line ${index + 1}`;
    const colon = line.indexOf(":");
    const account = colon < 0 ? undefined : line.slice(0, colon).trim();
    const token = checkBearerToken(colon < 0 ? line : line.slice(colon + 1).trim(), where);
    if (account !== undefined && (!TOKEN_ACCOUNT.test(account) || account.startsWith("token-"))) {
      throw usageError(`${where}: an account is 1..64 of A-Z a-z 0-9 . _ - and does not start with "token-", as in "team-a: TOKEN"`);
    }
    if (seen.has(token) && seen.get(token) !== account)
      throw usageError(`${where}: this token is given in another account on an earlier line`);
    seen.set(token, account);
    tokens.push(token);
    if (account !== undefined) accounts.set(token, account);
  });
  return { tokens, accounts };
}

export interface TokenSources {
  readonly flags: readonly string[];
  readonly env: string | undefined;
  readonly file: string | undefined;
}

export interface ServeTokens {
  readonly tokens: readonly string[];
  /** The token file's grouped tokens: token to account (every other token is its own account). */
  readonly accounts: ReadonlyMap<string, string>;
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
  const file = sources.file === undefined ? undefined : await readTokenFile(sources.file);
  if (file !== undefined) tokens.push(...file.tokens);
  const accounts = file?.accounts ?? new Map<string, string>();
  if (tokens.length > 0 || !generate) return { tokens: [...new Set(tokens)], accounts };
  // A token file was given to say which tokens are let in: one left empty must not let in a token
  // nobody was handed instead (in a cluster, one node's own, which every other node refuses).
  if (sources.file !== undefined)
    throw usageError(
      `--token-file ${sources.file} holds no token, and neither --token nor $GOLEM_STREAM_TOKEN gives one: add one (a line per token), or leave --token-file out to use the token generated in the data directory`,
    );
  const generatedFile = join(dataDir, GENERATED_TOKEN_FILE);
  return { tokens: [await loadOrCreateToken(generatedFile)], accounts, generatedFile };
}

/**
 * A cluster node is given its credentials: a token generated into one node's
 * data directory is known to that node alone, so every other node would
 * refuse it (401), and a client resuming at another node would fail.
 */
export function checkClusterCredentials(sources: TokenSources, jwks: string | undefined): void {
  const given = sources.flags.length > 0 || (sources.env !== undefined && sources.env !== "") || sources.file !== undefined;
  if (given || jwks !== undefined) return;
  throw usageError(
    "a cluster node generates no token (the other nodes would refuse it): give every node the same --token-file FILE (or --token, $GOLEM_STREAM_TOKEN) or --jwt-jwks",
  );
}

/**
 * The tokens as `startEmbeddedServer` takes them: a grouped one with its
 * account (also when `--token` gives it too: the file says where it
 * belongs), every other alone.
 */
export function staticTokens(served: ServeTokens): (string | { readonly token: string; readonly account: string })[] {
  return served.tokens.map((token) => {
    const account = served.accounts.get(token);
    return account === undefined ? token : { token, account };
  });
}

async function loadOrCreateToken(path: string): Promise<string> {
  const existing = await readFile(path, "utf8").catch((error: unknown) => {
    if ((error as { code?: unknown }).code === "ENOENT") return undefined;
    throw error;
  });
  if (existing !== undefined) return checkBearerToken(existing.trim(), path);
  const token = randomBytes(24).toString("base64url");
  await makeDirectory(join(path, ".."), 0o700);
  await replaceFileAtomically(path, `${token}\n`);
  return token;
}
