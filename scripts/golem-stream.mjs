#!/usr/bin/env node
// `pnpm golem-stream ...` at the repository root: the CLI of this checkout, built on first
// use (turbo's output goes to stderr, so stdout carries only what golem-stream prints).
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

const bin = fileURLToPath(new URL("../packages/cli/dist/golem-stream.js", import.meta.url));
if (!existsSync(bin)) {
  process.stderr.write("golem-stream: building the workspace first (once)…\n");
  const built = spawnSync("pnpm", ["exec", "turbo", "run", "build", "--filter=@golem-stream/cli...", "--output-logs=errors-only"], {
    cwd: fileURLToPath(new URL("..", import.meta.url)),
    stdio: ["ignore", process.stderr, process.stderr],
  });
  if (built.status !== 0) process.exit(built.status ?? 70);
}
process.argv.splice(1, 1, bin);
await import(pathToFileURL(bin).href);
