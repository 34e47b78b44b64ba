/**
 * The run's scratch root: one folder `golem-stream-cli-test-XXXXXX` in the
 * OS's temporary directory per `vitest` run, made by the global setup, that
 * holds every test file's scratch folders, the throwaway PostgreSQL servers'
 * folders, and a file per process the tests started. The global teardown
 * removes it, whatever became of the files' own clean-up:
 *
 * - a test that failed or timed out, leaving processes it started running
 *   (they are killed here, found by their recorded ids);
 * - an after-hook that threw or timed out: vitest then skips the file's
 *   later after-hooks, the per-file removal among them;
 * - a worker that died before its after-hooks ran, its children orphaned
 *   and still writing into their data directories (so removal retries: a
 *   file created during the walk fails it with ENOTEMPTY);
 * - a run that was itself killed: the next run's setup removes every root
 *   whose run (the pid in `owner.pid`) no longer exists.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, chmodSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

export const SCRATCH_PREFIX = "golem-stream-cli-test-";
/** The pid of the vitest process whose run made the root. */
const OWNER_FILE = "owner.pid";
/** A file per live child process, named by its pid, holding its command line (to tell a reused pid). */
export const PIDS_DIR = "pids";
/** The `parentDir` of the tests' throwaway PostgreSQL servers. */
export const POSTGRES_DIR = "postgres";

/** How long a removal retries while something still writes into the tree (Node's rm retries EBUSY, ENOTEMPTY, EPERM, ...). */
const REMOVE_RETRIES = 20;
const REMOVE_RETRY_DELAY_MS = 100;
/** How long the teardown waits for a killed process to be gone before removing what it wrote to. */
const KILL_WAIT_MS = 5_000;

/** Makes the run's root (and its folders) in `parent`. */
export function createScratchRoot(parent = tmpdir()): string {
  const root = mkdtempSync(join(parent, SCRATCH_PREFIX));
  // As root, the tests' PostgreSQL runs as the user `postgres`, which must pass through to its folder.
  chmodSync(root, 0o711);
  mkdirSync(join(root, PIDS_DIR));
  mkdirSync(join(root, POSTGRES_DIR), { mode: 0o711 });
  chmodSync(join(root, POSTGRES_DIR), 0o711);
  writeFileSync(join(root, OWNER_FILE), String(process.pid));
  return root;
}

/** Removes `path` and everything below, retrying while a process still writes there. */
export function removeTree(path: string): void {
  rmSync(path, { recursive: true, force: true, maxRetries: REMOVE_RETRIES, retryDelay: REMOVE_RETRY_DELAY_MS });
}

/** Records a child process of the run, so the teardown can kill it if nothing else did. */
export function recordChild(root: string, pid: number, commandLine: readonly string[]): string {
  const file = join(root, PIDS_DIR, String(pid));
  writeFileSync(file, commandLine.join("\0"));
  return file;
}

/** Whether a process with this id exists (it may be another's, if the id was reused). */
function exists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The process's command line, or undefined when it is gone (or this system has no /proc). */
function commandLineOf(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8")
      .split("\0")
      .filter((part) => part !== "");
  } catch {
    return undefined;
  }
}

/** Signals `pid` when its command line is still the one expected (not a reused id); resolves once it is gone. */
async function stop(pid: number, expected: (commandLine: readonly string[]) => boolean, signal: NodeJS.Signals): Promise<void> {
  const actual = commandLineOf(pid);
  if (actual === undefined || !expected(actual)) return;
  try {
    process.kill(pid, signal);
  } catch {
    return;
  }
  for (let waited = 0; exists(pid) && waited < KILL_WAIT_MS; waited += 50) await sleep(50);
}

/** The recorded children still running: their pids and command lines. */
function recordedChildren(root: string): { pid: number; commandLine: string[] }[] {
  const dir = join(root, PIDS_DIR);
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const pid = Number(name);
    if (!Number.isSafeInteger(pid) || pid <= 0) return [];
    try {
      return [{ pid, commandLine: readFileSync(join(dir, name), "utf8").split("\0") }];
    } catch {
      return [];
    }
  });
}

/** The postmasters of the throwaway PostgreSQL servers below the root that still run (their `postmaster.pid`). */
function postmasters(root: string): number[] {
  const dir = join(root, POSTGRES_DIR);
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    try {
      const pid = Number(readFileSync(join(dir, name, "data", "postmaster.pid"), "utf8").split("\n")[0]);
      return Number.isSafeInteger(pid) && pid > 0 ? [pid] : [];
    } catch {
      return [];
    }
  });
}

/**
 * Kills what the run left running below `root` (recorded children with SIGKILL; a PostgreSQL
 * postmaster with SIGQUIT, its immediate shutdown, which ends its backends too), then removes it.
 */
export async function removeScratchRoot(root: string): Promise<void> {
  const startsWith = (expected: readonly string[]) => (actual: readonly string[]) =>
    expected.every((part, index) => actual[index] === part);
  await Promise.all(recordedChildren(root).map(({ pid, commandLine }) => stop(pid, startsWith(commandLine.slice(0, 2)), "SIGKILL")));
  await Promise.all(postmasters(root).map((pid) => stop(pid, (actual) => /(^|\/)postgres$/.test(actual[0] ?? ""), "SIGQUIT")));
  removeTree(root);
}

/** Removes the roots in `parent` whose run is gone (killed before its teardown); a root without an owner file is left alone. */
export async function sweepStaleScratchRoots(parent = tmpdir()): Promise<string[]> {
  const stale = readdirSync(parent)
    .filter((name) => name.startsWith(SCRATCH_PREFIX))
    .map((name) => join(parent, name))
    .filter((root) => {
      let owner: number;
      try {
        owner = Number(readFileSync(join(root, OWNER_FILE), "utf8"));
      } catch {
        return false;
      }
      return Number.isSafeInteger(owner) && owner > 0 && !exists(owner);
    });
  for (const root of stale) await removeScratchRoot(root);
  return stale;
}
