/**
 * Crash-safe file replacement. After `replaceFileAtomically` resolves, a
 * reader (after any crash or power loss) sees either the previous contents
 * or the new contents in full, never a mix or an empty file:
 *
 * 1. write a temporary file in the same directory (rename is only atomic
 *    within one file system);
 * 2. fsync it, so its data is on disk before it becomes visible by name;
 * 3. rename it over the target (atomic on POSIX);
 * 4. fsync the directory, so the rename itself survives a power loss.
 */
import { randomBytes } from "node:crypto";
import { open, readdir, rename, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

function temporaryPrefix(path: string): string {
  return `.${basename(path)}.`;
}

export interface ReplaceOptions {
  /**
   * Permission bits of the new file, before the process's umask. Default 0o600, private: what
   * this CLI replaces is mostly secret (checkpoints hold session tokens, keyrings signing keys).
   * Source code others build from (codegen's module) passes 0o666: 0644 under the usual umask.
   */
  readonly mode?: number;
}

export async function replaceFileAtomically(path: string, contents: string | Uint8Array, options: ReplaceOptions = {}): Promise<void> {
  const directory = dirname(path);
  const temporary = join(directory, `${temporaryPrefix(path)}${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
  const file = await open(temporary, "wx", options.mode ?? 0o600);
  let renamed = false;
  try {
    try {
      await file.writeFile(contents);
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(temporary, path);
    renamed = true;
    await syncDirectory(directory);
  } finally {
    if (!renamed) await unlink(temporary).catch(() => undefined);
  }
}

async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, "r");
  try {
    await handle.sync();
  } catch (error) {
    // Some file systems (and Windows) refuse fsync on a directory; the rename
    // is still atomic there, only its durability across power loss is weaker.
    if (!isUnsupportedSync(error)) throw error;
  } finally {
    await handle.close();
  }
}

function isUnsupportedSync(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "EINVAL" || code === "ENOTSUP" || code === "EPERM" || code === "EISDIR";
}

/**
 * Deletes temporary files a killed writer of `path` left behind (a crash
 * between steps 1 and 3 above). Call it before the first replacement, while
 * no other process writes `path`. Never touches `path` itself.
 */
export async function removeStaleTemporaries(path: string): Promise<void> {
  const directory = dirname(path);
  const prefix = temporaryPrefix(path);
  const names = await readdir(directory).catch(() => [] as string[]);
  const stale = names.filter((name) => name.startsWith(prefix) && /^\.[0-9]+\.[0-9a-f]{8}\.tmp$/.test(name.slice(prefix.length - 1)));
  await Promise.all(stale.map((name) => unlink(join(directory, name)).catch(() => undefined)));
}
