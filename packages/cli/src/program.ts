/**
 * The command line of `golem-stream`: every command, option, default and
 * example in one place (the option types and defaults are options.ts, their
 * parsers option-parsers.ts; commands import those, never this file). Actions load their implementation lazily, so
 * `--help` works (and is fast) even where the server's native SQLite module
 * cannot load.
 */
import { createRequire } from "node:module";
import { Command, CommanderError, Option } from "commander";
import { CliError, EXIT, EXIT_INTERNAL } from "./exit-codes.js";
import type { ExitCode } from "./exit-codes.js";
import type { CliIo } from "./io/cli-io.js";
import { report } from "./io/cli-io.js";
import { commandName, spellCommands } from "./io/command-name.js";
import { parseDuration } from "./duration.js";
import { addServeCommand } from "./commands/serve-command.js";
import { DEFAULT_CHECKPOINT_BATCHING } from "./checkpoint/batching.js";
import {
  DEFAULT_RETRIES,
  DEFAULT_TIMEOUT_MS,
  DEFAULT_URL,
  type CodegenOptions,
  type InvokeOptions,
  type RunOptions,
  type TypesOptions,
} from "./options.js";
import { parseBoundedDuration, parseCount, parseIntervalMs } from "./option-parsers.js";
import { applicationOption, DEFAULT_APPLICATION, DEFAULT_ENVIRONMENT, environmentOption, withCatalogueSelector } from "./catalogue-selector.js";

const CONNECTION_HELP = `
Connection (invoke, resume, types, codegen):
  --url defaults to $GOLEM_STREAM_URL, then ${DEFAULT_URL}
  --token defaults to $GOLEM_STREAM_TOKEN (a static bearer token the server accepts)
  -a/--application and -e/--environment (invoke, types, codegen) default to $GOLEM_STREAM_APPLICATION
  and $GOLEM_STREAM_ENVIRONMENT, then ${DEFAULT_APPLICATION} and ${DEFAULT_ENVIRONMENT}`;

const EXIT_HELP = `
Exit codes:
  0    success
  1    the invocation was accepted but failed (or an output stream ended in error)
  2    usage error: bad option, argument, input file or checkpoint; nothing was sent
  3    rejected by the server (authentication or invocationRejected)
  4    connection lost; \`golem-stream resume <checkpoint>\` continues
  5    conformance: the suite ran and at least one check failed
  70   internal error of the CLI (a bug: please report it with the message)
  74   stdout or the checkpoint could not be written; \`resume\` continues after the last saved item
       (without --checkpoint, a failed stdout cancels the invocation)
  78   serve --agents: the module could not be loaded or its catalogue is invalid; nothing was started
  130  interrupted (SIGINT/SIGTERM): with --checkpoint the invocation keeps running on the
       server (\`resume\` continues it); without, it is cancelled there (a second Ctrl-C stops waiting)
  141  stdout was closed by its reader (\`| head\`): stopped quietly, like a program stopped by SIGPIPE;
       the invocation was cancelled, or with --checkpoint keeps running (\`resume\` continues it)`;

const urlOption = () => new Option("--url <url>", "server base URL (http://, https://, ws:// or wss://)");
const tokenOption = () => new Option("--token <token>", "bearer token sent to the server");
/** The options `invoke` and `resume` share, added to `command`. */
function addRunOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        "--output <format>",
        "auto: a single output stream bare (strings as lines, bytes raw, other items as JSON lines), several as {\"stream\",\"item\"} lines; lines: always {\"stream\",\"item\"} lines; json: one JSON event per line for everything",
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
      new Option("--checkpoint-interval <duration>", "write the checkpoint at most this long after an item was printed (0: after every item)")
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
      new Option("--timeout <duration>", "how long the server may take to accept a connection or answer its first message (then retried), and the discovery request")
        .argParser(parseBoundedDuration(1, 3_600_000, "at most 1h"))
        .default(DEFAULT_TIMEOUT_MS, "30s"),
    )
    .addOption(urlOption())
    .addOption(tokenOption());
}

