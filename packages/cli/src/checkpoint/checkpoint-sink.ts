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

export interface CheckpointSink {
  /**
   * The client's `onCheckpoint`. Rejects when the file cannot be replaced: the
   * client then stops delivery and fails with `checkpoint-failed`, because
   * output written past a checkpoint that can no longer follow it would break
   * the promise `--checkpoint` makes. The last file written stays valid.
   */
  readonly onCheckpoint: (state: ResumeState) => Promise<void>;
  /** Resolves (never rejects) when the writes started so far have finished, so an exiting process leaves its latest state. */
  readonly flush: () => Promise<void>;
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

export function createCheckpointSink(path: string | undefined, methodSchemaDigest: string): CheckpointSink {
  // This process is now the checkpoint's only writer: leftovers of a killed one can go.
  let cleaned: Promise<void> | undefined;
  let latest: Promise<void> = Promise.resolve();
  const write = async (state: ResumeState): Promise<void> => {
    if (path === undefined) return;
    try {
      await (cleaned ??= removeStaleTemporaries(path));
      await writeCheckpointFile(path, checkpointFromState(state, methodSchemaDigest));
    } catch (error) {
      throw new Error(`cannot write checkpoint ${path}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  };
  return {
    // The client calls one at a time; chaining keeps that true even if it did not.
    onCheckpoint: (state) => (latest = latest.then(() => write(state))),
    flush: () => latest.catch(() => undefined),
  };
}
