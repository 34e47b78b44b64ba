/**
 * `serve --log-file FILE`: the server's log appended to a file instead of stderr. A server started
 * in the background of a terminal (`golem-stream serve &`) would otherwise write its events
 * between the output of the commands typed next in that same terminal; the banner (stdout) and
 * errors that stop it still go to the terminal. The file is created 0600, like the data directory's
 * files: the log names accounts and principals.
 */
import { createWriteStream, type WriteStream } from "node:fs";
import { usageError } from "../exit-codes.js";
import type { CliIo } from "./cli-io.js";

/** Runs `command` with its stderr (the log) going to `path`, appended; as given when `path` is undefined. */
export async function withLogFile<T>(path: string | undefined, io: CliIo, command: (io: CliIo) => Promise<T>): Promise<T> {
  if (path === undefined) return command(io);
  const file = await openForAppend(path);
  try {
    return await command({ ...io, stderr: file });
  } finally {
    // Every line is in the file before the process exits (bin.ts exits right after the command).
    await new Promise<void>((resolve) => file.end(resolve));
  }
}

function openForAppend(path: string): Promise<WriteStream> {
  return new Promise((resolve, reject) => {
    const file = createWriteStream(path, { flags: "a", mode: 0o600 });
    file.once("open", () => resolve(file));
    file.once("error", (error) => reject(usageError(`cannot open --log-file ${path}: ${error.message}`, error)));
  });
}
