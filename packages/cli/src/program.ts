/**
 * The command line of `golem-stream`: the program, its global help and version, and one line per
 * command. Each command's options, help and examples are its own file in commands/ (`*-command.ts`),
 * which loads its runner only when it runs, so `--help` works (and is fast) even where the
 * server's native SQLite module cannot load. Option types and defaults are options.ts, their
 * parsers option-parsers.ts; nothing imports this file but the entry points.
 */
import { CLI_VERSION } from "./cli-version.js";
import { Command, CommanderError } from "commander";
import { CliError, EXIT, EXIT_INTERNAL } from "./exit-codes.js";
import type { ExitCode } from "./exit-codes.js";
import type { CliIo } from "./io/cli-io.js";
import { report } from "./io/cli-io.js";
import { commandName, spellCommands } from "./io/command-name.js";
import { addCatalogueCommands } from "./commands/catalogue-commands.js";
import { EXIT_HELP } from "./commands/command-help.js";
import type { CommandContext } from "./commands/command-context.js";
import { addConformanceCommand } from "./commands/conformance-command.js";
import { addInvokeCommands } from "./commands/invoke-command.js";
import { addKeyringCommands } from "./commands/keyring-command.js";
import { addServeCommand } from "./commands/serve-command.js";
import { addTokenCommands } from "./commands/token-command.js";

/**
 * Builds the program. `setExitCode` receives the outcome of the action that
 * ran; commander's own exits (help, usage errors) surface as CommanderError.
 */
export function buildProgram(io: CliIo, setExitCode: (code: ExitCode) => void): Command {
  const program = new Command("golem-stream")
    .description("Serve the Golem Stream Session protocol, invoke streaming agent methods, and resume them after a crash.")
    .version(CLI_VERSION, "-V, --version")
    .exitOverride()
    // Options after a subcommand are its own (conformance hands them all to the kit).
    .enablePositionalOptions()
    .configureOutput({
      // Help and usage spell the command as it is typed here (`pnpm golem-stream` in a checkout).
      writeOut: (text) => io.stdout.write(spellCommands(text, commandName(io.env, io.executable))),
      writeErr: (text) => io.stderr.write(spellCommands(text, commandName(io.env, io.executable))),
      // Like every other failure: one line, the program's name first, and where to look.
      outputError: (text, write) =>
        write(
          `golem-stream: ${text
            .replace(/^error: /, "")
            .trim()
            .replace(/\s*\n\s*/g, " ")} (see --help)\n`,
        ),
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

  const context: CommandContext = { io, setExitCode };
  addServeCommand(program, context);
  addInvokeCommands(program, context);
  addKeyringCommands(program, context);
  addTokenCommands(program, context);
  addConformanceCommand(program, context);
  addCatalogueCommands(program, context);
  return program;
}

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
      report(io, `golem-stream: ${spellCommands(error.message, commandName(io.env, io.executable))}`);
      return error.exitCode;
    }
    // A stack stays one line per frame (report escapes what a line holds: a message may quote a server).
    const trace = `golem-stream: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`;
    for (const line of trace.split("\n")) report(io, line);
    // The executable is a bundle with source maps, which Node reads only when asked: reading
    // them on every start would cost more than a tenth of `invoke`'s start-up (docs/protocol/cli.md).
    if (!process.sourceMapsEnabled)
      report(io, "golem-stream: NODE_OPTIONS=--enable-source-maps shows this stack in the TypeScript sources");
    return EXIT_INTERNAL;
  }
}