/** commander's parsed values of addRunOptions, as RunOptions. */
function runOptionsOf(parsed: Record<string, unknown>): RunOptions {
  const { checkpointInterval, checkpointItems, timeout, ...rest } = parsed;
  return {
    ...(rest as Omit<RunOptions, "checkpointBatching" | "timeoutMs">),
    checkpointBatching: { intervalMs: checkpointInterval as number, maxItems: checkpointItems as number },
    timeoutMs: timeout as number,
  };
}

/**
 * Builds the program. `setExitCode` receives the outcome of the action that
 * ran; commander's own exits (help, usage errors) surface as CommanderError.
 */
export function buildProgram(io: CliIo, setExitCode: (code: ExitCode) => void): Command {
  const program = new Command("golem-stream")
    .description(
      "Serve the Golem Stream Session protocol, invoke streaming agent methods, and resume them after a crash.",
    )
    .version(VERSION, "-V, --version")
    .exitOverride()
    // Options after a subcommand are its own (conformance hands them all to the kit).
    .enablePositionalOptions()
    .configureOutput({
      // Help and usage spell the command as it is typed here (`pnpm golem-stream` in a checkout).
      writeOut: (text) => io.stdout.write(spellCommands(text, commandName(io.env))),
      writeErr: (text) => io.stderr.write(spellCommands(text, commandName(io.env))),
      // Like every other failure: one line, the program's name first, and where to look.
      outputError: (text, write) => write(`golem-stream: ${text.replace(/^error: /, "").trim().replace(/\s*\n\s*/g, " ")} (see --help)\n`),
    })
    .addHelpText(
      "after",
      `
Examples:
  $ golem-stream serve --token s3cret
  $ export GOLEM_STREAM_URL=http://127.0.0.1:8080 GOLEM_STREAM_TOKEN=s3cret
  $ golem-stream types
  $ golem-stream invoke echo digest -c '{"name":"me"}' - < big.iso
  $ printf 'one\\ntwo\\n' | golem-stream invoke echo split -c '{"name":"me"}' -
  $ golem-stream invoke echo count -c '{"name":"me"}' 100 50 --checkpoint count.ckpt
  $ golem-stream resume count.ckpt
${EXIT_HELP}`,
    );

  const run = <T>(load: () => Promise<(options: T, io: CliIo) => Promise<ExitCode>>) =>
    async (options: T): Promise<void> => {
      const action = await load();
      setExitCode(await action(options, io));
    };
  /** `run` for the commands that read a catalogue: -a/-e decided from the flag, the environment or the default. */
  const runOnCatalogue = <T extends { readonly application: string; readonly environment: string }>(load: () => Promise<(options: T, io: CliIo) => Promise<ExitCode>>) =>
    async (options: T): Promise<void> => {
      const action = await load();
      setExitCode(await action(withCatalogueSelector(options, io.env), io));
    };

  addServeCommand(program, io, setExitCode);

  const invoke = program
    .command("invoke")
    .description("Call an agent method, streaming stdin into it and its output streams to stdout.")
    .argument("<agent-type>", "agent type, for example echo")
    .argument("<method>", "method name, for example digest")
    .argument("[arguments...]", "one per method parameter, in order: JSON, or - to bind stdin to a stream parameter")
    .addOption(applicationOption())
    .addOption(environmentOption())
    .option("-c, --constructor <json>", "constructor parameters as JSON (an object by field name, or an array)")
    .option("--native", "arguments and --constructor are native SchemaValue JSON ({\"kind\":..,\"value\":..})", false)
    .option("--idempotency-key <key>", "invocation idempotency key (default: a fresh UUID)")
    .option("--phantom-id <uuid>", "phantom agent id")
    .option("--checkpoint <file>", "keep checkpoint v1 here, so `resume` can continue after a crash");
  addRunOptions(invoke)
    .addHelpText(
      "after",
      `
Arguments are plain JSON converted with the method's schema from the server's discovery endpoint
(u64/s64 may be given as strings), or native SchemaValue JSON with --native.
"-" binds stdin to a stream parameter: raw bytes for stream<u8> and stream<binary>, one item per line
for stream<string>. Output: a result with a single output stream prints it bare (strings one per
line, bytes raw, other items one JSON value per line; the rest of the result on stderr, or nowhere
with --result none); several streams print one JSON line per item ({"stream":name,"item":value})
and the result last. --output lines always uses those lines; --output json prints one JSON event
per line for everything (acceptance, items, ends, result, finish or failure with its code).
With --checkpoint the file is written in batches behind stdout (--checkpoint-interval,
--checkpoint-items): a crash repeats what was printed since the last write, never skips anything.
Progress is drawn on stderr when it is a terminal and stdout is not.
${CONNECTION_HELP}

Examples:
  $ golem-stream invoke echo digest -c '{"name":"me"}' - < big.iso
  $ printf 'one\\ntwo\\n' | golem-stream invoke echo split -c '{"name":"me"}' -
  $ golem-stream invoke echo reverse -c '["me"]' - < lines.txt | sort
  $ golem-stream invoke echo count -c '{"name":"me"}' 10 100 --checkpoint count.ckpt
  $ golem-stream invoke echo blobs -c '{"name":"me"}' 1 4096 > blob.bin
  $ golem-stream invoke echo count --native -c '{"kind":"record","value":{"fields":[{"kind":"string","value":"me"}]}}' \\
      '{"kind":"u32","value":3}' '{"kind":"u32","value":0}' --output json
${EXIT_HELP}`,
    )
    .action(async (agentType: string, method: string, args: string[], parsed: Record<string, unknown>) => {
      const { runInvoke } = await import("./commands/invoke.js");
      const constructorJson = Object.hasOwn(parsed, "constructor") ? (parsed["constructor"] as string) : undefined;
      const { constructor: _ignored, ...rest } = parsed;
      const options = withCatalogueSelector({ ...runOptionsOf(rest), ...(constructorJson === undefined ? {} : { constructorJson }) } as InvokeOptions, io.env);
      setExitCode(await runInvoke({ agentType, method, args }, options, io));
    });

  const resume = program
    .command("resume")
    .description("Continue an invocation from a checkpoint after a crash or lost connection, without skipping output.")
    .argument("<checkpoint>", "checkpoint file written by invoke --checkpoint (it is kept up to date)");
  addRunOptions(resume)
    .addHelpText(
      "after",
      `
Output continues after the last item the checkpoint records as delivered; what was printed after the
checkpoint's last write (at most --checkpoint-interval of output) is repeated, nothing is skipped. A checkpoint saved before the start was accepted
holds the frozen start: resume sends exactly that start again (same attempt id), and the server either
replays its acceptance or accepts it now. An invocation that already finished prints its result again
and exits 0.

Input read from stdin is not replayable: after a crash, resume has no source for it, and an input
stream the server had not seen end is cancelled with source-unavailable (the invocation then usually
fails, exit 1). Output the server produced is still delivered.
${CONNECTION_HELP}

Examples:
  $ golem-stream invoke echo count -c '{"name":"me"}' 1000 10 --checkpoint run.ckpt >> out.txt
  $ golem-stream resume run.ckpt >> out.txt
  $ golem-stream resume run.ckpt --url http://other-host:8080 --output json
${EXIT_HELP}`,
    )
    .action(async (file: string, parsed: Record<string, unknown>) => {
      const { runResume } = await import("./commands/resume.js");
      setExitCode(await runResume(file, runOptionsOf(parsed), io));
    });

  const keyring = program
    .command("keyring")
    .description(
      "The signing keys of a serve data directory (keyring.json) or of a --keyring file: list, rotate, activate, drop. Secrets are never printed.",
    )
    .addHelpText(
      "after",
      `
The server reads keyring.json when it starts: restart \`golem-stream serve\` after a change (sessions
survive it). Rotate to sign new tokens with a fresh key; tokens signed before keep verifying as long
as their key stays. Drop an old key only once every invocation started while it was active has
finished and --retention has passed since (a session's stream tokens keep its key for its life).

Examples:
  $ golem-stream keyring list
  $ golem-stream keyring rotate --data-dir ./state
  $ golem-stream keyring drop k-1a2b3c4d --data-dir ./state
  $ golem-stream keyring list --keyring /etc/golem/keyring.json   # a cluster's shared file

A cluster's nodes each read their copy of the --keyring file and restart one at a time, so rotate in
two steps; no call fails on the way:
  $ golem-stream keyring rotate --staged --key-id k-2027 --keyring keyring.json
      copy the file to every node, restart each: all verify k-2027, none signs with it
  $ golem-stream keyring activate k-2027 --keyring keyring.json
      copy the file to every node, restart each: k-2027 signs, the old key verifies
  $ golem-stream keyring drop k-2026 --keyring keyring.json     # later (above); copy, restart each`,
    );
  const dataDirOption = () =>
    new Option("--data-dir <dir>", "the serve data directory (default: $XDG_STATE_HOME/golem-stream or ~/.local/state/golem-stream)");
  const keyringOption = () => new Option("--keyring <file>", "a keyring file (serve --keyring) instead of the data directory's").conflicts("dataDir");
  keyring
    .command("list")
    .description("Show each key id and its role: active (signs new tokens), staged (verifies, signs once activated) or verify-only.")
    .addOption(dataDirOption())
    .addOption(keyringOption())
    .option("--json", "print them as JSON", false)
    .action(async (options: { dataDir?: string; keyring?: string; json: boolean }) => {
      const { runKeyringList } = await import("./commands/keyring.js");
      setExitCode(await runKeyringList(options, io));
    });
  keyring
    .command("rotate")
    .description("Add a fresh active key; the current one becomes verify-only. With --staged, add it staged instead (a cluster's first step).")
    .addOption(dataDirOption())
    .addOption(keyringOption())
    .option("--key-id <id>", "id of the new key (default: a random one)")
    .option("--staged", "add the key staged: it verifies tokens but signs none until `keyring activate`", false)
    .action(async (options: { dataDir?: string; keyring?: string; keyId?: string; staged: boolean }) => {
      const { runKeyringRotate } = await import("./commands/keyring.js");
      setExitCode(await runKeyringRotate(options, io));
    });
  keyring
    .command("activate")
    .description("Make a staged (or verify-only) key the one that signs new tokens; the current one becomes verify-only.")
    .argument("<key-id>", "the key to activate")
    .addOption(dataDirOption())
    .addOption(keyringOption())
    .action(async (keyId: string, options: { dataDir?: string; keyring?: string }) => {
      const { runKeyringActivate } = await import("./commands/keyring.js");
      setExitCode(await runKeyringActivate(keyId, options, io));
    });
  keyring
    .command("drop")
    .description("Remove a verify-only key: tokens it signed stop verifying.")
    .argument("<key-id>", "the key to remove (never the active one)")
    .addOption(dataDirOption())
    .addOption(keyringOption())
    .action(async (keyId: string, options: { dataDir?: string; keyring?: string }) => {
      const { runKeyringDrop } = await import("./commands/keyring.js");
      setExitCode(await runKeyringDrop(keyId, options, io));
    });

  const token = program
    .command("token")
    .description("Operator aids for opaque gai1_ tokens.")
    .addHelpText(
      "after",
      `
Examples:
  $ golem-stream token inspect gai1_AQEC...
  $ jq -r .sessionToken run.ckpt | golem-stream token inspect - --json`,
    );
  token
    .command("inspect")
    .description("Decode a gai1_ token and show its fields. The signature is NOT verified: do not trust the output.")
    .argument("<token>", "a gai1_ session, stream or cursor token, or - to read it from stdin")
    .option("--json", "print the fields as JSON", false)
    .addHelpText(
      "after",
      `
Examples:
  $ golem-stream token inspect gai1_AQEC...
  $ jq -r .sessionToken run.ckpt | golem-stream token inspect - --json`,
    )
    .action(async (value: string, options: { json: boolean }) => {
      const { runTokenInspect } = await import("./commands/token-inspect.js");
      setExitCode(await runTokenInspect(value, options, io));
    });

  program
    .command("conformance")
    .description("Run the protocol's black-box conformance suites: against a server, or against a client through its adapter (needs @golem-stream/conformance).")
    .argument("[args...]", "the suite's arguments, e.g. server --url ws://host:port --token T [--json] [--junit FILE] [--only SECTIONS], or client --adapter CMD [...]")
    .helpOption(false)
    .allowUnknownOption()
    .passThroughOptions()
    .addHelpText(
      "after",
      `
Exit status: 0 every check passed, 5 a check failed, 2 usage.

Examples:
  $ golem-stream conformance server --url ws://127.0.0.1:8080 --token "$GOLEM_STREAM_TOKEN"
  $ golem-stream conformance server --help
  $ golem-stream conformance client --adapter golem-stream-conformance-client-adapter
  $ golem-stream conformance client --help`,
    )
    .action(async (args: string[]) => {
      const { runConformance } = await import("./commands/conformance.js");
      setExitCode(await runConformance(args, io));
    });

  program
    .command("types")
    .description("List the agent types and methods the server offers (its discovery endpoint).")
    .addOption(applicationOption())
    .addOption(environmentOption())
    .option("--json", "print the discovery document as JSON", false)
    .addOption(urlOption())
    .addOption(tokenOption())
    .addHelpText(
      "after",
      `${CONNECTION_HELP}

Examples:
  $ golem-stream types
  $ golem-stream types --application demo --environment default --json`,
    )
    .action(runOnCatalogue<TypesOptions>(async () => (await import("./commands/types.js")).runTypes));

  program
    .command("codegen")
    .description("Write typed contracts (defineAgentType source) for every agent type in the server's catalogue.")
    .addOption(applicationOption())
    .addOption(environmentOption())
    .option("-o, --out <file>", "the TypeScript file to write, replaced atomically (default: stdout; - is stdout)")
    .option("--import-from <module>", "the module the source imports defineAgentType and t from", "@golem-stream/contract")
    .addOption(
      new Option("--timeout <duration>", "how long the discovery request may take")
        .argParser(parseBoundedDuration(1, 3_600_000, "at most 1h"))
        .default(DEFAULT_TIMEOUT_MS, "30s"),
    )
    .addOption(urlOption())
    .addOption(tokenOption())
    .addHelpText(
      "after",
      `${CONNECTION_HELP}

One exported contract per agent type: the name in camelCase (ASCII letters and digits) plus
"Contract", e.g. echo -> echoContract; names that collide get _2, _3 in catalogue order.
Exit status: 0 written, 2 usage or unknown application/environment, 3 refused (401/403),
4 server unreachable or its catalogue invalid, 74 the file could not be written.

Examples:
  $ golem-stream codegen --url http://127.0.0.1:8080 --out src/agents.ts
  $ golem-stream codegen --application shop --environment prod > agents.ts`,
    )
    .action(runOnCatalogue<CodegenOptions>(async () => (await import("./commands/codegen.js")).runCodegen));

  return program;
}

