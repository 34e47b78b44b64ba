/**
 * The commands that read a server's catalogue without invoking anything: `types` and `codegen`.
 * Their runners (types.ts, codegen.ts) load only when a command runs.
 */
import type { Command } from "commander";
import { applicationOption, environmentOption, withCatalogueSelector } from "../catalogue-selector.js";
import type { ExitCode } from "../exit-codes.js";
import type { CliIo } from "../io/cli-io.js";
import type { CodegenOptions, TypesOptions } from "../options.js";
import { CONNECTION_HELP } from "./command-help.js";
import type { CommandContext } from "./command-context.js";
import { maxCatalogueBytesOption, timeoutOption, tokenOption, urlOption } from "./connection-options.js";

export function addCatalogueCommands(program: Command, { io, setExitCode }: CommandContext): void {
  /** Runs a catalogue command with -a/-e decided from the flag, the environment or the default. */
  const runOnCatalogue =
    <T extends { readonly application: string; readonly environment: string }>(
      load: () => Promise<(options: T, io: CliIo) => Promise<ExitCode>>,
    ) =>
    async (options: T): Promise<void> => {
      const action = await load();
      setExitCode(await action(withCatalogueSelector(options, io.env), io));
    };

  program
    .command("types")
    .description("List the agent types and methods the server offers (its discovery endpoint).")
    .addOption(applicationOption())
    .addOption(environmentOption())
    .option("--json", "print the discovery document as JSON", false)
    .addOption(maxCatalogueBytesOption())
    .addOption(urlOption())
    .addOption(tokenOption())
    .addHelpText(
      "after",
      `${CONNECTION_HELP}

Examples:
  $ golem-stream types
  $ golem-stream types --application demo --environment default --json`,
    )
    .action(runOnCatalogue<TypesOptions>(async () => (await import("./types.js")).runTypes));

  program
    .command("codegen")
    .description("Write typed contracts (defineAgentType source) for every agent type in the server's catalogue.")
    .addOption(applicationOption())
    .addOption(environmentOption())
    .option(
      "-o, --out <file>",
      "the TypeScript file to write, replaced atomically; a symlink is written through, a FIFO or a device in place (default: stdout; - is stdout)",
    )
    .option("--import-from <module>", "the module the source imports defineAgentType and t from", "@golem-stream/contract")
    .addOption(timeoutOption("how long the discovery request may take"))
    .addOption(maxCatalogueBytesOption())
    .addOption(urlOption())
    .addOption(tokenOption())
    .addHelpText(
      "after",
      `${CONNECTION_HELP}

One exported contract per agent type: the name in camelCase (ASCII letters and digits) plus
"Contract", e.g. echo -> echoContract; names that collide get _2, _3 in catalogue order.
Exit status: 0 written, 2 usage or unknown application/environment, 3 refused (401/403),
4 server unreachable, its catalogue invalid or past --max-catalogue-bytes, 74 the file could not be
written.

Examples:
  $ golem-stream codegen --url http://127.0.0.1:8080 --out src/agents.ts
  $ golem-stream codegen --application shop --environment prod > agents.ts`,
    )
    .action(runOnCatalogue<CodegenOptions>(async () => (await import("./codegen.js")).runCodegen));
}
