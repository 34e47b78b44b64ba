/**
 * `serve`'s data directory: sessions.db holds small values and inputs, so the directory is made
 * for this user only. One `serve` creates is 0700 (its parents too); one that already existed
 * is the user's and keeps its mode, with a warning when others can read it.
 */
import { stat } from "node:fs/promises";
import { CliError, EXIT } from "./exit-codes.js";
import { shellWord } from "./io/shell-word.js";
import { makeDirectory } from "./make-directory.js";

export async function createDataDir(dataDir: string): Promise<void> {
  // The mode applies to every directory created on the way; a umask can only narrow it.
  await makeDirectory(dataDir, 0o700).catch((cause: unknown) => {
    throw new CliError(EXIT.usage, `cannot create the data directory ${dataDir}: ${reasonOf(cause)}`, { cause });
  });
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
