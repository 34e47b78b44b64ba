/**
 * `invoke --checkpoint FILE` claims FILE before it does anything else: it creates the file, empty
 * and private, with O_EXCL, so of two invocations given the same file exactly one goes on.
 * Checking that the file did not exist and writing it later let both go on, and the later
 * writer silently replaced the other's checkpoint, which could then never be resumed.
 *
 * The checkpoint writer replaces the empty file by rename, as it replaces any earlier state
 * (atomic-file.ts). An invocation that ends before its first checkpoint was written gives the
 * file back, so trying again is not refused; one killed in between leaves it empty, and the
 * refusal of the next claim says what such a file is.
 */
import { open, stat, unlink } from "node:fs/promises";
import type { Stats } from "node:fs";
import { resumeCommand, type HintedConnection } from "../catalogue-selector.js";
import { usageError } from "../exit-codes.js";
import type { CliError } from "../exit-codes.js";

/** What an empty checkpoint file is: a claim whose first checkpoint was not written (yet). */
export const EMPTY_CLAIM = "another invocation claimed it and has not written it yet, or one stopped before it did";

export interface CheckpointClaim {
  /**
   * Removes the file if no checkpoint was ever written over it (it is still the empty file the
   * claim created). Never rejects: a file it cannot remove only makes the next claim refuse.
   */
  release(): Promise<void>;
}

/**
 * Creates `path` exclusively, or throws the usage error that says why it cannot be this
 * invocation's checkpoint; the `resume` it suggests for an existing checkpoint carries `used`.
 */
export async function claimCheckpointFile(path: string, used?: HintedConnection): Promise<CheckpointClaim> {
  // open("") fails ENOENT, which would blame a directory the user never named.
  if (path === "") throw usageError("--checkpoint is an empty path: give the name of the file to write");
  let claimed: Stats;
  try {
    const file = await open(path, "wx", 0o600);
    try {
      claimed = await file.stat();
    } finally {
      await file.close();
    }
  } catch (error) {
    throw await refusal(path, error, used);
  }
  return {
    release: async () => {
      const now = await stat(path).catch(() => undefined);
      // A written checkpoint came by rename: another file, never empty.
      if (now === undefined || now.ino !== claimed.ino || now.dev !== claimed.dev || now.size !== 0) return;
      await unlink(path).catch(() => undefined);
    },
  };
}

async function refusal(path: string, error: unknown, used: HintedConnection | undefined): Promise<CliError> {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  // A path ending in `/`: a directory, whether or not it exists.
  if (code === "EISDIR") return usageError(`--checkpoint ${path} names a directory: give the name of a file`, error);
  if (code !== "EEXIST") return usageError(`--checkpoint ${path}: its directory does not exist or is not writable`, error);
  const existing = await stat(path).catch(() => undefined);
  // Only a regular file can be a checkpoint: the advice to resume or delete it must never reach
  // a directory or a device (deleting /dev/null as root breaks the system).
  if (existing?.isDirectory() === true) {
    return usageError(`--checkpoint ${path} is a directory: give the name of a file to create in it`, error);
  }
  if (existing !== undefined && !existing.isFile()) {
    return usageError(
      `--checkpoint ${path} is not a regular file (a device, FIFO or socket): give the name of a file that does not exist yet`,
      error,
    );
  }
  if (existing?.isFile() === true && existing.size === 0) {
    return usageError(`--checkpoint ${path} is empty: ${EMPTY_CLAIM}; delete the file if no other \`golem-stream invoke\` uses it`, error);
  }
  // Another invocation's checkpoint: replacing it would lose the way to resume that invocation.
  return usageError(
    `--checkpoint ${path} already exists; continue that invocation with \`${resumeCommand(path, used)}\`, or delete the file`,
    error,
  );
}
