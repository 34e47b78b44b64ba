/**
 * `golem-stream serve`: the embedded session server (demo catalogue, SQLite
 * store and keyring in the data directory) until SIGINT/SIGTERM.
 *
 * stdout gets what a person or a script needs to call it, starting with one
 * stable line `listening on <http-url>`; the log goes to stderr.
 */
import { mkdir } from "node:fs/promises";
import { resolve } from "node:path";
import { startEmbeddedServer } from "@golem-stream/server";
import type { EmbeddedServer } from "@golem-stream/server";
import { resolveServeTokens } from "../bearer-tokens.js";
import { CliError, EXIT } from "../exit-codes.js";
import type { ExitCode } from "../exit-codes.js";
import type { CliIo } from "../io/cli-io.js";
import { createLogger } from "../io/logger.js";
import { defaultDataDir } from "../paths.js";
import type { ServeOptions } from "../program.js";

export async function runServe(options: ServeOptions, io: CliIo): Promise<ExitCode> {
  const dataDir = resolve(options.dataDir ?? defaultDataDir(io.env));
  await mkdir(dataDir, { recursive: true, mode: 0o700 }).catch((cause: unknown) => {
    throw new CliError(EXIT.usage, `cannot create the data directory ${dataDir}`, { cause });
  });
  const { tokens, generatedFile } = await resolveServeTokens(
    { flags: options.token, env: io.env["GOLEM_STREAM_TOKEN"], file: options.tokenFile },
    dataDir,
  );
  const logger = createLogger(io, options.logLevel);
  let server: EmbeddedServer;
  try {
    server = await startEmbeddedServer({
      port: options.port,
      host: options.host,
      dataDir,
      tokens,
      logger,
      limits: { sessionRetentionMs: options.retention },
    });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === "EADDRINUSE") throw new CliError(EXIT.usage, `${options.host}:${options.port} is already in use; choose another --port`, { cause: error });
    if (code === "EACCES") throw new CliError(EXIT.usage, `not allowed to listen on ${options.host}:${options.port}`, { cause: error });
    throw new CliError(EXIT.usage, `cannot start the server: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  const url = server.httpUrl;
  const tokenHint = generatedFile === undefined ? "<one of the tokens you gave>" : `$(cat ${shellQuote(generatedFile)})`;
  io.stdout.write(
    [
      `listening on ${url}`,
      `data directory ${dataDir}`,
      "",
      "Call it from another terminal:",
      `  export GOLEM_STREAM_URL=${url} GOLEM_STREAM_TOKEN=${tokenHint}`,
      "  golem-stream types",
      `  head -c 1000000 /dev/urandom | golem-stream invoke echo digest -c '{"name":"me"}' -`,
      `  printf 'hello\\nworld\\n' | golem-stream invoke echo split -c '{"name":"me"}' -`,
      "",
      "Stop with Ctrl-C.",
      "",
    ].join("\n"),
  );
  logger.info("server started", { url, dataDir });
  await new Promise<void>((resolveStop) => {
    if (io.signal.aborted) resolveStop();
    io.signal.addEventListener("abort", () => resolveStop(), { once: true });
  });
  logger.info("stopping", { reason: String(io.signal.reason ?? "signal") });
  await server.close();
  logger.info("stopped");
  return EXIT.success;
}

function shellQuote(text: string): string {
  return /^[A-Za-z0-9_./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}
