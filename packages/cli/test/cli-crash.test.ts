/**
 * Crash safety of checkpoint v1 with real processes and SIGKILL: output may
 * repeat the one item that was being delivered when the process died, and
 * nothing may ever be skipped (protocol section 13).
 */
import { existsSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { itemsOf, run, scratchDir, start, startServer, waitFor } from "./support/processes.js";
import type { Running, ServerProcess } from "./support/processes.js";

const ME = ["-c", '{"name":"crash"}'];
const servers: ServerProcess[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.kill()));
});

async function server(dataDir: string, port = 0): Promise<ServerProcess> {
  const started = await startServer(dataDir, port);
  servers.push(started);
  return started;
}

/** Starts `count to delayMs` with a checkpoint and SIGKILLs the CLI once it printed `after` items. */
async function killCountAfter(s: ServerProcess, checkpoint: string, to: number, delayMs: number, after: number): Promise<number[]> {
  const cli: Running = start(["invoke", "echo", "count", ...ME, String(to), String(delayMs), "--checkpoint", checkpoint], { env: s.env });
  await waitFor(cli, () => itemsOf(cli.stdout(), "$").length >= after, `${after} items were printed`);
  cli.child.kill("SIGKILL");
  const killed = await cli.done;
  expect(killed.signal).toBe("SIGKILL");
  return itemsOf(killed.stdout, "$") as number[];
}

/**
 * `second` continues `first`: it starts at the last item of `first` (the one
 * whose delivery the crash may have interrupted) or right after it, and both
 * are gap-free ascending runs from 0.
 */
function expectContinuation(first: number[], second: number[]): number[] {
  expect(first).toEqual(first.map((_, i) => i));
  const last = first.at(-1) ?? -1;
  const resumedAt = second[0] ?? last + 1;
  expect([last, last + 1]).toContain(resumedAt);
  expect(second).toEqual(second.map((_, i) => resumedAt + i));
  return [...first, ...second.filter((n) => n > last)];
}

describe("kill -9 of the CLI, then resume", () => {
  it("delivers every item in order, repeating at most the one in delivery, across two crashes", async () => {
    const s = await server(join(scratchDir(), "data"));
    const checkpoint = join(scratchDir(), "count.ckpt");
    const first = await killCountAfter(s, checkpoint, 150, 5, 10);

    // Crash the resume too, mid-stream.
    const resumed = start(["resume", checkpoint], { env: s.env });
    await waitFor(resumed, () => itemsOf(resumed.stdout(), "$").length >= 10, "the resume printed 10 items");
    resumed.child.kill("SIGKILL");
    const second = itemsOf((await resumed.done).stdout, "$") as number[];

    const third = await run(["resume", checkpoint], { env: s.env });
    expect(third.stderr).toBe("");
    expect(third.code).toBe(EXIT.success);
    const all = expectContinuation(expectContinuation(first, second), itemsOf(third.stdout, "$") as number[]);
    expect(all).toEqual(Array.from({ length: 150 }, (_, i) => i));
    expect(third.stdout.toString().trimEnd().split("\n").at(-1)).toBe('{"result":"$"}');
    // A SIGKILL mid-write can leave a temporary file; the next writer of the checkpoint removes it.
    expect(readdirSync(dirname(checkpoint))).toEqual(["count.ckpt"]);
  });

  // Known client bug (reported): after a takeover past a stream's terminal cursor the server
  // (rightly) replays nothing for that stream, and @golem-stream/client then ends the stream with a
  // synthetic protocol-error instead of treating it as already complete. Flip to `it` once fixed.
  it.fails("resumes a finished invocation: the result again, no items", async () => {
    const s = await server(join(scratchDir(), "data"));
    const checkpoint = join(scratchDir(), "done.ckpt");
    const done = await run(["invoke", "echo", "count", ...ME, "5", "0", "--checkpoint", checkpoint], { env: s.env });
    expect(done.code).toBe(EXIT.success);
    const again = await run(["resume", checkpoint], { env: s.env });
    expect(again.code).toBe(EXIT.success);
    expect(itemsOf(again.stdout, "$")).toEqual([]);
    expect(again.stdout.toString()).toBe('{"result":"$"}\n');
  });

  it("notes when the method's schema changed since the checkpoint was written", async () => {
    const s = await server(join(scratchDir(), "data"));
    const checkpoint = join(scratchDir(), "old.ckpt");
    const { readFileSync, writeFileSync } = await import("node:fs");
    const cli = start(["invoke", "echo", "count", ...ME, "100", "5", "--checkpoint", checkpoint], { env: s.env });
    await waitFor(cli, () => itemsOf(cli.stdout(), "$").length >= 3, "3 items were printed");
    cli.child.kill("SIGKILL");
    await cli.done;
    const document = JSON.parse(readFileSync(checkpoint, "utf8")) as { schema: { methodDigest: string } };
    document.schema.methodDigest = "0".repeat(64);
    writeFileSync(checkpoint, JSON.stringify(document));
    const resumed = await run(["resume", checkpoint], { env: s.env });
    expect(resumed.code).toBe(EXIT.success);
    expect(resumed.stderr).toMatch(/echo\.count has a different schema now/);
  });

  it("refuses a damaged checkpoint with a usage error and sends nothing", async () => {
    const dir = scratchDir();
    const checkpoint = join(dir, "bad.ckpt");
    const { writeFileSync } = await import("node:fs");
    writeFileSync(checkpoint, '{"version":1,"sessionToken":"gai1_x"');
    const result = await run(["resume", checkpoint], { env: { GOLEM_STREAM_URL: "http://127.0.0.1:1", GOLEM_STREAM_TOKEN: "t" } });
    expect(result.code).toBe(EXIT.usage);
    expect(result.stderr).toMatch(/not a usable checkpoint/);
    expect(existsSync(checkpoint)).toBe(true);
  });
});

