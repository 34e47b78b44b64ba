/**
 * `golem-stream codegen`: typed contracts for a server's catalogue. A thin
 * shell: the discovery endpoint is read as `types` and `invoke` read it, the
 * source comes from `contractSource` (`@golem-stream/contract/codegen`), and
 * a regular file is replaced atomically, so an interrupted run never leaves half a
 * module behind (io/output-file.ts).
 */
import { ContractError } from "@golem-stream/contract";
import { contractSource } from "@golem-stream/contract/codegen";
import { resolveConnection } from "../connection.js";
import { fetchCatalogue } from "../discovery.js";
import { CliError, EXIT } from "../exit-codes.js";
import type { ExitCode } from "../exit-codes.js";
import { report } from "../io/cli-io.js";
import type { CliIo } from "../io/cli-io.js";
import { writeOutputFile } from "../io/output-file.js";
import { briefList } from "../output/brief-list.js";
import type { CodegenOptions } from "../options.js";

/** A source file's mode before the umask, as an editor or `tsc` would create it. */
const SOURCE_FILE_MODE = 0o666;

export async function runCodegen(options: CodegenOptions, io: CliIo): Promise<ExitCode> {
  const connection = resolveConnection(options, io.env);
  const signal = AbortSignal.any([io.signal, AbortSignal.timeout(options.timeout)]);
  const catalogue = await fetchCatalogue(connection, options.application, options.environment, signal, options.maxCatalogueBytes);
  let generated: ReturnType<typeof contractSource>;
  try {
    generated = contractSource(catalogue.agentTypes, {
      importFrom: options.importFrom,
      origin: `the catalogue ${catalogue.application}/${catalogue.environment}`,
    });
  } catch (cause) {
    if (!(cause instanceof ContractError)) throw cause;
    throw new CliError(EXIT.connectionLost, `the server's catalogue cannot be written as contracts: ${cause.message}`, { cause });
  }
  const toStdout = options.out === undefined || options.out === "-";
  try {
    // The process exits once this resolves: wait until the module is with the OS (a pipe writes later).
    if (toStdout)
      await new Promise<void>((resolve, reject) => io.stdout.write(generated.source, (error) => (error ? reject(error) : resolve())));
    // Ordinary permissions (0644 under the usual umask): a build user or a container reads it.
    // Through a symlink, into a FIFO or a device in place (io/output-file.ts), as `cp` writes.
    else await writeOutputFile(options.out as string, generated.source, SOURCE_FILE_MODE);
  } catch (cause) {
    const where = toStdout ? "stdout" : (options.out as string);
    throw new CliError(EXIT.outputFailed, `cannot write ${where}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
  // Exit 0 all the same: the module is usable, and the method is still callable untyped.
  for (const left of generated.omitted) {
    report(io, `golem-stream: warning: ${left.agentType}.${left.method} is not in the generated contract: ${left.reason}`);
  }
  const names = briefList(generated.exports.map((e) => `${e.name} (${e.agentType})`));
  report(
    io,
    `${generated.exports.length} contract${generated.exports.length === 1 ? "" : "s"}${toStdout ? "" : ` written to ${options.out as string}`}${names === "" ? "" : `: ${names}`}`,
  );
  return EXIT.success;
}
