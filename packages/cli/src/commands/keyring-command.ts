/**
 * The `keyring` commands (list, rotate, activate, drop): their options, help and examples. The
 * runners (keyring.ts) load only when a command runs.
 */
import { Option, type Command } from "commander";
import type { CommandContext } from "./command-context.js";

export function addKeyringCommands(program: Command, { io, setExitCode }: CommandContext): void {
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
  const keyringOption = () =>
    new Option("--keyring <file>", "a keyring file (serve --keyring) instead of the data directory's").conflicts("dataDir");
  keyring
    .command("list")
    .description("Show each key id and its role: active (signs new tokens), staged (verifies, signs once activated) or verify-only.")
    .addOption(dataDirOption())
    .addOption(keyringOption())
    .option("--json", "print them as JSON", false)
    .action(async (options: { dataDir?: string; keyring?: string; json: boolean }) => {
      const { runKeyringList } = await import("./keyring.js");
      setExitCode(await runKeyringList(options, io));
    });
  keyring
    .command("rotate")
    .description(
      "Add a fresh active key; the current one becomes verify-only. With --staged, add it staged instead (a cluster's first step).",
    )
    .addOption(dataDirOption())
    .addOption(keyringOption())
    .option("--key-id <id>", "id of the new key (default: a random one)")
    .option("--staged", "add the key staged: it verifies tokens but signs none until `keyring activate`", false)
    .action(async (options: { dataDir?: string; keyring?: string; keyId?: string; staged: boolean }) => {
      const { runKeyringRotate } = await import("./keyring.js");
      setExitCode(await runKeyringRotate(options, io));
    });
  keyring
    .command("activate")
    .description("Make a staged (or verify-only) key the one that signs new tokens; the current one becomes verify-only.")
    .argument("<key-id>", "the key to activate")
    .addOption(dataDirOption())
    .addOption(keyringOption())
    .action(async (keyId: string, options: { dataDir?: string; keyring?: string }) => {
      const { runKeyringActivate } = await import("./keyring.js");
      setExitCode(await runKeyringActivate(keyId, options, io));
    });
  keyring
    .command("drop")
    .description("Remove a verify-only key: tokens it signed stop verifying.")
    .argument("<key-id>", "the key to remove (never the active one)")
    .addOption(dataDirOption())
    .addOption(keyringOption())
    .action(async (keyId: string, options: { dataDir?: string; keyring?: string }) => {
      const { runKeyringDrop } = await import("./keyring.js");
      setExitCode(await runKeyringDrop(keyId, options, io));
    });
}
