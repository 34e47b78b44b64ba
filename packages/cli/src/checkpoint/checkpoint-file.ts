/**
 * Checkpoint v1 on disk: bounded reads, atomic durable writes.
 */
import { open } from "node:fs/promises";
import { ProtocolError } from "@golem-stream/wire";
import { MAX_CHECKPOINT_BYTES, decodeCheckpoint, encodeCheckpoint } from "./checkpoint.js";
import type { Checkpoint } from "./checkpoint.js";
import { replaceFileAtomically } from "./atomic-file.js";

/**
 * Reads and validates a checkpoint file. The size is checked before the
 * contents are read, so a huge or endless file (a FIFO, /dev/zero) cannot
 * exhaust memory. Throws `ProtocolError` for unusable contents and the
 * file system error for an unreadable path.
 */
export async function readCheckpointFile(path: string): Promise<Checkpoint> {
  const file = await open(path, "r");
  try {
    const limit = MAX_CHECKPOINT_BYTES;
    const buffer = Buffer.alloc(Math.min(limit + 1, 64 * 1024));
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const { bytesRead } = await file.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) break;
      total += bytesRead;
      if (total > limit) {
        throw new ProtocolError("limit-exceeded", `checkpoint is larger than ${limit} bytes`);
      }
      chunks.push(Buffer.from(buffer.subarray(0, bytesRead)));
    }
    return decodeCheckpoint(new Uint8Array(Buffer.concat(chunks, total)));
  } finally {
    await file.close();
  }
}

/** Atomically replaces `path` with the checkpoint; durable once the promise resolves. */
export async function writeCheckpointFile(path: string, checkpoint: Checkpoint): Promise<void> {
  await replaceFileAtomically(path, encodeCheckpoint(checkpoint));
}
