#!/usr/bin/env node
/**
 * The `golem-stream` executable: wires the real process into `runCli`.
 * The first SIGINT/SIGTERM asks the running command to stop cleanly; a
 * second one exits at once.
 */
import { runCli } from "./program.js";

const controller = new AbortController();
let signalled = false;
const onSignal = (signal: NodeJS.Signals): void => {
  if (signalled) process.exit(128 + (signal === "SIGINT" ? 2 : 15));
  signalled = true;
  controller.abort(signal);
};
process.on("SIGINT", onSignal);
process.on("SIGTERM", onSignal);
// A closed stdout (`golem-stream ... | head`) is not a crash: stop quietly.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
});

const code = await runCli(process.argv.slice(2), {
  // Never fstat(0) before the first dynamic import: on Node 20.20 that was seen to make the
  // loader skip realpath for a CommonJS dependency (cli-progress then missed its own deps).
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  signal: controller.signal,
});
// Every output write was awaited, so nothing is lost by exiting now; an open
// socket, a reconnect timer or a paused stdin must not keep a finished
// command alive.
process.exit(code);
