/**
 * Where an input stream's bytes come from: stdin, for the argument `-`, or the file any other
 * argument of a stream parameter names, as `cat`, `diff` and `sort` read theirs. Stdin can feed
 * one stream only; with files a method with several stream parameters is called from the command
 * line (`invoke … left.txt -`, `invoke … a.txt <(make-b)`).
 */
import { accessSync, constants, createReadStream, openSync, statSync } from "node:fs";
import { Socket } from "node:net";
import type { Stats } from "node:fs";
import type { Readable } from "node:stream";
import { LIMITS } from "@golem-stream/wire";
import { usageError } from "../exit-codes.js";
import { knownInputSize, refuseDirectoryStdin, stdinBytes } from "./stdin-source.js";

export interface InputSource {
  /** The stream parameter it feeds. */
  readonly parameter: string;
  /** What messages call it: `stdin`, or the file's path as the argument gave it. */
  readonly name: string;
  readonly fromStdin: boolean;
  /** Its bytes; a regular file is read a packed batch (1 MiB) at a time (stdin-source.ts says why). */
  readonly bytes: Readable;
  /** What a regular file holds, for progress's percentage; undefined for a pipe or a terminal. */
  readonly totalBytes: number | undefined;
}

/** Stdin for `parameter`; a directory redirected into it is refused. */
export function stdinSource(stdin: Readable, parameter: string): InputSource {
  refuseDirectoryStdin(stdin, parameter);
  return { parameter, name: "stdin", fromStdin: true, bytes: stdinBytes(stdin), totalBytes: knownInputSize(stdin) };
}

/**
 * The file `path` for `parameter`, checked before anything is sent: one that is missing, cannot
 * be read or is a directory is a usage error that starts with `what` (`argument 2 (right) is a
 * stream<string>`). A FIFO or a device is read as it is, like `< path`.
 */
export function fileSource(path: string, parameter: string, what: string): InputSource {
  const refuse = (problem: string, cause?: unknown) => usageError(`${what}, fed from - (stdin) or a file: ${problem}`, cause);
  let stats: Stats;
  try {
    stats = statSync(path);
    accessSync(path, constants.R_OK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === "ENOENT" ? "no such file" : code === "EACCES" ? "permission denied" : (code ?? String(error));
    throw refuse(`cannot read ${path} (${reason})`, error);
  }
  if (stats.isDirectory()) throw refuse(`${path} is a directory`);
  const bytes = stats.isFIFO() ? pipeReader(path, refuse) : createReadStream(path, { highWaterMark: LIMITS.maxPackedU8PayloadBytes });
  return { parameter, name: path, fromStdin: false, bytes, totalBytes: stats.isFile() ? stats.size : undefined };
}

/**
 * A FIFO or a pipe (`<(command)` names one) read the way Node reads a piped stdin: opened
 * non-blocking and watched by the event loop. A file stream's reads run in libuv's thread pool
 * and block there until the writer writes; one blocked when the run ended (Ctrl-C, a failed
 * invocation) held the process at its exit until the writer wrote or closed. Opened non-blocking,
 * a FIFO no writer has opened yet reads as empty, not as ended: its end comes once a writer has
 * come and gone, as for `< path`.
 */
function pipeReader(path: string, refuse: (problem: string, cause?: unknown) => Error): Readable {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    throw refuse(`cannot open ${path} (${(error as NodeJS.ErrnoException).code ?? String(error)})`, error);
  }
  return new Socket({ fd, readable: true, writable: false });
}
