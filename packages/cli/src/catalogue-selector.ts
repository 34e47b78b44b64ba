/**
 * Which catalogue a command asks the server for (`-a/--application`, `-e/--environment`): the
 * flag, then GOLEM_STREAM_APPLICATION / GOLEM_STREAM_ENVIRONMENT, then the demo's `demo/default`.
 * The variables let a shell (or a project's .env) aim every command at its own catalogue once,
 * as GOLEM_STREAM_URL and GOLEM_STREAM_TOKEN do for the server.
 */
import { Option } from "commander";
import { shellWord } from "./io/shell-word.js";
import { DEFAULT_MAX_CATALOGUE_BYTES, DEFAULT_URL } from "./options.js";

export const DEFAULT_APPLICATION = "demo";
export const DEFAULT_ENVIRONMENT = "default";

/** Where to change the selector, for messages about a catalogue the server does not have. */
export const SELECTOR_HINT =
  "choose them with -a/--application and -e/--environment, or GOLEM_STREAM_APPLICATION and GOLEM_STREAM_ENVIRONMENT";

export function applicationOption(): Option {
  return new Option("-a, --application <name>", `application (default: $GOLEM_STREAM_APPLICATION, then ${DEFAULT_APPLICATION})`);
}

export function environmentOption(): Option {
  return new Option("-e, --environment <name>", `environment (default: $GOLEM_STREAM_ENVIRONMENT, then ${DEFAULT_ENVIRONMENT})`);
}

/** The parsed options with `application` and `environment` decided (flag, variable, default). */
export function withCatalogueSelector<T extends { readonly application?: string; readonly environment?: string }>(
  options: T,
  env: Readonly<Record<string, string | undefined>>,
): T & { readonly application: string; readonly environment: string } {
  return {
    ...options,
    application: options.application ?? nonEmpty(env["GOLEM_STREAM_APPLICATION"]) ?? DEFAULT_APPLICATION,
    environment: options.environment ?? nonEmpty(env["GOLEM_STREAM_ENVIRONMENT"]) ?? DEFAULT_ENVIRONMENT,
  };
}

/**
 * `golem-stream types` as a hint spells it (`see golem-stream types …`): with every option that
 * decided which catalogue this command read and differs from its default, so that the command,
 * run as printed, lists that catalogue and not the demo's. Never the bearer token: hints are not
 * the place for a secret, and one set in GOLEM_STREAM_TOKEN is in effect anyway.
 */
export function typesCommand(read: HintedConnection & { readonly application: string; readonly environment: string }): string {
  const words = ["golem-stream", "types"];
  if (read.application !== DEFAULT_APPLICATION) words.push("-a", shellWord(read.application));
  if (read.environment !== DEFAULT_ENVIRONMENT) words.push("-e", shellWord(read.environment));
  return [...words, ...connectionWords(read)].join(" ");
}

/** The server a command talked to (`--url`, or GOLEM_STREAM_URL) and its `--max-catalogue-bytes`, for the commands its hints spell. */
export interface HintedConnection {
  readonly url: string;
  readonly maxCatalogueBytes: number;
}

/**
 * `golem-stream resume FILE` as a hint spells it, `command` being how the user types the CLI
 * (io/command-name.ts): with the `--url` and `--max-catalogue-bytes` in effect that differ from
 * their defaults, as `typesCommand`, so that the command, run as printed, continues the invocation
 * on the server that runs it. Never the bearer token (`typesCommand`).
 */
export function resumeCommand(file: string, used: HintedConnection | undefined, command = "golem-stream"): string {
  return [command, "resume", shellWord(file), ...(used === undefined ? [] : connectionWords(used))].join(" ");
}

function connectionWords(used: HintedConnection): string[] {
  const words: string[] = [];
  if (used.url !== DEFAULT_URL) words.push("--url", shellWord(used.url));
  if (used.maxCatalogueBytes !== DEFAULT_MAX_CATALOGUE_BYTES) words.push("--max-catalogue-bytes", String(used.maxCatalogueBytes));
  return words;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === "" ? undefined : value;
}
