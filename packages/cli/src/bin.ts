#!/usr/bin/env node
/**
 * The `golem-stream` executable: wires the real process into `runCli`.
 * The first SIGINT/SIGTERM/SIGHUP asks the running command to stop cleanly; a
 * second one exits at once, 130 whichever the signal.
 */
import type { ExitNote } from "./io/cli-io.js";
import { ReloadRequests } from "./io/reload-requests.js";

const command = process.argv[2] ?? "";
// serve reads its certificate and token files again on SIGUSR2 (commands/serve-reload.ts). Only
// serve: any other command keeps the signal's default, ending the process. Listened to before any
// other module of the CLI is loaded: those are imported below, dynamically, because a static
// import is loaded and run before this module's first line, and until then SIGUSR2 ended the
// process (systemctl reload right after a start). A signal that arrives before serve listens is
// carried out once it does (io/reload-requests.ts keeps it).
const reload = command === "serve" ? new ReloadRequests() : undefined;
if (reload !== undefined) process.on("SIGUSR2", () => reload.request());

const [{ EXIT }, { runCli }] = await Promise.all([import("./exit-codes.js"), import("./program.js")]);

const controller = new AbortController();
const exitNote: ExitNote = { text: undefined };
let signalled = false;
const onSignal = (signal: NodeJS.Signals): void => {
  if (signalled) {
    // stderr is synchronous for files, pipes and terminals on POSIX: the line is out before the exit.
    if (exitNote.text !== undefined) process.stderr.write(`golem-stream: ${exitNote.text}\n`);
    // The exit table's status for an interrupt, whichever signal it was (128 + 15 would be news to a script).
    process.exit(EXIT.interrupted);
  }
  signalled = true;
  controller.abort(signal);
};
process.on("SIGINT", onSignal);
process.on("SIGTERM", onSignal);
// A hang-up (the terminal closed, an ssh connection dropped) ends the run for the same reason:
// left to its default it killed the process, and without a checkpoint nothing could ever resume
// or cancel the invocation it left running. stderr is usually gone with the terminal.
process.on("SIGHUP", onSignal);
// A closed stdout (`golem-stream ... | head`) is not a crash. invoke and resume see it on their
// next write and stop as on Ctrl-C, cancelling or detaching first (output/session-runner.ts);
// any other command has nothing to leave behind: stop quietly at once, with 141 as the exit table
// says (exiting 0 told a script under `set -o pipefail` that all of the output was taken).
const stopsItself = ["invoke", "resume"].includes(command);
// serve is the exception: a server must go on serving, and finish a drain, whatever became of
// its stdout, which only says where it listens and how a drain went (the log is on stderr). Its
// failure changes nothing (io/cli-io.ts, announce); ended on it, a drain was cut short.
const ignoresStdout = command === "serve";
/** Any other failure of stdout (a full disk, /dev/full): the command's output is lost, so it did not succeed. */
let stdoutFailure: NodeJS.ErrnoException | undefined;
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (ignoresStdout) return;
  if (error.code === "EPIPE" && !stopsItself) process.exit(EXIT.stdoutClosed);
  stdoutFailure ??= error;
});
// stderr only carries diagnostics: one that fails (closed by its reader as in `|& head`, a full
// disk, a terminal that hung up) loses them and changes nothing else. The run goes on, a cancel
// still waits for the server, and the exit status is the run's own. Unhandled, the error event
// crashed the process at its next line (exit 1), before the cancel was sent.
process.stderr.on("error", () => undefined);

const code = await runCli(process.argv.slice(2), {
  // Never fstat(0) before the first dynamic import: on Node 20.20 that was seen to make the
  // loader skip realpath for a CommonJS dependency (cli-progress then missed its own deps).
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  ...(process.argv[1] === undefined ? {} : { executable: process.argv[1] }),
  signal: controller.signal,
  ...(reload === undefined ? {} : { reload }),
  exitNote,
});
// Every output write was awaited, so nothing is lost by exiting now; an open
// socket, a reconnect timer or a paused stdin must not keep a finished
// command alive. A command that reported success while stdout failed (it
// writes without waiting: `types`, `keyring list`, …) exits as the table says: 74.
if (code === EXIT.success) {
  // An empty write's callback runs once the writes before it are done or failed.
  if (!process.stdout.destroyed) await new Promise<void>((resolve) => process.stdout.write("", () => resolve()));
  if (stdoutFailure !== undefined && stdoutFailure.code !== "EPIPE") {
    process.stderr.write(`golem-stream: could not write to stdout: ${stdoutFailure.message}\n`);
    process.exit(EXIT.outputFailed);
  }
}
process.exit(code);
