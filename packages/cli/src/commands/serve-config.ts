/**
 * `serve --config FILE`: serve's options from a JSON file, for a server run
 * by a service manager with more settings than a unit's command line holds
 * comfortably. The file is the command line in another form, read by the
 * same parsers, so it means exactly what the flags mean and every flag, old
 * or new, has its key:
 *
 *   { "port": 8443, "host": "0.0.0.0", "tls-cert": "fullchain.pem",
 *     "tls-key": "key.pem", "token-file": "tokens", "metrics": true,
 *     "allow-origin": ["https://app.example"], "retention": "7d" }
 *
 * - A member is a long option without its dashes; a switch is `true` or
 *   `false` (`"console": false` for `--no-console`); a repeatable option an
 *   array; a number may be a JSON number or a string (`"16GiB"`).
 * - Precedence: a flag on the command line, then the environment
 *   (`GOLEM_STREAM_STORE`), then the file, then the default. A repeatable
 *   option given on the command line replaces the file's list.
 * - Relative paths in the file are relative to the file's directory, as a
 *   flag's are to the working directory: the file can be moved with what it
 *   names, and a service manager's working directory does not matter.
 * - No bearer tokens in it (`token`): they belong in a `token-file`, whose
 *   permissions serve checks; a config file is copied and shown around.
 * - Anything else (an unknown member, a wrong type, a value the flag would
 *   refuse) is a usage error naming the file and the member, before
 *   anything starts.
 */
import { readFile, stat } from "node:fs/promises";
import { dirname, isAbsolute, resolve } from "node:path";
import type { Command, Option } from "commander";
import { parseStrictJson } from "@golem-stream/wire";
import { CliError, usageError } from "../exit-codes.js";

/** A serve configuration is a few hundred bytes; a file far larger is not one. */
const MAX_CONFIG_BYTES = 1024 * 1024;

/** Options whose value names a file or directory. */
const PATH_OPTIONS = new Set([
  "token-file",
  "tls-cert",
  "tls-key",
  "tls-key-passphrase-file",
  "agents",
  "data-dir",
  "keyring",
  "log-file",
  "jwt-jwks",
]);

/** Members the file may not set, and why. */
const REFUSED: ReadonlyMap<string, string> = new Map([
  ["config", "a config file cannot name another"],
  [
    "token",
    'bearer tokens go in a token file ("token-file": "tokens"), whose permissions serve checks, not in a file that is copied and shown around',
  ],
]);

/** Each member's option, and the environment variable that overrides it. */
const ENV_OVERRIDES: ReadonlyMap<string, string> = new Map([["store", "GOLEM_STREAM_STORE"]]);

type Env = Readonly<Record<string, string | undefined>>;

/**
 * Sets `command`'s options from the JSON object in `file` where neither the
 * command line nor the environment set them. Throws a usage error naming the
 * file (and the member) for anything it cannot take.
 */
export async function applyConfigFile(command: Command, file: string, env: Env): Promise<void> {
  const path = resolve(file);
  const json = await readConfig(path, file);
  const byKey = new Map(command.options.map((option) => [keyOf(option), option]));
  for (const [key, raw] of Object.entries(json)) {
    const refusal = REFUSED.get(key);
    if (refusal !== undefined) throw usageError(`${file}: "${key}": ${refusal}`);
    const option = byKey.get(key);
    if (option === undefined) throw usageError(`${file}: "${key}" is not an option of serve${suggestion(key, byKey)}`);
    const attribute = option.attributeName();
    if (command.getOptionValueSource(attribute) === "cli") continue;
    const overriding = ENV_OVERRIDES.get(key);
    if (overriding !== undefined && (env[overriding] ?? "") !== "") continue;
    const value = optionValue(option, raw, `${file}: "${key}"`, dirname(path));
    command.setOptionValueWithSource(attribute, value, "config");
  }
}

/**
 * `error` as the config file's: a usage error that names an option by its flag (`--tls-cert X:
 * cannot read it`) whose value came from `file` says so (`serve.json: "tls-cert": X: cannot read
 * it`), as the file's own refusals do, since the flag was never typed. Anything else as it is.
 */
export function namedByConfig(error: unknown, command: Command, file: string): unknown {
  if (!(error instanceof CliError)) return error;
  const match = /^--([a-z][a-z0-9-]*) ([\s\S]*)$/.exec(error.message);
  if (match === null) return error;
  const [, key = "", rest = ""] = match;
  const option = command.options.find((candidate) => keyOf(candidate) === key);
  if (option === undefined || command.getOptionValueSource(option.attributeName()) !== "config") return error;
  return new CliError(error.exitCode, `${file}: "${key}": ${rest}`, {
    cause: error,
    retryable: error.retryable,
    ...(error.code === undefined ? {} : { code: error.code }),
  });
}

