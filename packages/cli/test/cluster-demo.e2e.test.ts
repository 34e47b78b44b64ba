/**
 * `pnpm cluster-demo` (the README's third command) runs
 * examples/cluster-demo.mjs: a throwaway PostgreSQL, two serve nodes, a
 * round-robin balancer, a digest whose connection is cut mid-upload and
 * resumed at the other node. It must work with nothing but this checkout
 * (no PostgreSQL installed), and clean up after itself.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";
import { postgresParentDir, track } from "./support/processes.js";

it("runs a two-node cluster end to end, resumes a cut upload at the other node and checks its own result", async () => {
  const script = fileURLToPath(new URL("../examples/cluster-demo.mjs", import.meta.url));
  // Its temporary folder and PostgreSQL go into the run's scratch root (where the user postgres may reach),
  // removed, and the server stopped, even if the demo is killed here.
  const env = { ...process.env, TMPDIR: postgresParentDir() };
  const child = track(spawn(process.execPath, [script], { stdio: ["ignore", "pipe", "pipe"], env }));
  let out = "";
  let err = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  // On failure the demo's own narration (stdout) says which step broke.
  expect(err, out).toBe("");
  expect(code).toBe(0);
  expect(out).toMatch(/^ {2}postgres:\/\/postgres@127\.0\.0\.1:\d+\/golem_stream \(its random password is never printed\)$/m);
  expect(out).toMatch(/node-a listening on http:\/\/127\.0\.0\.1:\d+/);
  expect(out).toMatch(/node-b listening on http:\/\/127\.0\.0\.1:\d+/);
  const cut = /cut connection #\d+ \(to (node-[ab]), which runs the invocation\) after [0-9.]+ MiB of upload/.exec(out);
  const resumed = /the CLI resumed by itself on connection #\d+, which the balancer sent to (node-[ab]); the upload completed there/.exec(
    out,
  );
  expect(cut).not.toBeNull();
  expect(resumed).not.toBeNull();
  expect(resumed![1]).not.toBe(cut![1]);
  expect(out).toMatch(/✓ matches the local sha256/);
  expect(out).toMatch(/node-a: drained in [0-9.]+m?s: every invocation this node ran has finished; left the cluster \(exit 0\)/);
  expect(out).toMatch(/node-b: drained in [0-9.]+m?s: every invocation this node ran has finished; left the cluster \(exit 0\)/);
  expect(out).toMatch(/PostgreSQL stopped; temporary files deleted/);
}, 60_000);
