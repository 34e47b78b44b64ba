/**
 * `pnpm golem-stream` in a checkout (scripts/golem-stream/): as the root README promises, it works
 * inside a workspace package's folder (where pnpm runs the nearest package's scripts, and this
 * package has none by that name), relative paths are the caller's, the hints spell the command as
 * typed there, and `kill -9` of the job (pnpm's process) ends the CLI too.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, test } from "vitest";
import type { Running } from "./support/processes.js";
import { TOKEN, track, waitFor } from "./support/processes.js";

const REPOSITORY = fileURLToPath(new URL("../../../", import.meta.url));
// A folder inside packages/server (a package of the workspace with no `golem-stream` script), in
// a place git ignores.
const artifacts = join(REPOSITORY, "packages", "server", "test-artifacts");
mkdirSync(artifacts, { recursive: true });
const callerDir = mkdtempSync(join(artifacts, "launcher-"));
/** Processes the CLI's launcher ran as, found before their pnpm was killed: killed after the file if still there. */
const grandchildren: number[] = [];
afterAll(() => {
  for (const pid of grandchildren) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone already, as it should be
    }
  }
  rmSync(callerDir, { recursive: true, force: true });
});

function pnpmGolemStream(args: readonly string[], env: Record<string, string> = {}): Running {
  const child = track(
    spawn("pnpm", ["golem-stream", ...args], {
      cwd: callerDir,
      env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "/tmp", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    }),
  );
  let out = "";
  let err = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString("utf8")));
  child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString("utf8")));
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: Buffer; stderr: string }>((resolve) => {
    // "close": once every holder of the pipes is gone, the CLI's node process included.
    child.on("close", (code, signal) => resolve({ code, signal, stdout: Buffer.from(out), stderr: err }));
  });
  return { child, stdout: () => Buffer.from(out), stderr: () => err, done };
}

/** The child processes of `pid` (Linux: each thread lists the children it started). */
function childrenOf(pid: number): number[] {
  return readdirSync(`/proc/${pid}/task`).flatMap((thread) => {
    const text = readFileSync(`/proc/${pid}/task/${thread}/children`, "utf8").trim();
    return text === "" ? [] : text.split(/\s+/).map(Number);
  });
}

test("serve through pnpm inside packages/server: the caller's folder, the typed command, and kill -9 of pnpm ends it", async () => {
  const serve = pnpmGolemStream(["serve", "--port", "0", "--token", TOKEN, "--data-dir", "state", "--log-level", "warn", "--no-console"]);
  let url = "";
  await waitFor(
    serve,
    () => {
      url = /^listening on (\S+)$/m.exec(serve.stdout().toString())?.[1] ?? "";
      return /^Stop with/m.test(serve.stdout().toString());
    },
    "the banner",
  );
  const banner = serve.stdout().toString();
  expect(banner).toContain(`data directory ${join(callerDir, "state")}\n`);
  expect(banner).toContain("\n  pnpm golem-stream types\n");

  const codegen = await pnpmGolemStream(["codegen", "--out", "agents.ts"], { GOLEM_STREAM_URL: url, GOLEM_STREAM_TOKEN: TOKEN }).done;
  expect(codegen.stderr).toBe("1 contract written to agents.ts: echoContract (echo)\n");
  expect(codegen.code).toBe(0);
  expect(readFileSync(join(callerDir, "agents.ts"), "utf8")).toContain("defineAgentType");

  const pnpmPid = serve.child.pid ?? 0;
  grandchildren.push(...childrenOf(pnpmPid));
  expect(grandchildren.length).toBeGreaterThan(0);
  serve.child.kill("SIGKILL");
  // Resolves only once the CLI, which holds the same stdout and stderr, has exited as well.
  const ended = await serve.done;
  expect(ended.signal).toBe("SIGKILL");
});

test("--help through pnpm spells every command line as typed in the checkout", async () => {
  const help = await pnpmGolemStream(["--help"]).done;
  expect(help.code).toBe(0);
  const text = help.stdout.toString();
  expect(text).toMatch(/^Usage: pnpm golem-stream \[options\] \[command\]$/m);
  expect(text).toContain("\n  $ pnpm golem-stream types\n");
  expect(text).toContain("| pnpm golem-stream invoke echo split");
  // No command line left with a bare `golem-stream`.
  expect(text.replaceAll("pnpm golem-stream ", "")).not.toMatch(/(^|[\s|`(])golem-stream /m);
  // Paths and longer names are not commands.
  const serve = (await pnpmGolemStream(["serve", "--help"]).done).stdout.toString();
  expect(serve).toContain("$XDG_STATE_HOME/golem-stream");
  expect(serve).not.toContain("/pnpm golem-stream");
  expect(serve).toContain("\n  $ pnpm golem-stream serve --port 9000");
});