async function readConfig(path: string, shown: string): Promise<Record<string, unknown>> {
  const unreadable = (error: unknown): never => {
    throw usageError(`--config ${shown}: cannot read it (${(error as { code?: string }).code ?? String(error)})`, error);
  };
  const info = await stat(path).catch(unreadable);
  if (!info.isFile()) throw usageError(`--config ${shown}: not a file`);
  if (info.size > MAX_CONFIG_BYTES)
    throw usageError(`--config ${shown}: ${info.size} bytes, more than a config file's ${MAX_CONFIG_BYTES}`);
  const text = await readFile(path, "utf8").catch(unreadable);
  let json: unknown;
  try {
    // Strict: a member given twice is refused, where JSON.parse would keep the last silently.
    json = parseStrictJson(text);
  } catch (error) {
    const why = (error instanceof Error ? error.message : String(error)).replace(/^message /, "it ");
    throw usageError(`--config ${shown}: not strict JSON (${why})`, error);
  }
  if (typeof json !== "object" || json === null || Array.isArray(json))
    throw usageError(`--config ${shown}: a JSON object of serve's options, e.g. {"port": 8080, "token-file": "tokens"}`);
  return json as Record<string, unknown>;
}

/** The member's name for an option: its long flag without the dashes, and without `no-` for a negating switch. */
function keyOf(option: Option): string {
  const long = (option.long ?? "").replace(/^--/, "");
  return option.negate ? long.replace(/^no-/, "") : long;
}

/** What the flag would have set for `raw`, through the flag's own parser. */
function optionValue(option: Option, raw: unknown, where: string, base: string): unknown {
  if (option.negate || option.isBoolean()) {
    if (typeof raw !== "boolean") throw usageError(`${where}: true or false (a switch), not ${JSON.stringify(raw)}`);
    return raw;
  }
  const repeatable = Array.isArray(option.defaultValue);
  const items = repeatable && Array.isArray(raw) ? (raw as unknown[]) : [raw];
  if (!repeatable && Array.isArray(raw)) throw usageError(`${where}: one value, not a list (the flag is not repeatable)`);
  let value: unknown = repeatable ? [] : option.defaultValue;
  for (const item of items) {
    const text = textOf(item, where);
    const given = PATH_OPTIONS.has(keyOf(option)) ? pathIn(base, text) : text;
    try {
      value = option.parseArg === undefined ? (repeatable ? [...(value as string[]), given] : given) : option.parseArg(given, value);
    } catch (error) {
      throw usageError(`${where}: ${error instanceof Error ? error.message : String(error)}`, error);
    }
  }
  return value;
}

function textOf(item: unknown, where: string): string {
  if (typeof item === "string") return item;
  if (typeof item === "number" && Number.isFinite(item)) return String(item);
  throw usageError(`${where}: a string or a number, not ${JSON.stringify(item)}`);
}

/** A relative path as seen from the config file's directory; a URL (`--jwt-jwks`) as it is. */
function pathIn(base: string, text: string): string {
  if (text === "" || isAbsolute(text) || /^https?:\/\//i.test(text)) return text;
  return resolve(base, text);
}

/**
 * `; did you mean "max-connections"?` for a member one or two edits from an option, else a pointer
 * to the help. A negating switch's flag (`no-console`) is told its member (`"console": false`); a
 * near miss of a member the file may not have (`tokens`) is told what to use instead.
 */
function suggestion(key: string, options: ReadonlyMap<string, Option>): string {
  const negated = key.startsWith("no-") ? options.get(key.slice("no-".length)) : undefined;
  if (negated?.negate === true) return `; a switch's member is its name: "${key.slice("no-".length)}": false`;
  let best: string | undefined;
  let bestDistance = 3;
  for (const candidate of [...options.keys(), ...REFUSED.keys()]) {
    const distance = editDistance(key, candidate);
    if (distance < bestDistance) [best, bestDistance] = [candidate, distance];
  }
  if (best === undefined) return " (see golem-stream serve --help)";
  return best === "token" ? `; bearer tokens go in a token file: "token-file"` : `; did you mean "${best}"?`;
}

/** Levenshtein distance: insertions, deletions and substitutions. */
function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length]!;
}
