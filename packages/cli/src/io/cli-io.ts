/**
 * The process surroundings a command runs in. Commands never touch
 * `process` directly, so the whole CLI can also run inside a test or
 * another program with its own streams and environment.
 */
import type { Readable, Writable } from "node:stream";
import { printable } from "./printable.js";

export interface CliIo {
  readonly stdin: Readable & { readonly isTTY?: boolean };
  readonly stdout: Writable & { readonly isTTY?: boolean };
  // Diagnostics only: when it fails (closed, full), its lines are lost and nothing else changes;
  // its owner handles its error events (bin.ts ignores them).
  readonly stderr: Writable & { readonly isTTY?: boolean; readonly columns?: number };
  readonly env: Readonly<Record<string, string | undefined>>;
  /**
   * The path the executable was started by (`process.argv[1]`), when it was: one in a project's
   * `node_modules/.bin` is not on the user's PATH, so hints spell the command `npx golem-stream`
   * (io/command-name.ts).
   */
  readonly executable?: string;
  /** Aborted on SIGINT/SIGTERM/SIGHUP: long-running commands stop cleanly when it fires. */
  readonly signal: AbortSignal;
  /**
   * Dispatches `reload` on SIGUSR2, for `serve` only (commands/serve-reload.ts); absent elsewhere.
   * The executable's (io/reload-requests.ts) keeps a signal that came before any listener for the first one.
   */
  readonly reload?: EventTarget;
  /**
   * What is left to say if a second signal exits the process at once (bin.ts does, without
   * waiting for the command): set while that would leave something behind, such as a cancel
   * that has not reached the server yet. Absent when nothing can exit that way (tests, embedding).
   */
  readonly exitNote?: ExitNote;
}

export interface ExitNote {
  text: string | undefined;
}

/**
 * Writes one line of diagnostics to stderr. Its control characters are escaped (io/printable.ts):
 * a line often quotes a server (an error's message, an agent type's name), whose escape sequences
 * must not reach the terminal, and a newline in it must not start a line the CLI did not write.
 */
export function report(io: CliIo, line: string): void {
  // A stderr that failed before is gone: writing again would only raise its error once more.
  if (io.stderr.destroyed) return;
  io.stderr.write(`${printable(line)}\n`);
}

/**
 * Writes what `serve` says of itself on stdout (where it listens, how a drain went). A server
 * goes on serving, and finishes a drain, whatever became of its stdout (its reader gone, a full
 * disk): its log is on stderr, and those lines are only a courtesy. So a stdout that failed is
 * not written again, and its errors are left to its owner (bin.ts ignores them for serve).
 */
export function announce(io: CliIo, text: string): void {
  if (io.stdout.destroyed || io.stdout.writableEnded) return;
  io.stdout.write(text);
}
