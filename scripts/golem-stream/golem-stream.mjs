#!/usr/bin/env node
// `pnpm golem-stream ...` from any folder of the checkout: the CLI of this checkout, built on
// first use (turbo's output goes to stderr, so stdout carries only what golem-stream prints).
//
// How it is reached: the workspace root depends on this folder (`link:`), so pnpm puts this file
// on the PATH as `golem-stream` in node_modules/.bin. There is no root script of that name: in any
// folder, `pnpm golem-stream` then falls back to `pnpm exec golem-stream`, which runs in the
// caller's folder (relative paths mean what the user meant) with the workspace root's bin on the
// PATH, in every package of the workspace alike, and prints nothing of its own.
//
// It runs the CLI in this same process (an import, not a child), so the process tree of a job is
// pnpm and this one node process.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

const bin = fileURLToPath(new URL("../../packages/cli/dist/golem-stream.js", import.meta.url));
if (!existsSync(bin)) {
  process.stderr.write("golem-stream: building the workspace first (once)…\n");
  const built = spawnSync("pnpm", ["exec", "turbo", "run", "build", "--filter=@golem-stream/cli...", "--output-logs=errors-only"], {
    cwd: fileURLToPath(new URL("../..", import.meta.url)),
    stdio: ["ignore", process.stderr, process.stderr],
  });
  if (built.status !== 0) process.exit(built.status ?? 70);
}

// Hints the CLI prints (serve's banner, "resume with ...") spell the command as it is typed here.
process.env["GOLEM_STREAM_COMMAND"] = "pnpm golem-stream";

if ((process.env["npm_config_user_agent"] ?? "").startsWith("pnpm/")) followParent();

process.argv.splice(1, 1, bin);
await import(pathToFileURL(bin).href);

/**
 * `pnpm golem-stream ... &` makes pnpm the job's process: `kill -9 $!` reaches pnpm, not this
 * process. pnpm passes SIGINT and SIGTERM on to us, so a parent that is gone while we run was
 * killed without a chance to (SIGKILL): do the same to ourselves, as `kill -9` of an installed
 * `golem-stream` would have. Node offers no parent-death event (Linux's PR_SET_PDEATHSIG is not
 * reachable from JavaScript), so the parent's id is compared a few times a second; the timer does
 * not keep the process alive.
 */
function followParent() {
  const parent = process.ppid;
  const everyMs = 100;
  setInterval(() => {
    if (process.ppid !== parent) process.kill(process.pid, "SIGKILL");
  }, everyMs).unref();
}
