/**
 * `serve`'s data directory: sessions.db holds small values and inputs, so the directory is made
 * for this user only. One `serve` creates is 0700 (its parents too); one that already existed
 * is the user's and keeps its mode, with a warning when others can read it. A start that fails
 * before it listens (a token file that cannot be read) removes the directories it created while
 * they are still empty, so that a mistyped first start leaves no empty data directory behind.
 */
import { rmdir, stat } from "node:fs/promises";
import { CliError, EXIT } from "./exit-codes.js";
import { shellWord } from "./io/shell-word.js";
import { makeDirectory } from "./make-directory.js";

/** Creates the data directory; resolves to the directories it created, topmost first (make-directory.ts). */
export async function createDataDir(dataDir: string): Promise<string[]> {
  // The mode applies to every directory created on the way; a umask can only narrow it.
  return makeDirectory(dataDir, 0o700).catch((cause: unknown) => {
    throw new CliError(EXIT.usage, `cannot create the data directory ${dataDir}: ${reasonOf(cause)}`, { cause });
  });
}

/**
 * The directories a start created, removed if it fails before it listens, deepest first, each
 * only while empty (`rmdir`, never a recursive removal): from the moment it was made, another
 * `serve` started on the same path, or any other program, may have put files there, and those
 * are never the failed start's to delete. A start that failed after writing its own files there
 * (a port in use: the keyring, the database) leaves them, as a start always did.
 */
export class StartCleanup {
  #created: string[] = [];
  #listening = false;

  /** The start made these directories, topmost first (`createDataDir`'s answer). */
  created(directories: readonly string[]): void {
    this.#created = [...directories].reverse();
  }

  /** The server listens: nothing is removed any more. */
  listening(): void {
    this.#listening = true;
  }

  /** The start failed: removes the directories it made that are still empty. Never throws: the start's own error is what to report. */
  async undo(): Promise<void> {
    if (this.#listening) return;
    for (const level of this.#created) {
      // Not empty (or not removable): neither it nor a parent of it is the start's to remove.
      if (
        !(await rmdir(level).then(
          () => true,
          () => false,
        ))
      )
        return;
    }
  }
}

/** A warning when users other than the owner may list or read the data directory; undefined when they cannot. */
export async function exposedDataDir(dataDir: string): Promise<string | undefined> {
  const mode = await stat(dataDir).then(
    (stats) => stats.mode & 0o777,
    () => undefined,
  );
  if (mode === undefined || (mode & 0o077) === 0) return undefined;
  return `the data directory ${dataDir} is readable by others (mode ${mode.toString(8).padStart(4, "0")}); serve does not change a directory it did not create: \`chmod 700 ${dataDir}\` keeps sessions.db to you`;
}

/** The errno text without the path Node repeats (`ENOTDIR: not a directory, mkdir '/x/y'`). */
function reasonOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "EEXIST" || code === "ENOTDIR") return `${error.message.replace(/, \w+ '.*'$/, "")} (a file is in the way)`;
  // Under a parent that exists (make-directory.ts): the file system refuses, as /proc does.
  if (code === "ENOENT") return `${error.message.replace(/, \w+ '.*'$/, "")} (the file system there makes no new directory)`;
  return error.message.replace(/, \w+ '.*'$/, "");
}
