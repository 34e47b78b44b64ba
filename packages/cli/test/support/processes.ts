/**
 * Runs the real `golem-stream` executable (the `bin` of package.json, the
 * bundle dist/golem-stream.js) as child processes:
 * a server, and CLI commands against it. Tests see exactly what a user sees:
 * stdout bytes, stderr text and the exit code.
 */
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, inject } from "vitest";
import { POSTGRES_DIR, recordChild, removeTree } from "./scratch-root.js";

const manifest = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { bin: Record<string, string> };
/** What `npm install` links as `golem-stream`. */
export const BIN = fileURLToPath(new URL(`../../${manifest.bin["golem-stream"] ?? "missing bin"}`, import.meta.url));
export const TOKEN = "test-token-0123456789";

/**
 * One folder per test file in the run's scratch root (made and finally removed by the global
 * setup, scratch-root.ts), holding every scratch directory: removed after the file's tests, once
 * the processes the file started and left running are killed. When that is skipped (an earlier
 * after-hook threw, the worker died), the run's teardown removes it.
 */
let fileDir: string | undefined;
// Registered on import, so it runs after the file's own after-hooks (which stop its processes).
afterAll(async () => {
  await killLeftovers();
  if (fileDir !== undefined) removeTree(fileDir);
  fileDir = undefined;
});

export function scratchDir(): string {
  fileDir ??= mkdtempSync(join(inject("cliScratchRoot"), "file-"));
  return mkdtempSync(join(fileDir, "scratch-"));
}

/** Where the file's throwaway PostgreSQL servers go (`startLocalPostgres`'s `parentDir`): in the run's root, so its teardown stops and removes one left behind. */
export function postgresParentDir(): string {
  return join(inject("cliScratchRoot"), POSTGRES_DIR);
}

/** The processes started by this file that have not exited. */
const live = new Set<ChildProcess>();

/**
 * Keeps `child` on the list of this file's processes until it exits: killed after the file's
 * tests if still running (a test that failed before stopping it), killed when the worker exits,
 * and recorded in the run's root so the run's teardown kills it if the worker died first.
 */
export function track<T extends ChildProcess>(child: T): T {
  if (child.pid === undefined) return child;
  live.add(child);
  const record = recordChild(inject("cliScratchRoot"), child.pid, child.spawnargs);
  child.once("exit", () => {
    live.delete(child);
    rmSync(record, { force: true });
  });
  return child;
}

async function killLeftovers(): Promise<void> {
  await Promise.all(
    [...live].map((child) => {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGKILL");
      return exited;
    }),
  );
}

// A worker that exits (also on an error) takes its children with it; signals cannot be awaited here.
process.once("exit", () => {
  for (const child of live) child.kill("SIGKILL");
});

export interface RunResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: Buffer;
  readonly stderr: string;
}

export interface Running {
  readonly child: ChildProcess;
  /** Everything written to stdout so far. */
  stdout(): Buffer;
  stderr(): string;
  readonly done: Promise<RunResult>;
}

export interface StartOptions {
  readonly env?: Record<string, string>;
  readonly stdin?: Buffer | string;
  /** A file descriptor to use as the child's stdin instead of a pipe (`< file`: open the file, pass its fd). */
  readonly stdinFd?: number;
  /** A file descriptor to use as the child's stdout instead of a pipe (e.g. /dev/full). */
  readonly stdoutFd?: number;
  /** A file descriptor to use as the child's stderr instead of a pipe (e.g. /dev/full); its `stderr()` is then empty. */
  readonly stderrFd?: number;
  /** Leave stdin open after `stdin` was written (the test writes more, or ends it, through `child.stdin`). */
  readonly openStdin?: boolean;
  /** The working directory to run in (default: the test's own, the package's folder). */
  readonly cwd?: string;
  /** The path to start the executable by, such as a link to BIN where npm would make one (default: BIN). */
  readonly executable?: string;
}

export function start(args: readonly string[], options: StartOptions = {}): Running {
  const child = track(
    spawn(process.execPath, [options.executable ?? BIN, ...args], {
      cwd: options.cwd,
      env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "/tmp", ...options.env },
      stdio: [options.stdinFd ?? "pipe", options.stdoutFd ?? "pipe", options.stderrFd ?? "pipe"],
    }),
  );
  const out: Buffer[] = [];
  let err = "";
  child.stdout?.on("data", (chunk: Buffer) => out.push(chunk));
  child.stderr?.on("data", (chunk: Buffer) => (err += chunk.toString("utf8")));
  // A child killed with input still queued would otherwise fail the test with EPIPE.
  child.stdin?.on("error", () => undefined);
  if (options.openStdin === true) {
    if (options.stdin !== undefined) child.stdin?.write(options.stdin);
  } else if (options.stdin !== undefined) child.stdin?.end(options.stdin);
  else child.stdin?.end();
  const done = new Promise<RunResult>((resolve) => {
    child.on("close", (code, signal) => resolve({ code, signal, stdout: Buffer.concat(out), stderr: err }));
  });
  return { child, stdout: () => Buffer.concat(out), stderr: () => err, done };
}

