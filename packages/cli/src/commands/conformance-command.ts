/**
 * The `conformance` command: it hands every argument to the kit (`@golem-stream/conformance`),
 * which loads only when the command runs.
 */
import type { Command } from "commander";
import type { CommandContext } from "./command-context.js";

export function addConformanceCommand(program: Command, { io, setExitCode }: CommandContext): void {
  program
    .command("conformance")
    .description(
      "Run the protocol's black-box conformance suites: against a server, or against a client through its adapter (needs @golem-stream/conformance).",
    )
    .argument(
      "[args...]",
      "the suite's arguments, e.g. server --url ws://host:port --token T [--json] [--junit FILE] [--only SECTIONS], or client --adapter CMD [...]",
    )
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
      const { runConformance } = await import("./conformance.js");
      setExitCode(await runConformance(args, io));
    });
}
