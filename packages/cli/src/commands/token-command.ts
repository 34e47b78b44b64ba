/**
 * The `token inspect` command: its options, help and examples. The runner (token-inspect.ts) loads
 * only when the command runs.
 */
import type { Command } from "commander";
import type { CommandContext } from "./command-context.js";

export function addTokenCommands(program: Command, { io, setExitCode }: CommandContext): void {
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
      const { runTokenInspect } = await import("./token-inspect.js");
      setExitCode(await runTokenInspect(value, options, io));
    });
}