export function run(args: readonly string[], options: StartOptions = {}): Promise<RunResult> {
  return start(args, options).done;
}

/** Resolves once `predicate` holds for the process's output, checking on every chunk. */
export function waitFor(running: Running, predicate: () => boolean, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (predicate()) {
        cleanup();
        resolve();
      }
    };
    const onClose = () => {
      cleanup();
      if (predicate()) resolve();
      else reject(new Error(`process exited before ${what}; stderr: ${running.stderr()}`));
    };
    const cleanup = () => {
      running.child.stdout?.off("data", check);
      running.child.stderr?.off("data", check);
      running.child.off("close", onClose);
    };
    running.child.stdout?.on("data", check);
    running.child.stderr?.on("data", check);
    running.child.on("close", onClose);
    check();
  });
}

export interface ServerProcess {
  readonly running: Running;
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  /** Environment that points CLI commands at this server. */
  readonly env: Record<string, string>;
  /** SIGTERM and wait: the clean stop. */
  stop(): Promise<RunResult>;
  /** SIGKILL: the crash. */
  kill(): Promise<RunResult>;
}

export async function startServer(dataDir: string, port = 0): Promise<ServerProcess> {
  return startServe(["--port", String(port), "--token", TOKEN, "--data-dir", dataDir, "--log-level", "warn"], dataDir);
}

export interface ServeAgentsOptions extends StartOptions {
  /** `--log-level`; `warn` keeps the test's output to what went wrong. */
  readonly logLevel?: "error" | "warn" | "info" | "debug";
}

/**
 * `golem-stream serve --agents <module>` on a free port, with the test token and a fresh data
 * directory, once it listens; `extra` are more options for `serve` (`--demo`, `--log-format json`).
 * A module path is relative to the package (the tests' working directory).
 */
export async function startServeAgents(
  module: string,
  extra: readonly string[] = [],
  options: ServeAgentsOptions = {},
): Promise<ServerProcess> {
  const { logLevel = "warn", ...startOptions } = options;
  const dataDir = scratchDir();
  const args = ["--port", "0", "--token", TOKEN, "--data-dir", dataDir, "--agents", module, "--log-level", logLevel, ...extra];
  return startServe(args, dataDir, startOptions);
}

/** `golem-stream serve <args>`, once it listens; `dataDir` is only recorded. */
export async function startServe(args: readonly string[], dataDir = "", options: StartOptions = {}): Promise<ServerProcess> {
  const running = start(["serve", ...args], options);
  let url = "";
  await waitFor(
    running,
    () => {
      const match = /^listening on (https?:\/\/\S+)$/m.exec(running.stdout().toString("utf8"));
      if (match !== null) url = match[1] as string;
      return match !== null;
    },
    "the server listened",
  );
  return {
    running,
    url,
    port: Number(new URL(url).port),
    dataDir,
    env: { GOLEM_STREAM_URL: url, GOLEM_STREAM_TOKEN: TOKEN },
    stop: async () => {
      running.child.kill("SIGTERM");
      return running.done;
    },
    kill: async () => {
      running.child.kill("SIGKILL");
      return running.done;
    },
  };
}

/**
 * The `item` of every `{"stream":name,"item":..}` line of `name`, in order;
 * for bare output (a single stream of non-strings: one JSON value per line,
 * no envelope) every line is an item of `$`.
 */
export function itemsOf(stdout: Buffer | string, name: string): unknown[] {
  return lines(stdout)
    .map((line) => JSON.parse(line) as unknown)
    .flatMap((line) => {
      if (typeof line === "object" && line !== null && !Array.isArray(line) && ("stream" in line || "result" in line)) {
        const enveloped = line as { stream?: string; item?: unknown };
        return enveloped.stream === name ? [enveloped.item] : [];
      }
      return name === "$" ? [line] : [];
    });
}

export function lines(stdout: Buffer | string): string[] {
  return stdout
    .toString()
    .split("\n")
    .filter((line) => line !== "");
}
