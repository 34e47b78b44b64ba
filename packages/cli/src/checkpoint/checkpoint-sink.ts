/**
 * Connects the client runtime's persistence callback to the checkpoint
 * file. The client calls it, one call at a time and in order, after
 * acceptance, after every delivered output event and when a connection is
 * lost; each call atomically replaces the file before the next output event
 * can be taken (see docs/protocol/cli.md, "Write order").
 */
import type { ResumeState } from "@golem-stream/client";
import type { CliIo } from "../io/cli-io.js";
import { report } from "../io/cli-io.js";
import type { Checkpoint } from "./checkpoint.js";
import { pendingAsResumeAttach } from "./checkpoint.js";
import { writeCheckpointFile } from "./checkpoint-file.js";
import { removeStaleTemporaries } from "./atomic-file.js";

export interface CheckpointSink {
  /** The client's `onCheckpoint`. Never rejects: a failed write is reported once and the run continues. */
  readonly onCheckpoint: (state: ResumeState) => Promise<void>;
  /** Set when a write failed: the file may be behind the output (it can replay more, never skip). */
  readonly failure: () => unknown;
  /** Resolves when the writes started so far have finished, so an exiting process leaves its latest state. */
  readonly flush: () => Promise<void>;
}

export function checkpointFromState(state: ResumeState, methodSchemaDigest: string): Checkpoint {
  const pending = state.pendingOperation;
  return {
    selector: state.selector,
    idempotencyKey: state.idempotencyKey,
    sessionToken: state.sessionToken,
    outputCursors: state.outputCursors,
    methodSchemaDigest,
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
  return {
    selector: checkpoint.selector,
    idempotencyKey: checkpoint.idempotencyKey,
    sessionToken: checkpoint.sessionToken,
    outputCursors: checkpoint.outputCursors,
    ...(checkpoint.pending === undefined ? {} : { pendingOperation: pendingAsResumeAttach(checkpoint.pending) }),
  };
}

export function createCheckpointSink(path: string | undefined, methodSchemaDigest: string, io: CliIo): CheckpointSink {
  let failure: unknown;
  // This process is now the checkpoint's only writer: leftovers of a killed one can go.
  let cleaned: Promise<void> | undefined;
  let latest: Promise<void> = Promise.resolve();
  const write = async (state: ResumeState): Promise<void> => {
    if (path === undefined) return;
    try {
      await (cleaned ??= removeStaleTemporaries(path));
      await writeCheckpointFile(path, checkpointFromState(state, methodSchemaDigest));
    } catch (error) {
      if (failure === undefined) {
        report(io, `golem-stream: warning: cannot write checkpoint ${path}: ${error instanceof Error ? error.message : String(error)}`);
      }
      failure ??= error;
    }
  };
  return {
    // The client calls one at a time; chaining keeps that true even if it did not.
    onCheckpoint: (state) => (latest = latest.then(() => write(state))),
    failure: () => failure,
    flush: () => latest,
  };
}
