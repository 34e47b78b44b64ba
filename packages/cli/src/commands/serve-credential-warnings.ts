/**
 * What `serve` says about how its credentials are kept, before it listens:
 * bearer tokens short enough to guess, tokens given on the command line
 * (every user of the machine reads them in `ps`), and keyring or token
 * files that group or others may read. Each is a `WARNING:` line of the
 * banner and a `credentials.weak` log line; with `--strict-permissions` a
 * readable file is a usage error instead (nothing starts).
 */
import { stat } from "node:fs/promises";
import { usageError } from "../exit-codes.js";

/** Shorter tokens get a warning: 16 characters of the bearer alphabet are about 96 bits at best. */
export const MIN_TOKEN_CHARACTERS = 16;

export interface CredentialFacts {
  /** Tokens given with `--token`. */
  readonly flagTokens: readonly string[];
  /** Every token accepted, with where it came from, for the length check (a generated one is long). */
  readonly tokens: readonly { readonly token: string; readonly source: string }[];
  /** Files holding secrets: the keyring, the token file, the generated token. */
  readonly files: readonly { readonly path: string; readonly what: string }[];
  readonly strictPermissions: boolean;
}

export async function credentialWarnings(facts: CredentialFacts): Promise<string[]> {
  const warnings: string[] = [];
  if (facts.flagTokens.length > 0) {
    warnings.push(
      "--token puts the bearer token in the process list, where every user of this machine can read it (ps); use --token-file FILE or the GOLEM_STREAM_TOKEN environment variable",
    );
  }
  for (const { token, source } of facts.tokens) {
    if (token.length < MIN_TOKEN_CHARACTERS) {
      warnings.push(
        `a bearer token from ${source} has ${token.length} characters, short enough to guess; use ${MIN_TOKEN_CHARACTERS} or more (the generated one has 32)`,
      );
    }
  }
  for (const { path, what } of facts.files) {
    const mode = await stat(path).then(
      (stats) => stats.mode & 0o777,
      () => undefined,
    );
    if (mode === undefined || (mode & 0o077) === 0) continue;
    const problem = `the ${what} ${path} is readable by group or others (mode ${mode.toString(8).padStart(4, "0")}): \`chmod 600 ${path}\` keeps it to you`;
    if (facts.strictPermissions) throw usageError(`${problem} (--strict-permissions refuses to start)`);
    warnings.push(problem);
  }
  return warnings;
}
