/**
 * `mkdir -p` that always ends. Node's `mkdirSync(path, { recursive: true })` never returns when
 * mkdir(2) answers ENOENT under a parent that exists (`/proc/nope`: procfs creates nothing
 * there): it tries the parent, finds it, tries the path again, and so on, on the CPU, deaf to
 * signals. Here each missing level is created once, top down, so the work is bounded by the
 * path's depth and the error of the level that cannot be made is thrown.
 */
import { mkdirSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";

/**
 * Creates `path` and its missing parents, each with `mode` (a umask can only narrow it); a
 * directory already there is left as it is. Throws mkdir's error (EEXIST when a file is in
 * the way, ENOTDIR, ENOENT, EACCES, …).
 */
export function makeDirectorySync(path: string, mode: number): void {
  const missing: string[] = [];
  // Up from the path to the first level that is there: at most one step per component.
  for (let level = resolve(path); ; level = dirname(level)) {
    const found = kindOf(level);
    if (found === "directory") break;
    missing.push(level);
    // Something in the way (a file, a level that cannot be searched): its mkdir says what.
    if (found === "other" || dirname(level) === level) break;
  }
  for (const level of missing.reverse()) {
    try {
      mkdirSync(level, { mode });
    } catch (error) {
      // Made by another process meanwhile: as good as made here.
      if (!((error as NodeJS.ErrnoException).code === "EEXIST" && kindOf(level) === "directory")) throw error;
    }
  }
}

function kindOf(path: string): "directory" | "missing" | "other" {
  try {
    return statSync(path).isDirectory() ? "directory" : "other";
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ENOENT" ? "missing" : "other";
  }
}
