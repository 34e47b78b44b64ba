/**
 * `pnpm demo` (the README's first command, after install and build) runs
 * examples/demo.mjs: it must work on a machine with nothing but this
 * checkout — a real server, real CLI processes, a crash and a resume.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";
import { scratchDir, track } from "./support/processes.js";

it("runs the main job end to end and checks its own results", async () => {
  const script = fileURLToPath(new URL("../examples/demo.mjs", import.meta.url));
  // Its temporary folder goes into the run's scratch root, removed even if the demo is killed here.
  const child = track(
    spawn(process.execPath, [script], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, TMPDIR: scratchDir() } }),
  );
  let out = "";
  let err = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  expect(err).toBe("");
  expect(code).toBe(0);
  expect(out).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+/);
  expect(out).toMatch(/✓ matches the local sha256/);
  expect(out).toMatch(/upper, decoded: "HELLO\\nSTREAMING WORLD\\n"/);
  expect(out).toMatch(
    /✓ every item 0\.\.29 delivered in order; \d+ repeated since the last checkpoint write \(at most 100 ms of output\), none skipped/,
  );
  expect(out).toMatch(/stopped \(exit 0\)/);
});
