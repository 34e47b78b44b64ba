/**
 * The options of the commands that talk to a server (`invoke`, `resume`, `types`, `codegen`), and
 * those `invoke` and `resume` share.
 */
import { Option, type Command } from "commander";
import { DEFAULT_CHECKPOINT_BATCHING } from "../checkpoint/batching.js";
import { parseBoundedByteSize, parseBoundedDuration, parseCount, parseIntervalMs } from "../option-parsers.js";
import {
  DEFAULT_MAX_CATALOGUE_BYTES,
  DEFAULT_RETRIES,
  DEFAULT_TIMEOUT_MS,
  MAX_CATALOGUE_BYTES_OPTION,
  type RunOptions,
} from "../options.js";

export const urlOption = () => new Option("--url <url>", "server base URL (http://, https://, ws:// or wss://)");
export const tokenOption = () => new Option("--token <token>", "bearer token sent to the server");

/** How long a command may wait for the server's first answer (the discovery request, a connection). */
export const timeoutOption = (description: string) =>
  new Option("--timeout <duration>", `${description}; up to 1h`)
    .argParser(parseBoundedDuration(1, 3_600_000, "at most 1h: 500ms, 30s, 5m"))
    .default(DEFAULT_TIMEOUT_MS, "30s");

/**
 * The bound of the catalogue read (`GET /v1/agents/types`): a server may serve more than the
 * default, and then only this flag lets the command read it.
 */
export const maxCatalogueBytesOption = () =>
  new Option(
    "--max-catalogue-bytes <size>",
    `the largest catalogue (discovery response) to read, up to ${MAX_CATALOGUE_BYTES_OPTION / 2 ** 20}MiB: 16MiB, 64MiB`,
  )
    .argParser(parseBoundedByteSize(MAX_CATALOGUE_BYTES_OPTION, `at most ${MAX_CATALOGUE_BYTES_OPTION / 2 ** 20}MiB: 16MiB, 64MiB`))
    .default(DEFAULT_MAX_CATALOGUE_BYTES, `${DEFAULT_MAX_CATALOGUE_BYTES / 2 ** 20}MiB`);

/** The options `invoke` and `resume` share, added to `command`. */
export function addRunOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        "--output <format>",
        'auto: a single output stream bare (strings as lines, bytes raw, other items as JSON lines), several as {"stream","item"} lines; lines: always {"stream","item"} lines; json: one JSON event per line for everything',
      )
        .choices(["auto", "lines", "json"])
        .default("auto"),
    )
    .addOption(
      new Option("--result <where>", "with bare output: print the result (what is not the stream) on stderr, or not at all")
        .choices(["stderr", "none"])
        .default("stderr"),
    )
    .option("--no-progress", "never draw progress (drawn only when stderr is a terminal and stdout is not)")
    .addOption(
      new Option(
        "--checkpoint-interval <duration>",
        "write the checkpoint at most this long after an item was printed (0: after every item)",
      )
        .argParser(parseIntervalMs)
        .default(DEFAULT_CHECKPOINT_BATCHING.intervalMs, `${DEFAULT_CHECKPOINT_BATCHING.intervalMs}ms`),
    )
    .addOption(
      new Option("--checkpoint-items <n>", "write the checkpoint at least every n printed items (1: after every item)")
        .argParser(parseCount(1, 1_000_000))
        .default(DEFAULT_CHECKPOINT_BATCHING.maxItems),
    )
    .addOption(
      new Option("--retries <n>", "reconnect attempts without progress before giving up (0: never reconnect)")
        .argParser(parseCount(0, 1_000))
        .default(DEFAULT_RETRIES),
    )
    .addOption(
      timeoutOption(
        "how long the server may take to accept a connection or answer its first message (then retried), and the discovery request",
      ),
    )
    .addOption(maxCatalogueBytesOption())
    .addOption(urlOption())
    .addOption(tokenOption());
}

/** commander's parsed values of addRunOptions, as RunOptions. */
export function runOptionsOf(parsed: Record<string, unknown>): RunOptions {
  const { checkpointInterval, checkpointItems, timeout, ...rest } = parsed;
  return {
    ...(rest as Omit<RunOptions, "checkpointBatching" | "timeoutMs">),
    checkpointBatching: { intervalMs: checkpointInterval as number, maxItems: checkpointItems as number },
    timeoutMs: timeout as number,
  };
}