describe("stdout that cannot be written", () => {
  it.runIf(existsSync("/dev/full"))("exits 74 and keeps the checkpoint before the unwritten item", async () => {
    const s = await server(join(scratchDir(), "data"));
    const checkpoint = join(scratchDir(), "full.ckpt");
    const { openSync, closeSync } = await import("node:fs");
    const full = openSync("/dev/full", "w");
    const failed = await run(["invoke", "echo", "count", ...ME, "20", "0", "--checkpoint", checkpoint], { env: s.env, stdoutFd: full });
    closeSync(full);
    expect(failed.code, failed.stderr).toBe(EXIT.outputFailed);
    expect(failed.stderr).toMatch(/cannot write output/);
    const resumed = await run(["resume", checkpoint], { env: s.env });
    expect(resumed.stderr).toBe("");
    expect(resumed.code).toBe(EXIT.success);
    expect(itemsOf(resumed.stdout, "$")).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });
});

describe("Ctrl-C", () => {
  it("with --checkpoint only detaches: exit 130, and resume finishes the same invocation", async () => {
    const s = await server(join(scratchDir(), "data"));
    const checkpoint = join(scratchDir(), "int.ckpt");
    const cli = start(["invoke", "echo", "count", ...ME, "60", "5", "--checkpoint", checkpoint], { env: s.env });
    await waitFor(cli, () => itemsOf(cli.stdout(), "$").length >= 5, "5 items were printed");
    cli.child.kill("SIGINT");
    const interrupted = await cli.done;
    expect(interrupted.code).toBe(EXIT.interrupted);
    expect(interrupted.stderr).toMatch(/keeps running/);
    const resumed = await run(["resume", checkpoint], { env: s.env });
    expect(resumed.code).toBe(EXIT.success);
    const all = expectContinuation(itemsOf(interrupted.stdout, "$") as number[], itemsOf(resumed.stdout, "$") as number[]);
    expect(all).toEqual(Array.from({ length: 60 }, (_, i) => i));
  });

  it("without a checkpoint cancels the invocation: exit 130", async () => {
    const s = await server(join(scratchDir(), "data"));
    const cli = start(["invoke", "echo", "count", ...ME, "1000", "5"], { env: s.env });
    await waitFor(cli, () => itemsOf(cli.stdout(), "$").length >= 3, "3 items were printed");
    cli.child.kill("SIGINT");
    const interrupted = await cli.done;
    expect(interrupted.code).toBe(EXIT.interrupted);
    expect(interrupted.stderr).toMatch(/cancelled/);
  });
});

describe("kill -9 of the server, restart on the same data directory, then resume", () => {
  it("delivers all output the server produced before it died, in order, without gaps", async () => {
    const dataDir = join(scratchDir(), "data");
    const first = await server(dataDir);
    const checkpoint = join(scratchDir(), "count.ckpt");
    const seen = await killCountAfter(first, checkpoint, 400, 5, 10);
    // The server keeps producing (durably) while no client is attached; then it dies too.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await first.kill();

    const second = await server(dataDir);
    const resumed = await run(["resume", checkpoint], { env: second.env });
    const replayed = itemsOf(resumed.stdout, "$") as number[];
    const all = expectContinuation(seen, replayed);
    expect(all.length).toBeGreaterThan(seen.length);
    if (resumed.code === EXIT.success) {
      expect(all).toEqual(Array.from({ length: 400 }, (_, i) => i));
    } else {
      // This server does not restart agent code: the invocation ends failed after the replay.
      expect(resumed.code).toBe(EXIT.invocationFailed);
      expect(resumed.stderr).toMatch(/invocation-failed/);
    }
  });

  it("a running CLI reconnects to the restarted server by itself and prints the rest without gaps", async () => {
    const dataDir = join(scratchDir(), "data");
    const first = await server(dataDir);
    const cli = start(["invoke", "echo", "count", ...ME, "400", "5", "--checkpoint", join(scratchDir(), "live.ckpt")], { env: first.env });
    await waitFor(cli, () => itemsOf(cli.stdout(), "$").length >= 10, "10 items were printed");
    await first.kill();
    await server(dataDir, first.port);
    const done = await cli.done;
    expect(done.stderr).toMatch(/reconnecting/);
    const items = itemsOf(done.stdout, "$") as number[];
    expect(items).toEqual(items.map((_, i) => i));
    // This server does not restart agent code after a crash, so the invocation ends failed; if a
    // future one does, it must then deliver everything.
    if (done.code === EXIT.success) expect(items.length).toBe(400);
    else expect(done.code).toBe(EXIT.invocationFailed);
  });
});