// By the package's own name, not a relative path: the bundled executable runs this from
// dist/chunks/, the library from dist/ (package.json exports "./package.json").
const VERSION = (createRequire(import.meta.url)("@golem-stream/cli/package.json") as { version: string }).version;

/**
 * Runs the CLI and resolves with the process exit code. Never throws: a
 * CliError becomes its message and code, anything else is reported as a bug.
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let exitCode: number = EXIT.success;
  const program = buildProgram(io, (code) => {
    exitCode = code;
  });
  try {
    await program.parseAsync([...argv], { from: "user" });
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version exit 0; every parse failure is a usage error.
      return error.exitCode === 0 ? EXIT.success : EXIT.usage;
    }
    if (error instanceof CliError) {
      // A hint in the message ("`golem-stream resume run.ckpt`") is spelled as the user types the CLI here.
      report(io, `golem-stream: ${spellCommands(error.message, commandName(io.env))}`);
      return error.exitCode;
    }
    report(io, `golem-stream: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    // The executable is a bundle with source maps, which Node reads only when asked: reading
    // them on every start would cost more than a tenth of `invoke`'s start-up (docs/protocol/cli.md).
    if (!process.sourceMapsEnabled) report(io, "golem-stream: NODE_OPTIONS=--enable-source-maps shows this stack in the TypeScript sources");
    return EXIT_INTERNAL;
  }
}
