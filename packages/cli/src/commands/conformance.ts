/**
 * `golem-stream conformance …`: the conformance kit's own command
 * (`golem-stream-conformance` of @golem-stream/conformance, an optional peer
 * dependency) run as a child process with the same arguments, so both spell
 * the suite's options the same way and the kit stays one implementation.
 * Its exit codes map onto the CLI's: 0 every check passed, 5 a check failed,
 * 2 a usage error.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { EXIT, usageError, type ExitCode } from "../exit-codes.js";
import type { CliIo } from "../io/cli-io.js";

const KIT = "@golem-stream/conformance";

/** The kit's command file, or a usage error saying how to install the kit. */
export function conformanceBin(resolve: (id: string) => string = createRequire(import.meta.url).resolve): string {
  let manifestPath: string;
  try {
    manifestPath = resolve(`${KIT}/package.json`);
  } catch (error) {
    throw usageError(
      `golem-stream conformance needs ${KIT}, which is not installed. Install it beside the CLI: npm install -g ${KIT} (or npm install ${KIT} in the project that has @golem-stream/cli)`,
      error,
    );
  }
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as { bin?: Record<string, string> };
  const bin = manifest.bin?.["golem-stream-conformance"];
  if (bin === undefined) throw usageError(`${KIT} at ${dirname(manifestPath)} has no golem-stream-conformance command`);
  return join(dirname(manifestPath), bin);
}

export async function runConformance(args: readonly string[], io: CliIo): Promise<ExitCode> {
  const bin = conformanceBin();
  const child = spawn(process.execPath, [bin, ...args], { stdio: ["ignore", "pipe", "pipe"], env: { ...io.env } });
  child.stdout.pipe(io.stdout, { end: false });
  child.stderr.pipe(io.stderr, { end: false });
  const stop = () => child.kill("SIGTERM");
  io.signal.addEventListener("abort", stop, { once: true });
  try {
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once("error", reject);
      child.once("close", (status) => resolve(status));
    });
    if (io.signal.aborted) return EXIT.interrupted;
    if (code === 0) return EXIT.success;
    if (code === 1) return EXIT.checksFailed;
    if (code === 2) return EXIT.usage;
    // Anything else (a crash of the kit) is reported as this command's internal error (exit 70).
    throw new Error(`the conformance kit exited with status ${String(code)}`);
  } finally {
    io.signal.removeEventListener("abort", stop);
  }
}
