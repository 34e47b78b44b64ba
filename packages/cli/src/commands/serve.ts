/** Placeholder until @golem-stream/server exports startEmbeddedServer. */
import type { ExitCode } from "../exit-codes.js";
import type { CliIo } from "../io/cli-io.js";
import type { ServeOptions } from "../program.js";
import { usageError } from "../exit-codes.js";
export async function runServe(_options: ServeOptions, _io: CliIo): Promise<ExitCode> {
  throw usageError("serve is not available yet");
}
