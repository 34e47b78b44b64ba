/**
 * `golem-stream invoke`: discover the method's schema, build the arguments,
 * start the invocation and print its output (see output/session-runner.ts).
 */
import { isClientError } from "@golem-stream/client";
import { sessionClient } from "../session-client.js";
import type { SessionClient } from "../session-client.js";
import type { Invocation } from "@golem-stream/client";
import { bindMethodParameters, constructorValue, nativeAsJson } from "../arguments.js";
import { createCheckpointSink, finishCheckpoint } from "../checkpoint/checkpoint-sink.js";
import { claimCheckpointFile } from "../checkpoint/checkpoint-claim.js";
import { resolveConnection, serverUrl } from "../connection.js";
import { findMethod, methodSchemaDigest } from "../discovery.js";
import { fetchCatalogueWithRetries } from "../catalogue-retries.js";
import { typesCommand } from "../catalogue-selector.js";
import { usageError } from "../exit-codes.js";
import type { ExitCode } from "../exit-codes.js";
import type { CliIo } from "../io/cli-io.js";
import { createProgress } from "../io/progress.js";
import { failureOf } from "../output/exit-status.js";
import { runSession } from "../output/session-runner.js";
import type { InvokeOptions } from "../options.js";

/**
 * A phantom id is a lower-case hyphenated UUID of any version, as the wire codec takes it
 * (protocol 2: only attempt ids and provisional references are UUIDv4; a phantom id may come from
 * a generator of v7 UUIDs): refuse others before any request.
 */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export interface InvokeTarget {
  readonly agentType: string;
  readonly method: string;
  readonly args: readonly string[];
}

export async function runInvoke(target: InvokeTarget, options: InvokeOptions, io: CliIo): Promise<ExitCode> {
  if (options.phantomId !== undefined && !UUID.test(options.phantomId)) {
    throw usageError("--phantom-id must be a lower-case hyphenated UUID");
  }
  // Claimed before anything else, so that two invocations never share one checkpoint; given
  // back if this one ends before its first checkpoint was written.
  const claim =
    options.checkpoint === undefined
      ? undefined
      : await claimCheckpointFile(options.checkpoint, { ...options, url: serverUrl(options, io.env) });
  try {
    return await invoke(target, options, io);
  } finally {
    await claim?.release();
  }
}

async function invoke(target: InvokeTarget, options: InvokeOptions, io: CliIo): Promise<ExitCode> {
  const connection = resolveConnection(options, io.env);
  const catalogue = await fetchCatalogueWithRetries(connection, options, io);
  // The server and catalogue bound in effect, which the commands hints spell carry.
  const used = { url: connection.url, maxCatalogueBytes: options.maxCatalogueBytes };
  const { agentType, method } = findMethod(catalogue, target.agentType, target.method, typesCommand({ ...options, ...used }));
  const argumentOptions = { native: options.native, input: options.input };
  const constructorParameters = constructorValue(options.constructorJson, agentType.constructorParameters, argumentOptions);
  // `-` with stdin on the terminal: a person types the input there, and redrawn bars would
  // overwrite each line as it is typed.
  const typesInput = target.args.includes("-") && io.stdin.isTTY === true;
  const progress = createProgress(io, options.progress && !typesInput);
  const { methodParameters, inputs } = bindMethodParameters(target.args, method.parameters, io, argumentOptions, (name, barOptions) =>
    progress.stream(name, "in", barOptions),
  );
  const sink = createCheckpointSink(options.checkpoint, methodSchemaDigest(agentType, method), options.checkpointBatching);

  let call: Invocation;
  let session: SessionClient;
  try {
    session = sessionClient(connection, options);
    call = session.client.invoke({
      application: options.application,
      environment: options.environment,
      agentType: agentType.name,
      constructorParameters: nativeAsJson(constructorParameters),
      method: method.name,
      methodParameters,
      ...(options.idempotencyKey === undefined ? {} : { idempotencyKey: options.idempotencyKey }),
      ...(options.phantomId === undefined ? {} : { phantomId: options.phantomId }),
      ...(options.checkpoint === undefined ? {} : { onCheckpoint: sink.onCheckpoint }),
    });
  } catch (error) {
    if (isClientError(error)) throw usageError(failureOf(error).message, error);
    throw error;
  }
  const code = await runSession(call, io, {
    format: options.output,
    result: options.result,
    progress,
    // Without a checkpoint nothing could ever resume the invocation, so Ctrl-C means "stop it".
    cancelOnInterrupt: options.checkpoint === undefined,
    resumed: false,
    retries: options.retries,
    ...(options.checkpoint === undefined ? {} : { checkpoint: options.checkpoint }),
    connection: used,
    inputs,
  });
  return finishCheckpoint(sink, code, io, { file: options.checkpoint, used });
}
