/**
 * `mkdir -p` that always ends. Node's `mkdir(path, { recursive: true })` never returns when
 * mkdir(2) answers ENOENT under a parent that exists (`/proc/nope`: procfs creates nothing
 * there): it tries the parent, finds it, tries the path again, and so on, on the CPU, deaf to
 * signals. Here each missing level is created once, top down, so the work is bounded by the
 * path's depth and the error of the level that cannot be made is thrown.
 *
 * The server keeps a synchronous twin (its `store/make-directory.ts`, for the SQLite store's
 * constructor). Not shared: the server is an optional peer of the CLI, which makes the keyring's
 * and the token's directories without it, and no lower package holds Node file helpers.
 */
import { mkdir, stat } from "node:fs/promises";
import { dirname, resolve } from "node:path";

/**
 * Creates `path` and its missing parents, each with `mode` (a umask can only narrow it); a
 * directory already there is left as it is. Resolves to the directories this call created,
 * topmost first (none when `path` was there, or another process made them meanwhile): removing
 * them, deepest first, undoes the call. Throws mkdir's error (EEXIST when a file is in the way,
 * ENOTDIR, ENOENT, EACCES, …).
 */
export async function makeDirectory(path: string, mode: number): Promise<string[]> {
  const missing: string[] = [];
  // Up from the path to the first level that is there: at most one step per component.
  for (let level = resolve(path); ; level = dirname(level)) {
    const found = await kindOf(level);
    if (found === "directory") break;
    missing.push(level);
    // Something in the way (a file, a level that cannot be searched): its mkdir says what.
    if (found === "other" || dirname(level) === level) break;
  }
  const created: string[] = [];
  for (const level of missing.reverse()) {
    try {
      await mkdir(level, { mode });
      created.push(level);
    } catch (error) {
      // Made by another process meanwhile: as good as made here, but not this call's to remove.
      if (!((error as NodeJS.ErrnoException).code === "EEXIST" && (await kindOf(level)) === "directory")) throw error;
    }
  }
  return created;
}

async function kindOf(path: string): Promise<"directory" | "missing" | "other"> {
  return stat(path).then(
    (stats) => (stats.isDirectory() ? "directory" : "other"),
    (error: unknown) => ((error as NodeJS.ErrnoException).code === "ENOENT" ? "missing" : "other"),
  );
}
