/**
 * Real processes for the example's tests: `golem-stream serve --agents`
 * (the CLI this example depends on) and the client script, started from the
 * example's folder exactly as its README starts them.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const EXAMPLE_ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const TOKEN = "example-test-token";

/** The `golem-stream` executable of the installed `@golem-stream/cli`, as `pnpm serve` runs it. */
function cliBin(): string {
  const manifestPath = createRequire(import.meta.url).resolve("@golem-stream/cli/package.json");
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as { bin: Record<string, string> };
  return join(dirname(manifestPath), manifest.bin["golem-stream"] ?? "missing");
}

export interface Finished {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface Started {
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  readonly done: Promise<Finished>;
}

function start(args: readonly string[], env: Record<string, string> = {}, stdin?: string): Started {
  const child = spawn(process.execPath, args, { cwd: EXAMPLE_ROOT, env: { PATH: process.env["PATH"] ?? "", HOME: tmpdir(), ...env } });
  let out = "";
  let err = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString("utf8")));
  child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString("utf8")));
  child.stdin.on("error", () => undefined);
  child.stdin.end(stdin);
  const done = new Promise<Finished>((resolve) => child.on("close", (code) => resolve({ code, stdout: out, stderr: err })));
  return { child, stdout: () => out, stderr: () => err, done };
}

export function run(args: readonly string[], env?: Record<string, string>, stdin?: string): Promise<Finished> {
  return start(args, env, stdin).done;
}

/** `golem-stream <args>` with the CLI this example depends on. */
export function golemStream(args: readonly string[], env?: Record<string, string>, stdin?: string): Promise<Finished> {
  return run([cliBin(), ...args], env, stdin);
}

export interface Server {
  readonly url: string;
  /** Points the client script and the CLI at this server. */
  readonly env: Record<string, string>;
  /** SIGTERM, wait for the exit, remove the data directory. */
  stop(): Promise<Finished>;
}

/** `golem-stream serve --agents dist/agents.js` on a free port and a fresh data directory, once it listens. */
export async function serveAgents(): Promise<Server> {
  const dataDir = mkdtempSync(join(tmpdir(), "text-agent-"));
  const server = start([
    cliBin(),
    "serve",
    "--agents",
    "dist/agents.js",
    "--port",
    "0",
    "--token",
    TOKEN,
    "--data-dir",
    dataDir,
    "--log-level",
    "warn",
  ]);
  const url = await new Promise<string>((resolve, reject) => {
    const check = (): void => {
      const match = /^listening on (\S+)$/m.exec(server.stdout());
      if (match !== null) resolve(match[1] as string);
    };
    server.child.stdout?.on("data", check);
    void server.done.then(() => reject(new Error(`serve exited before it listened: ${server.stderr()}`)));
  });
  return {
    url,
    env: { GOLEM_STREAM_URL: url, GOLEM_STREAM_TOKEN: TOKEN },
    stop: async () => {
      server.child.kill("SIGTERM");
      const finished = await server.done;
      rmSync(dataDir, { recursive: true, force: true });
      return finished;
    },
  };
}
