/**
 * `golem-stream resume FILE`: claims the session recorded in a checkpoint
 * (a `takeover`, decisions-v1 §8, or the exact retry of a frozen pending
 * resume/takeover) and continues its output after the delivered cursors.
 */
import { stat } from "node:fs/promises";
import { isClientError } from "@golem-stream/client";
import { sessionClient } from "../session-client.js";
import type { SessionClient } from "../session-client.js";
import type { Invocation } from "@golem-stream/client";
import { isProtocolError } from "@golem-stream/wire";
import { createCheckpointSink, finishCheckpoint, stateFromCheckpoint } from "../checkpoint/checkpoint-sink.js";
import { EMPTY_CLAIM } from "../checkpoint/checkpoint-claim.js";
import { readCheckpointFileUnlessAborted } from "../checkpoint/checkpoint-file.js";
import type { Checkpoint } from "../checkpoint/checkpoint.js";
import { resolveConnection } from "../connection.js";
import type { Connection } from "../connection.js";
import { fetchCatalogue, findMethod, methodSchemaDigest } from "../discovery.js";
import { CliError, EXIT, usageError } from "../exit-codes.js";
import type { ExitCode } from "../exit-codes.js";
import type { CliIo } from "../io/cli-io.js";
import { report } from "../io/cli-io.js";
import { createProgress } from "../io/progress.js";
import { failureOf } from "../output/exit-status.js";
import { runSession } from "../output/session-runner.js";
import type { ResumeOptions } from "../options.js";

export async function runResume(file: string, options: ResumeOptions, io: CliIo): Promise<ExitCode> {
  let checkpoint: Checkpoint;
  try {
    checkpoint = await readCheckpointFileUnlessAborted(file, io.signal);
  } catch (error) {
    // A FIFO no process had written into yet.
    if (io.signal.aborted) throw new CliError(EXIT.interrupted, `interrupted while reading checkpoint ${file}, before anything was sent`);
    if (isProtocolError(error)) {
      // The empty file an `invoke --checkpoint` claims before its first write: no start was sent from it.
      if (await isEmptyFile(file)) {
        throw usageError(
          `${file} is empty: ${EMPTY_CLAIM}, so no invocation was started from it; delete the file if no other \`golem-stream invoke\` uses it, and run the invocation again`,
          error,
        );
      }
      throw usageError(`${file} is not a usable checkpoint: ${error.message}`, error);
    }
    throw usageError(`cannot read checkpoint ${file}: ${error instanceof Error ? error.message : String(error)}`, error);
  }
  const connection = resolveConnection(options, io.env);
  // The server and catalogue bound in effect, which the `resume` hints spell carry.
  const used = { url: connection.url, maxCatalogueBytes: options.maxCatalogueBytes };
  const sink = createCheckpointSink(file, checkpoint.methodSchemaDigest, options.checkpointBatching);
  let call: Invocation;
  let session: SessionClient;
  try {
    session = sessionClient(connection, options);
    call = session.client.takeover(stateFromCheckpoint(checkpoint), { onCheckpoint: sink.onCheckpoint });
  } catch (error) {
    if (isClientError(error)) throw usageError(failureOf(error).message, error);
    throw error;
  }
  void warnIfSchemaChanged(checkpoint, connection, options.maxCatalogueBytes, io);
  const code = await runSession(call, io, {
    format: options.output,
    result: options.result,
    progress: createProgress(io, options.progress),
    cancelOnInterrupt: false,
    resumed: true,
    retries: options.retries,
    checkpoint: file,
    connection: used,
  });
  return finishCheckpoint(sink, code, io, { file, used });
}

/** A regular file of no bytes (not a FIFO whose writer wrote nothing). */
async function isEmptyFile(path: string): Promise<boolean> {
  const stats = await stat(path).catch(() => undefined);
  return stats?.isFile() === true && stats.size === 0;
}

/**
 * Uses the checkpoint's schema evidence: if the server's catalogue now
 * describes the method differently, say so. Informational only: the session
 * itself stays pinned to the schema it was started with, and the result
 * carries its own graph. Runs beside the takeover; any failure is silent.
 */
async function warnIfSchemaChanged(checkpoint: Checkpoint, connection: Connection, maxCatalogueBytes: number, io: CliIo): Promise<void> {
  try {
    const { application, environment, agentType, method } = checkpoint.selector;
    const catalogue = await fetchCatalogue(connection, application, environment, io.signal, maxCatalogueBytes);
    const found = findMethod(catalogue, agentType, method);
    if (methodSchemaDigest(found.agentType, found.method) !== checkpoint.methodSchemaDigest) {
      report(
        io,
        `golem-stream: note: ${agentType}.${method} has a different schema now than when this checkpoint was written; the session keeps the one it started with`,
      );
    }
  } catch {
    // No catalogue, or the method is gone: the takeover itself reports what matters.
  }
}
