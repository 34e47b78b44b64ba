/**
 * Writes a file the user named for output (`codegen -o FILE`) the way `cp` and a compiler do:
 *
 * - a symlink is followed to the file it names (hops up to Linux's limit), and that file is
 *   written: the link stays a link, as an editor or `tsc` leaves it. A link to nothing creates
 *   its target, as the shell's `>` does;
 * - a regular file, or a new one, is replaced atomically (checkpoint/atomic-file.ts) in its own
 *   directory, so an interrupted run never leaves half a module;
 * - anything else that exists (a FIFO, a character or block device) is opened and written in
 *   place, with no temporary file and no rename: renaming over it put a regular file where the
 *   user's pipe or device was. Such a target has no contents to keep whole anyway. A directory
 *   is refused by the open (EISDIR).
 *
 * Checkpoints and keyrings keep replaceFileAtomically as it is: they are this CLI's own files,
 * private and always regular, and their stale temporaries are found beside the path given.
 */
import { lstat, open, readlink, stat } from "node:fs/promises";
import type { Stats } from "node:fs";
import { dirname, resolve } from "node:path";
import { replaceFileAtomically } from "../checkpoint/atomic-file.js";

/** Symlinks followed before giving up with ELOOP: Linux's MAXSYMLINKS. */
const MAX_LINK_HOPS = 40;

export async function writeOutputFile(path: string, contents: string, mode: number): Promise<void> {
  const target = await followLinks(path);
  const existing = await statIfPresent(target, stat);
  if (existing === undefined || existing.isFile()) {
    await replaceFileAtomically(target, contents, { mode });
    return;
  }
  // "w": O_WRONLY|O_CREAT|O_TRUNC. A FIFO's open waits for its reader, as `cp` and `>` do.
  const handle = await open(target, "w");
  try {
    await handle.writeFile(contents);
  } finally {
    await handle.close();
  }
}

/** The path a chain of symlinks at `path` ends at (`path` itself when it is no symlink). */
async function followLinks(path: string): Promise<string> {
  let current = resolve(path);
  for (let hops = 0; hops <= MAX_LINK_HOPS; hops++) {
    const info = await statIfPresent(current, lstat);
    if (info === undefined || !info.isSymbolicLink()) return current;
    current = resolve(dirname(current), await readlink(current));
  }
  throw Object.assign(new Error(`too many levels of symbolic links: ${path}`), { code: "ELOOP" });
}

async function statIfPresent(path: string, how: (path: string) => Promise<Stats>): Promise<Stats | undefined> {
  try {
    return await how(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException | null)?.code === "ENOENT") return undefined;
    throw error;
  }
}
