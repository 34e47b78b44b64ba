/**
 * Checkpoint v1 on disk: bounded reads, atomic durable writes.
 */
import { ProtocolError } from "@golem-stream/wire";
import { MAX_CHECKPOINT_BYTES, decodeCheckpoint, encodeCheckpoint } from "./checkpoint.js";
import type { Checkpoint } from "./checkpoint.js";
import { replaceFileAtomically } from "./atomic-file.js";
import { readBounded } from "./bounded-read.js";

/**
 * Reads and validates a checkpoint file. The size is checked before the
 * contents are read, so a huge or endless file (a FIFO, /dev/zero) cannot
 * exhaust memory; a FIFO is read without holding a thread (bounded-read.ts).
 * Throws `ProtocolError` for unusable contents and the file system error for
 * an unreadable path.
 */
export async function readCheckpointFile(path: string): Promise<Checkpoint> {
  return readCheckpointFileUnlessAborted(path, undefined);
}

/**
 * `readCheckpointFile` that stops waiting for a FIFO's writer when `signal` aborts: it then
 * rejects with the signal's reason (`resume` interrupted by Ctrl-C).
 */
export async function readCheckpointFileUnlessAborted(path: string, signal: AbortSignal | undefined): Promise<Checkpoint> {
  const limit = MAX_CHECKPOINT_BYTES;
  const bytes = await readBounded(path, {
    maxBytes: limit,
    tooLarge: () => new ProtocolError("limit-exceeded", `checkpoint is larger than ${limit} bytes`),
    ...(signal === undefined ? {} : { signal }),
  });
  return decodeCheckpoint(bytes);
}

/** Atomically replaces `path` with the checkpoint; durable once the promise resolves. */
export async function writeCheckpointFile(path: string, checkpoint: Checkpoint): Promise<void> {
  await replaceFileAtomically(path, encodeCheckpoint(checkpoint));
}
