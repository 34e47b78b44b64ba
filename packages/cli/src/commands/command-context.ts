/**
 * What every command's registration needs from the program: where to write, and how to report the
 * exit code of the action that ran. Each command's file (`*-command.ts`) declares its options, help
 * and examples, and loads its runner only when it runs, so `--help` stays fast and works where an
 * optional package (the server's native SQLite module, the conformance kit) cannot load.
 */
import type { ExitCode } from "../exit-codes.js";
import type { CliIo } from "../io/cli-io.js";

export interface CommandContext {
  readonly io: CliIo;
  readonly setExitCode: (code: ExitCode) => void;
}
