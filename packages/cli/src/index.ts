/**
 * @golem-stream/cli — the `golem-stream` command, and the pieces a program
 * embedding it needs: run the CLI in-process, and read or write checkpoint v1.
 */
export { runCli, buildProgram } from "./program.js";
export type { CliIo, ExitNote } from "./io/cli-io.js";
export { EXIT, EXIT_INTERNAL, CliError, type ExitCode } from "./exit-codes.js";
export {
  CHECKPOINT_VERSION,
  MAX_CHECKPOINT_BYTES,
  encodeCheckpoint,
  decodeCheckpoint,
  type Checkpoint,
  type PendingOperation,
  type PendingAttach,
  type PendingStart,
  type DecodeCheckpointOptions,
} from "./checkpoint/checkpoint.js";
export { readCheckpointFile, writeCheckpointFile } from "./checkpoint/checkpoint-file.js";
export { replaceFileAtomically, type ReplaceOptions } from "./checkpoint/atomic-file.js";
export { defaultDataDir } from "./paths.js";
// The protocol types a checkpoint holds.
export type { Selector, ConfigEntry, SchemaValueJson, JsonValue, JsonObject, JsonArray, JsonPrimitive } from "@golem-stream/wire";
