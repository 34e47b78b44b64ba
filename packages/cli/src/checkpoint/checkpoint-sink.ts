/**
 * Connects the client runtime's persistence callback to the checkpoint
 * file. The client calls it, one call at a time and in order, before it
 * first sends a new start/resume/takeover, after acceptance and after every
 * delivered output event; each call atomically replaces the file before the
 * descriptor goes out or the next output event can be taken (see
 * docs/protocol/cli.md, "Write order").
 */
import type { ResumeState } from "@golem-stream/client";
import type { Checkpoint } from "./checkpoint.js";
import { pendingAsInvocationStart, pendingAsResumeAttach } from "./checkpoint.js";
import { writeCheckpointFile } from "./checkpoint-file.js";
import { removeStaleTemporaries } from "./atomic-file.js";
import { DEFAULT_CHECKPOINT_BATCHING } from "./batching.js";
import type { CheckpointBatching } from "./batching.js";
import { EXIT } from "../exit-codes.js";
import type { ExitCode } from "../exit-codes.js";
import type { CliIo } from "../io/cli-io.js";
import { report } from "../io/cli-io.js";
import { commandName } from "../io/command-name.js";
import { resumeCommand, type HintedConnection } from "../catalogue-selector.js";

export interface CheckpointSink {
  /**
   * The client's `onCheckpoint`. Rejects when the file cannot be replaced: the
   * client then stops delivery and fails with `checkpoint-failed`, because
   * output written past a checkpoint that can no longer follow it would break
   * the promise `--checkpoint` makes. The last file written stays valid.
   */
  readonly onCheckpoint: (state: ResumeState) => Promise<void>;
  /**
   * Writes the latest state if a batch is still open and waits for every
   * write, so an exiting process leaves its latest state. Resolves with the
   * error of a write that failed (none: undefined); never rejects.
   */
  readonly flush: () => Promise<Error | undefined>;
}

export function checkpointFromState(state: ResumeState, methodSchemaDigest: string): Checkpoint {
  const common = { selector: state.selector, idempotencyKey: state.idempotencyKey, outputCursors: state.outputCursors, methodSchemaDigest };
  if (state.sessionToken === undefined) {
    // Saved before the start was first sent: the frozen start is the way back in.
    const start = state.pendingOperation;
    return {
      ...common,
      pending: { operation: "start", attemptId: start.attemptId, config: start.config, methodParameters: start.methodParameters },
    };
  }
  const pending = state.pendingOperation;
  return {
    ...common,
    sessionToken: state.sessionToken,
    ...(pending === undefined
      ? {}
      : {
          pending: {
            operation: pending.operation,
            attemptId: pending.attemptId,
            sessionToken: pending.sessionToken,
            outputCursors: pending.outputCursors,
          },
        }),
  };
}

export function stateFromCheckpoint(checkpoint: Checkpoint): ResumeState {
  const { selector, idempotencyKey, outputCursors, sessionToken, pending } = checkpoint;
  if (pending?.operation === "start") {
    return { selector, idempotencyKey, outputCursors, pendingOperation: pendingAsInvocationStart(pending, selector, idempotencyKey) };
  }
  if (sessionToken === undefined) throw new Error("unreachable: decodeCheckpoint requires a session token without a pending start");
  return {
    selector,
    idempotencyKey,
    sessionToken,
    outputCursors,
    ...(pending === undefined ? {} : { pendingOperation: pendingAsResumeAttach(pending) }),
  };
}

export function createCheckpointSink(
  path: string | undefined,
  methodSchemaDigest: string,
  batching: CheckpointBatching = DEFAULT_CHECKPOINT_BATCHING,
  now: () => number = Date.now,
): CheckpointSink {
  // This process is now the checkpoint's only writer: leftovers of a killed one can go.
  let cleaned: Promise<void> | undefined;
  let chain: Promise<void> = Promise.resolve();
  let failure: Error | undefined;
  /** The newest state not yet handed to a write, and how many deliveries it is ahead of the file. */
  let deferred: ResumeState | undefined;
  let unsaved = 0;
  let lastWrite = 0;
  let written: ResumeState | undefined;
  let timer: NodeJS.Timeout | undefined;

  const writeNow = async (state: ResumeState): Promise<void> => {
    if (path === undefined) return;
    try {
      await (cleaned ??= removeStaleTemporaries(path));
      await writeCheckpointFile(path, checkpointFromState(state, methodSchemaDigest));
    } catch (error) {
      throw new Error(`cannot write checkpoint ${path}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  };
  /** Queues a write of `state` behind the ones before it (files are replaced in the order states came). */
  const enqueue = (state: ResumeState): Promise<void> => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    deferred = undefined;
    unsaved = 0;
    lastWrite = now();
    written = state;
    const write = chain.then(() => (failure === undefined ? writeNow(state) : Promise.reject(failure)));
    chain = write.catch((error: unknown) => {
      failure ??= error instanceof Error ? error : new Error(String(error));
    });
    return write;
  };

  return {
    onCheckpoint: async (state) => {
      if (failure !== undefined) throw failure;
      // A pending operation or a new session token must be on disk before the client acts on
      // it (it sends the frozen start/resume only after this resolves); only cursor progress
      // may wait, because an older cursor replays output and never skips any.
      if (path === undefined || written === undefined || !onlyCursorsMoved(written, state)) return enqueue(state);
      deferred = state;
      unsaved++;
      if (unsaved >= batching.maxItems || now() - lastWrite >= batching.intervalMs) return enqueue(state);
      timer ??= setTimeout(
        () => {
          timer = undefined;
          // A failure shows at the next delivery (it rejects) or at flush.
          if (deferred !== undefined) void enqueue(deferred).catch(() => undefined);
        },
        Math.max(0, batching.intervalMs - (now() - lastWrite)),
      );
      // A quiet stream must not keep the process alive just to write a checkpoint: flush does.
      timer.unref();
    },
    flush: async () => {
      if (deferred !== undefined && failure === undefined) await enqueue(deferred).catch(() => undefined);
      await chain;
      return failure;
    },
  };
}

/** Same session, nothing pending, nothing pending before: the two states differ at most in their cursors. */
function onlyCursorsMoved(before: ResumeState, after: ResumeState): boolean {
  return (
    before.pendingOperation === undefined &&
    after.pendingOperation === undefined &&
    before.sessionToken !== undefined &&
    before.sessionToken === after.sessionToken
  );
}

/**
 * The end of a run with a checkpoint: the open batch is written, and a write
 * that failed since the last delivery turns the exit code into 74 (like a
 * failed stdout), unless the run already stopped for that reason. The
 * `resume` it then suggests names `resume.file` and carries `resume.used`.
 */
export async function finishCheckpoint(
  sink: CheckpointSink,
  code: ExitCode,
  io: CliIo,
  resume: { readonly file: string | undefined; readonly used: HintedConnection },
): Promise<ExitCode> {
  const failure = await sink.flush();
  if (failure === undefined || code === EXIT.outputFailed) return code;
  const command = commandName(io.env, io.executable);
  const hint = resume.file === undefined ? `${command} resume` : resumeCommand(resume.file, resume.used, command);
  report(io, `golem-stream: ${failure.message}; the file stays at the last state written: \`${hint}\` continues from there`);
  return EXIT.outputFailed;
}
