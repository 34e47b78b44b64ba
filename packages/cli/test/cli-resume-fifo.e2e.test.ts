/**
 * `resume FIFO`: reading the checkpoint from a FIFO waits for a process that writes into it, and
 * that wait gives way to Ctrl-C like any other (exit 130, nothing sent). Opened the usual way, the
 * open itself waited for a writer on a thread of libuv's pool, where neither the signal nor the
 * process's exit could stop it: the process stayed until SIGKILL.
 */
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync, readlinkSync, statSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { run, scratchDir, start, startServer } from "./support/processes.js";
import type { ServerProcess } from "./support/processes.js";

let server: ServerProcess;
beforeAll(async () => {
  server = await startServer(join(scratchDir(), "data"));
});
afterAll(async () => {
  await server?.stop();
});

function fifo(): string {
  const path = join(scratchDir(), "run.ckpt");
  execFileSync("mkfifo", [path]);
  return path;
}

/** Lists `/proc/<pid>/<dir>`, empty once the process is gone. */
function procEntries(pid: number, dir: string): string[] {
  try {
    return readdirSync(`/proc/${pid}/${dir}`);
  } catch {
    return [];
  }
}

function procText(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

/** Whether process `pid` has reached `path`: it holds it open, or one of its threads waits in its open for a writer. */
function reached(pid: number, path: string): boolean {
  const open = procEntries(pid, "fd").some((fd) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`) === path;
    } catch {
      return false;
    }
  });
  return open || procEntries(pid, "task").some((task) => procText(`/proc/${pid}/task/${task}/wchan`) === "wait_for_partner");
}

/** Re-checks the state of another process until it holds (it announces nothing itself). */
async function until(predicate: () => boolean, what: string): Promise<void> {
  for (let waited = 0; !predicate(); waited += 20) {
    if (waited > 20_000) throw new Error(`gave up waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("resume from a FIFO", () => {
  it("Ctrl-C while no process writes into it: exit 130 at once, nothing sent", { timeout: 30_000 }, async () => {
    const path = fifo();
    const resumed = start(["resume", path], { env: server.env });
    const pid = resumed.child.pid as number;
    await until(() => reached(pid, path), "resume waits on the FIFO");
    resumed.child.kill("SIGINT");
    const result = await resumed.done;
    expect(result.stderr).toBe(`golem-stream: interrupted while reading checkpoint ${path}, before anything was sent\n`);
    expect(result.code).toBe(EXIT.interrupted);
    expect(statSync(path).isFIFO()).toBe(true);
  });

  it("reads the checkpoint a process writes into it, and resumes from it", async () => {
    const finished = join(scratchDir(), "done.ckpt");
    const invoked = await run(["invoke", "echo", "count", "-c", '{"name":"fifo"}', "3", "0", "--checkpoint", finished], {
      env: server.env,
    });
    expect(invoked.code).toBe(EXIT.success);
    const path = fifo();
    const resumed = start(["resume", path], { env: server.env });
    const pid = resumed.child.pid as number;
    await until(() => reached(pid, path), "resume waits on the FIFO");
    await writeFile(path, readFileSync(finished));
    const result = await resumed.done;
    expect(result.stderr).toMatch(/^golem-stream: nothing left to print: the invocation had finished/);
    expect(result.code).toBe(EXIT.success);
  });
});
