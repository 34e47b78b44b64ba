#!/usr/bin/env node
/**
 * Runs the model-based session tests (test/session-model.slow.test.ts: the
 * `reverse` and `digest` models) with many more sequences than `pnpm test`
 * does.
 *
 *   pnpm -F @golem-stream/server test:model-soak            # 5000 sequences
 *   pnpm -F @golem-stream/server test:model-soak 20000 40   # 20000 sequences of up to 40 moves
 *
 * A failure prints fast-check's seed, path and replayPath; replay it with
 * MODEL_SEED, MODEL_PATH and MODEL_REPLAY_PATH, MODEL_COMMANDS set to the
 * moves given here, and `-t reverse` or `-t digest` (docs/protocol/server.md).
 */
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const [runs = "5000", commands = "30"] = process.argv.slice(2);
for (const [name, value] of [
  ["runs", runs],
  ["commands", commands],
]) {
  if (!/^[1-9][0-9]*$/.test(value)) {
    console.error(`model-soak: ${name} must be a positive integer, not ${JSON.stringify(value)}`);
    process.exit(2);
  }
}
const packageDir = dirname(dirname(fileURLToPath(import.meta.url)));
const vitest = join(dirname(createRequire(import.meta.url).resolve("vitest/package.json")), "vitest.mjs");
const result = spawnSync(process.execPath, [vitest, "run", "--project", "e2e", "test/session-model.slow.test.ts"], {
  cwd: packageDir,
  stdio: "inherit",
  env: { ...process.env, MODEL_RUNS: runs, MODEL_COMMANDS: commands },
});
process.exit(result.status ?? 1);
