/**
 * Crash safety of checkpoint v1 with real processes and SIGKILL: output may
 * repeat the one item that was being delivered when the process died, and
 * nothing may ever be skipped (protocol section 13).
 */
import { closeSync, existsSync, openSync, readFileSync, readdirSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { TOKEN, itemsOf, lines, run, scratchDir, start, startServe, startServer, waitFor } from "./support/processes.js";
import { freePort } from "./support/free-port.js";
import { startTcpProxy } from "@golem-stream/test-support";
import { heldBytes, holding, sessions } from "./support/holding-proxy.js";
import type { RunResult, Running, ServerProcess } from "./support/processes.js";

const ME = ["-c", '{"name":"crash"}'];

/** The value of one sample (`name` with its labels, as Prometheus prints it), NaN when absent. */
function sampleOf(text: string, name: string): number {
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.slice(name.length + 1));
}

async function until(predicate: () => boolean, what: string): Promise<void> {
  for (let waited = 0; !predicate(); waited += 20) {
    if (waited > 20_000) throw new Error(`gave up waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Scrapes `/metrics` until `predicate` holds (never a fixed wait: the machine may be slow). */
async function scrapeUntil(url: string, predicate: (text: string) => boolean, what: string): Promise<string> {
  for (let tries = 0; tries < 1000; tries++) {
    const text = await (await fetch(`${url}/metrics`)).text();
    if (predicate(text)) return text;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`gave up scraping until ${what}`);
}
const servers: ServerProcess[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.kill()));
});

async function server(dataDir: string, port = 0): Promise<ServerProcess> {
  const started = await startServer(dataDir, port);
  servers.push(started);
  return started;
}

/** Waits until `running` printed `after` items, then stops it (a signal, or its reader going away) and returns how it ended. */
async function stopAfter(running: Running, after: number, stop: NodeJS.Signals | "close-stdout"): Promise<RunResult> {
  await waitFor(running, () => itemsOf(running.stdout(), "$").length >= after, `${after} items were printed`);
  // Closing the pipe is what `head -2` does once it has its lines.
  if (stop === "close-stdout") running.child.stdout?.destroy();
  else running.child.kill(stop);
  return running.done;
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
 * `second` continues `first` without a gap: it starts at or before the item
 * after the last one of `first` (checkpoints are written in batches, so a
 * crash replays up to a batch: `maxReplay` items, the one in delivery
 * included), and both are gap-free ascending runs.
 */
function expectContinuation(first: number[], second: number[], maxReplay = Number.POSITIVE_INFINITY): number[] {
  expect(first).toEqual(first.map((_, i) => (first[0] ?? 0) + i));
  const last = first.at(-1) ?? -1;
  const resumedAt = second[0] ?? last + 1;
  expect(resumedAt).toBeLessThanOrEqual(last + 1);
  expect(last + 1 - resumedAt).toBeLessThanOrEqual(maxReplay);
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
    // Bare output (one stream): the items alone; the result is the stream itself, so nothing follows.
    expect(third.stdout.toString().endsWith("\n149\n")).toBe(true);
    // A SIGKILL mid-write can leave a temporary file; the next writer of the checkpoint removes it.
    expect(readdirSync(dirname(checkpoint))).toEqual(["count.ckpt"]);
  });

  // The checkpoint holds the stream's terminal cursor, so the server replays nothing for it: the
  // client must treat the stream as complete, not as a stream the server forgot to end.
  it("resumes a finished invocation: the result again, no items, exit 0, and says there was nothing left", async () => {
    const s = await server(join(scratchDir(), "data"));
    const checkpoint = join(scratchDir(), "done.ckpt");
    const done = await run(["invoke", "echo", "count", ...ME, "5", "0", "--checkpoint", checkpoint], { env: s.env });
    expect(done.code).toBe(EXIT.success);
    // It holds the session's token: private, whatever the umask.
    expect(statSync(checkpoint).mode & 0o777).toBe(0o600);
    const again = await run(["resume", checkpoint], { env: s.env });
    expect(again.stderr).toBe(
      `golem-stream: nothing left to print: the invocation had finished and the run that wrote ${checkpoint} had already printed all of its output\n`,
    );
    expect(again.code).toBe(EXIT.success);
    expect(itemsOf(again.stdout, "$")).toEqual([]);
    expect(again.stdout.toString()).toBe("");
    const enveloped = await run(["resume", checkpoint, "--output", "lines"], { env: s.env });
    expect(enveloped.stdout.toString()).toBe('{"result":"$"}\n');
    // In event form the stream's end says it was seen before, not how it ended.
    const events = await run(["resume", checkpoint, "--output", "json"], { env: s.env });
    expect(events.code).toBe(EXIT.success);
    expect(events.stderr).toBe("");
    expect(
      lines(events.stdout)
        .map((line) => JSON.parse(line) as { event: string; outcome?: unknown })
        .filter((e) => e.event === "end"),
    ).toEqual([{ event: "end", stream: "$", outcome: { kind: "already-delivered" } }]);
  });

  it("resumes a finished invocation with nested streams: every stream is complete, nothing is printed twice", async () => {
    const s = await server(join(scratchDir(), "data"));
    const checkpoint = join(scratchDir(), "groups.ckpt");
    const done = await run(["invoke", "echo", "groups", ...ME, "2", "3", "--checkpoint", checkpoint], { env: s.env });
    expect(done.code).toBe(EXIT.success);
    // Parent and nested streams all hold terminal cursors.
    expect((JSON.parse(readFileSync(checkpoint, "utf8")) as { outputCursors: string[] }).outputCursors).toHaveLength(3);
    const again = await run(["resume", checkpoint], { env: s.env });
    expect(again.stderr).toMatch(/^golem-stream: nothing left to print: the invocation had finished/);
    expect(again.code).toBe(EXIT.success);
    expect(again.stdout.toString()).toBe('{"result":"$"}\n');
  });

  it("notes when the method's schema changed since the checkpoint was written", async () => {
    const s = await server(join(scratchDir(), "data"));
    const checkpoint = join(scratchDir(), "old.ckpt");
    const { writeFileSync } = await import("node:fs");
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

describe("kill -9 with batched checkpoints, at random points", () => {
  // A checkpoint written every 7 items (the interval is long enough never to fire): a crash may
  // replay up to the 7 items the file had not caught up with, plus the one in delivery, and
  // must never skip one. The kill points are random; the seed is in the test's output on failure.
  it("never skips an item, and replays at most one batch, across three crashes", async () => {
    const seed = Date.now();
    let state = seed;
    const random = (below: number) => {
      state = (state * 1103515245 + 12345) % 2 ** 31;
      return state % below;
    };
    const s = await server(join(scratchDir(), "data"));
    const checkpoint = join(scratchDir(), "batched.ckpt");
    const batch = ["--checkpoint-items", "7", "--checkpoint-interval", "1h"];
    const total = 300;
    const cli = start(["invoke", "echo", "count", ...ME, String(total), "2", "--checkpoint", checkpoint, ...batch], { env: s.env });
    const firstKill = 5 + random(60);
    await waitFor(cli, () => itemsOf(cli.stdout(), "$").length >= firstKill, `${firstKill} items were printed (seed ${seed})`);
    cli.child.kill("SIGKILL");
    let all = itemsOf((await cli.done).stdout, "$") as number[];
    expect(all, `seed ${seed}`).toEqual(all.map((_, i) => i));
    for (let crash = 0; crash < 2; crash++) {
      const resumed = start(["resume", checkpoint, ...batch], { env: s.env });
      const after = 1 + random(60);
      await waitFor(resumed, () => itemsOf(resumed.stdout(), "$").length >= after, `the resume printed ${after} items (seed ${seed})`);
      resumed.child.kill("SIGKILL");
      all = expectContinuation(all, itemsOf((await resumed.done).stdout, "$") as number[], 8);
    }
    const last = await run(["resume", checkpoint, ...batch], { env: s.env });
    expect(last.code, last.stderr).toBe(EXIT.success);
    all = expectContinuation(all, itemsOf(last.stdout, "$") as number[], 8);
    expect(all, `seed ${seed}`).toEqual(Array.from({ length: total }, (_, i) => i));
  });

  it("a Ctrl-C writes the open batch: resume repeats at most the items whose save was under way", async () => {
    const s = await server(join(scratchDir(), "data"));
    const checkpoint = join(scratchDir(), "flushed.ckpt");
    const batch = ["--checkpoint-items", "1000", "--checkpoint-interval", "1h"];
    const cli = start(["invoke", "echo", "count", ...ME, "60", "5", "--checkpoint", checkpoint, ...batch], { env: s.env });
    await waitFor(cli, () => itemsOf(cli.stdout(), "$").length >= 10, "10 items were printed");
    cli.child.kill("SIGINT");
    const interrupted = await cli.done;
    expect(interrupted.code).toBe(EXIT.interrupted);
    const resumed = await run(["resume", checkpoint], { env: s.env });
    expect(resumed.code).toBe(EXIT.success);
    const first = itemsOf(interrupted.stdout, "$") as number[];
    // The whole batch was still open (1000 items, 1 h), so only the exit's flush saved a cursor:
    // without it, everything since the acceptance (10 items or more) would be printed again. The
    // item in hand and one whose save the client had not handed over yet may repeat.
    const second = itemsOf(resumed.stdout, "$") as number[];
    expect(second[0], `printed ${first.join(",")}; resumed from ${second[0]}; stderr ${interrupted.stderr}`).toBeGreaterThanOrEqual(
      first.length - 2,
    );
    expect(expectContinuation(first, second, 2)).toEqual(Array.from({ length: 60 }, (_, i) => i));
  });
});

describe("kill -9 after the start was saved, before its acceptance was processed, then resume", () => {
  // "all": the start never reached the server, so the retry is the first it sees and is accepted
  // now. "answers": the server accepted it, the CLI never heard, so the retry (same attempt id,
  // same descriptor) gets the committed acceptance replayed.
  it.each(["all", "answers"] as const)("holding %s: resume retries the exact start and delivers every item", async (hold) => {
    const s = await server(join(scratchDir(), "data"));
    const proxy = await startTcpProxy({ upstream: s.url, plan: holding(hold) });
    try {
      const checkpoint = join(scratchDir(), "pending.ckpt");
      const cli = start(["invoke", "echo", "count", ...ME, "30", "0", "--checkpoint", checkpoint], {
        env: { ...s.env, GOLEM_STREAM_URL: proxy.origin },
      });
      // The client saves the frozen start before it connects, so a session connection means the
      // checkpoint is on disk; with "answers", held bytes mean the server accepted the start.
      await proxy.until(() => (hold === "all" ? sessions(proxy) > 0 : heldBytes(proxy) > 0));
      cli.child.kill("SIGKILL");
      const killed = await cli.done;
      expect(killed.signal).toBe("SIGKILL");
      expect(killed.stdout.toString()).toBe("");
      const saved = JSON.parse(readFileSync(checkpoint, "utf8")) as { sessionToken?: string; pending?: { operation: string } };
      expect(saved.sessionToken).toBeUndefined();
      expect(saved.pending?.operation).toBe("start");

      const resumed = await run(["resume", checkpoint, "--output", "json"], { env: s.env });
      expect(resumed.stderr).toBe("");
      expect(resumed.code).toBe(EXIT.success);
      const events = lines(resumed.stdout).map((line) => JSON.parse(line) as { event: string; [key: string]: unknown });
      expect(events[0]).toMatchObject({ event: "accepted", operation: "start", attemptId: expect.any(String) });
      expect(events.filter((e) => e.event === "item").map((e) => (e["value"] as { value: number }).value)).toEqual(
        Array.from({ length: 30 }, (_, i) => i),
      );
      expect(events.at(-1)).toEqual({ event: "finished", outcome: { kind: "success" } });
      // The checkpoint is now an accepted session's, and the invocation is complete.
      const after = JSON.parse(readFileSync(checkpoint, "utf8")) as { sessionToken?: string; pending?: unknown };
      expect(after.sessionToken).toMatch(/^gai1_/);
      expect(after.pending).toBeUndefined();
    } finally {
      await proxy.close();
    }
  });

  it("an input read from stdin cannot be replayed: resume cancels it (source-unavailable)", async () => {
    const s = await server(join(scratchDir(), "data"));
    const proxy = await startTcpProxy({ upstream: s.url, plan: holding("all") });
    try {
      const checkpoint = join(scratchDir(), "stdin.ckpt");
      const cli = start(["invoke", "echo", "reverse", "-c", '["crash"]', "-", "--checkpoint", checkpoint], {
        env: { ...s.env, GOLEM_STREAM_URL: proxy.origin },
        stdin: "one\ntwo\n",
      });
      await proxy.until(() => sessions(proxy) > 0);
      cli.child.kill("SIGKILL");
      await cli.done;
      const resumed = await run(["resume", checkpoint], { env: s.env });
      // The agent saw its input fail: the invocation fails, and says why.
      expect(resumed.code).toBe(EXIT.invocationFailed);
      expect(resumed.stderr).toMatch(/producer-error/);
      expect(itemsOf(resumed.stdout, "$")).toEqual([]);
    } finally {
      await proxy.close();
    }
  });
});

describe("a checkpoint that can no longer be written", () => {
  it("stops the run (exit 74) instead of printing past the last saved state", async () => {
    const s = await server(join(scratchDir(), "data"));
    const dir = scratchDir();
    const checkpoint = join(dir, "gone.ckpt");
    const cli = start(["invoke", "echo", "count", ...ME, "200", "5", "--checkpoint", checkpoint], { env: s.env });
    await waitFor(cli, () => itemsOf(cli.stdout(), "$").length >= 3, "3 items were printed");
    // Moved away in one step (a writer may be mid-write): every later write finds no directory.
    renameSync(dir, `${dir}.gone`);
    const stopped = await cli.done;
    expect(stopped.code).toBe(EXIT.outputFailed);
    expect(stopped.stderr).toMatch(/cannot write checkpoint .*gone\.ckpt/);
    expect(stopped.stderr).toContain(`without cancelling anything: \`golem-stream resume ${checkpoint} --url ${s.url}\` continues`);
    // It stopped at the failed save: one item at most was printed past the last cursor it saved.
    expect(itemsOf(stopped.stdout, "$").length).toBeLessThan(200);
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
    expect(failed.stderr).toMatch(
      /cannot write output \(.+\); nothing was cancelled and the checkpoint stops before the unwritten item: the invocation keeps running/,
    );
    expect(failed.stderr).toContain(`\`golem-stream resume ${checkpoint} --url ${s.url}\` continues it\n`);
    const resumed = await run(["resume", checkpoint], { env: s.env });
    expect(resumed.stderr).toBe("");
    expect(resumed.code).toBe(EXIT.success);
    expect(itemsOf(resumed.stdout, "$")).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });

  // Nothing could ever resume it: left running, the server would hold it until the detached timeout.
  it.runIf(existsSync("/dev/full"))("without a checkpoint exits 74 and cancels the invocation on the server, saying so", async () => {
    const dataDir = join(scratchDir(), "data");
    const s = await startServe(["--port", "0", "--token", TOKEN, "--data-dir", dataDir, "--log-level", "warn", "--metrics"], dataDir);
    servers.push(s);
    const full = openSync("/dev/full", "w");
    const failed = await run(["invoke", "echo", "count", ...ME, "100000", "10"], { env: s.env, stdoutFd: full });
    closeSync(full);
    expect(failed.code, failed.stderr).toBe(EXIT.outputFailed);
    expect(failed.stderr).toMatch(
      /cannot write output \(.+\); the invocation was cancelled \(without --checkpoint nothing could resume it\)\n$/,
    );
    const metrics = await scrapeUntil(
      s.url,
      (text) => sampleOf(text, "golem_stream_sessions_running") === 0,
      "the invocation stopped running",
    );
    expect(sampleOf(metrics, 'golem_stream_output_items_total{kind="value"}')).toBeLessThan(100_000);
  });
});

describe("Ctrl-C", () => {
  it("with --checkpoint and stdin bound: names the checkpoint and says stdin cannot be continued; resume does not claim a restart", async () => {
    const s = await server(join(scratchDir(), "data"));
    const checkpoint = join(scratchDir(), "up.ckpt");
    const cli = start(["invoke", "echo", "digest", ...ME, "-", "--checkpoint", checkpoint], {
      env: s.env,
      stdin: Buffer.alloc(100_000, 1),
      openStdin: true,
    });
    await until(() => existsSync(checkpoint) && readFileSync(checkpoint, "utf8").includes("sessionToken"), "the start was accepted");
    cli.child.kill("SIGINT");
    const interrupted = await cli.done;
    expect(interrupted.code).toBe(EXIT.interrupted);
    expect(interrupted.stderr).toContain(
      `\`golem-stream resume ${checkpoint} --url ${s.url}\` continues its output, but not its input: data reads stdin`,
    );
    expect(interrupted.stderr).toMatch(/source-unavailable/);
    const resumed = await run(["resume", checkpoint], { env: s.env });
    // No restart happened: the input was cancelled, and the agent failed on it.
    expect(resumed.code).toBe(EXIT.invocationFailed);
    expect(resumed.stderr).toMatch(
      /it may have been a server restart .*, or an input only the interrupted process could feed \(stdin, or a file it read\), which resume had to cancel \(source-unavailable\)/,
    );
    expect(resumed.stderr).not.toMatch(/: a server restart fails every invocation/);
  });

  it("resume names its checkpoint when Ctrl-C detaches it", async () => {
    const s = await server(join(scratchDir(), "data"));
    const checkpoint = join(scratchDir(), "again it's.ckpt");
    await stopAfter(start(["invoke", "echo", "count", ...ME, "1000", "5", "--checkpoint", checkpoint], { env: s.env }), 2, "SIGKILL");
    const interrupted = await stopAfter(start(["resume", checkpoint], { env: s.env }), 2, "SIGINT");
    expect(interrupted.code).toBe(EXIT.interrupted);
    expect(interrupted.stderr).toContain(`\`golem-stream resume '${checkpoint.replace("it's", "it'\\''s")}' --url ${s.url}\` continues it`);
  });

  it("the resume it names carries the --url and --max-catalogue-bytes in effect: run as printed, it finishes the invocation", async () => {
    const s = await server(join(scratchDir(), "data"));
    const checkpoint = join(scratchDir(), "url.ckpt");
    const options = ["--url", s.url, "--max-catalogue-bytes", "16MiB"];
    // The token alone in the environment: without the --url, the hint would aim at the default server.
    const env = { GOLEM_STREAM_TOKEN: TOKEN };
    const interrupted = await stopAfter(
      start(["invoke", "echo", "count", ...ME, "200", "15", "--checkpoint", checkpoint, ...options], { env }),
      5,
      "SIGINT",
    );
    expect(interrupted.code).toBe(EXIT.interrupted);
    const hinted = `golem-stream resume ${checkpoint} --url ${s.url} --max-catalogue-bytes 16777216`;
    expect(interrupted.stderr).toBe(`golem-stream: interrupted; the invocation keeps running, \`${hinted}\` continues it\n`);
    const resumed = await run(hinted.split(" ").slice(1), { env });
    expect(resumed.code, resumed.stderr).toBe(EXIT.success);
    const all = expectContinuation(itemsOf(interrupted.stdout, "$") as number[], itemsOf(resumed.stdout, "$") as number[]);
    expect(all).toEqual(Array.from({ length: 200 }, (_, i) => i));
  });

  it("with --checkpoint only detaches: exit 130, and resume finishes the same invocation", async () => {
    const s = await server(join(scratchDir(), "data"));
    const checkpoint = join(scratchDir(), "int.ckpt");
    // 3 s of output: the signal comes long before the end even on a loaded machine (60 items of 5 ms once ended first).
    const interrupted = await stopAfter(
      start(["invoke", "echo", "count", ...ME, "200", "15", "--checkpoint", checkpoint], { env: s.env }),
      5,
      "SIGINT",
    );
    expect(interrupted.code).toBe(EXIT.interrupted);
    expect(interrupted.stderr).toMatch(/keeps running/);
    const resumed = await run(["resume", checkpoint], { env: s.env });
    expect(resumed.code).toBe(EXIT.success);
    const all = expectContinuation(itemsOf(interrupted.stdout, "$") as number[], itemsOf(resumed.stdout, "$") as number[]);
    expect(all).toEqual(Array.from({ length: 200 }, (_, i) => i));
  });

  // The server stops producing once it has the cancel; had it been lost with the exiting
  // process, the count would run on to all 1000 items (5 s at the least).
  it.each([
    ["Ctrl-C", "SIGINT", EXIT.interrupted, /^golem-stream: interrupted; the invocation was cancelled\n$/],
    ["a closed stdout (`| head`) quietly", "close-stdout", EXIT.stdoutClosed, /^$/],
  ] as const)(
    "without a checkpoint, %s cancels the invocation, and the cancel reaches the server before the CLI exits",
    async (_, stop, code, stderr) => {
      const dataDir = join(scratchDir(), "data");
      const s = await startServe(["--port", "0", "--token", TOKEN, "--data-dir", dataDir, "--log-level", "warn", "--metrics"], dataDir);
      servers.push(s);
      const stopped = await stopAfter(start(["invoke", "echo", "count", ...ME, "1000", "5"], { env: s.env }), 3, stop);
      expect(stopped.code).toBe(code);
      expect(stopped.stderr).toMatch(stderr);
      const metrics = await scrapeUntil(
        s.url,
        (text) => sampleOf(text, "golem_stream_sessions_running") === 0,
        "the invocation stopped running",
      );
      expect(sampleOf(metrics, 'golem_stream_output_items_total{kind="value"}')).toBeLessThan(1000);
    },
  );

  it("a closed stdout on `reverse` fed a large file: the cancel reaches the server although input waits in front of it", async () => {
    const dataDir = join(scratchDir(), "data");
    const s = await startServe(["--port", "0", "--token", TOKEN, "--data-dir", dataDir, "--log-level", "warn", "--metrics"], dataDir);
    servers.push(s);
    // About 12 MB: far more than the server takes in while nobody reads the output.
    const file = join(scratchDir(), "big.txt");
    writeFileSync(file, Array.from({ length: 300_000 }, (_, i) => `line ${i} of a file too big to be read`).join("\n"));
    const fd = openSync(file, "r");
    const cli = start(["invoke", "echo", "reverse", ...ME, "-"], { env: s.env, stdinFd: fd });
    closeSync(fd);
    await waitFor(cli, () => cli.stdout().toString("utf8").split("\n").length > 2, "2 lines were printed");
    cli.child.stdout?.destroy(); // `| head -2`
    const stopped = await cli.done;
    expect(stopped.code).toBe(EXIT.stdoutClosed);
    // Quiet, however long the cancel takes: it reached the server.
    expect(stopped.stderr).toBe("");
    await scrapeUntil(s.url, (text) => sampleOf(text, "golem_stream_sessions_running") === 0, "the invocation stopped running");
  });

  it("a closed stdout with --checkpoint only detaches: exit 141, and resume finishes the same invocation", async () => {
    const s = await server(join(scratchDir(), "data"));
    const checkpoint = join(scratchDir(), "pipe.ckpt");
    const closed = await stopAfter(
      start(["invoke", "echo", "count", ...ME, "60", "5", "--checkpoint", checkpoint], { env: s.env }),
      2,
      "close-stdout",
    );
    expect(closed.code).toBe(EXIT.stdoutClosed);
    expect(closed.stderr).toBe("");
    const resumed = await run(["resume", checkpoint], { env: s.env });
    expect(resumed.code).toBe(EXIT.success);
    expect((itemsOf(resumed.stdout, "$") as number[]).at(-1)).toBe(59);
  });

  it("without a checkpoint and with the server gone: says it is cancelling, and a second Ctrl-C exits at once", async () => {
    const s = await server(join(scratchDir(), "data"));
    const cli = start(["invoke", "echo", "count", ...ME, "1000", "5"], { env: s.env });
    await waitFor(cli, () => itemsOf(cli.stdout(), "$").length >= 3, "3 items were printed");
    await s.kill();
    // Until the CLI has seen the connection die, a cancel goes out on it and only the close
    // tells (the client's cancel confirmation): wait, so the cancel has to wait for a reconnect.
    await waitFor(cli, () => /connection lost/.test(cli.stderr()), "the CLI saw the connection die");
    cli.child.kill("SIGINT");
    await waitFor(cli, () => /cancelling on the server/.test(cli.stderr()), "the cancelling hint");
    cli.child.kill("SIGINT");
    const interrupted = await cli.done;
    expect(interrupted.code).toBe(EXIT.interrupted);
    expect(interrupted.stderr).not.toMatch(/invocation was cancelled/);
    expect(interrupted.stderr).toMatch(
      /golem-stream: interrupted; exited without waiting for the cancel, so the invocation may keep running on the server\n$/,
    );
  });
});

describe("a server that is not there yet", () => {
  it("invoke retries the catalogue lookup (--retries) and runs once the server is up", async () => {
    const port = await freePort();
    const env = { GOLEM_STREAM_URL: `http://127.0.0.1:${port}`, GOLEM_STREAM_TOKEN: TOKEN };
    const cli = start(["invoke", "echo", "count", ...ME, "3", "0", "--retries", "1000"], { env });
    await waitFor(
      cli,
      () => /cannot reach the server \(connect ECONNREFUSED [^)]*\); retrying quietly, up to 1000 times \(--retries\)/.test(cli.stderr()),
      "the retry notice",
    );
    await server(join(scratchDir(), "data"), port);
    const done = await cli.done;
    expect(done.code, done.stderr).toBe(EXIT.success);
    expect(itemsOf(done.stdout, "$")).toEqual([0, 1, 2]);
  });

  it("with --retries 0 fails at once, saying nothing was sent", async () => {
    const port = await freePort();
    const done = await run(["invoke", "echo", "count", ...ME, "3", "0", "--retries", "0"], {
      env: { GOLEM_STREAM_URL: `http://127.0.0.1:${port}`, GOLEM_STREAM_TOKEN: TOKEN },
    });
    expect(done.code).toBe(EXIT.connectionLost);
    expect(done.stderr).toMatch(
      /^golem-stream: cannot reach http:\/\/127\.0\.0\.1:\d+: connect ECONNREFUSED .*; not retried: --retries 0, nothing was sent\n$/,
    );
  });
});

describe("kill -9 of the server, restart on the same data directory, then resume", () => {
  it("resume with the checkpoint: count is re-run by the restarted server and every item is delivered once, in order", async () => {
    const dataDir = join(scratchDir(), "data");
    const first = await startServe(["--port", "0", "--token", TOKEN, "--data-dir", dataDir, "--log-level", "warn", "--metrics"], dataDir);
    servers.push(first);
    const checkpoint = join(scratchDir(), "count.ckpt");
    const seen = await killCountAfter(first, checkpoint, 400, 5, 10);
    // The server keeps producing (durably) while no client is attached; then it dies too, with
    // items committed that the CLI never saw (the re-run compares them, the resume gets them).
    await scrapeUntil(
      first.url,
      (text) => sampleOf(text, 'golem_stream_output_items_total{kind="value"}') >= seen.length + 20,
      "20 more items were committed",
    );
    const killed = await first.kill();
    expect(killed.signal).toBe("SIGKILL");

    const second = await server(dataDir);
    const resumed = await run(["resume", checkpoint], { env: second.env });
    const replayed = itemsOf(resumed.stdout, "$") as number[];
    const all = expectContinuation(seen, replayed);
    // count is replayable (the server's docs/durable-execution.md): the restarted server ran it again.
    expect(resumed.code, resumed.stderr).toBe(EXIT.success);
    expect(all).toEqual(Array.from({ length: 400 }, (_, i) => i));
  });

  it("a running CLI reconnects to the restarted server by itself and prints the rest without gaps, then succeeds", async () => {
    const dataDir = join(scratchDir(), "data");
    const first = await server(dataDir);
    const cli = start(["invoke", "echo", "count", ...ME, "400", "5", "--checkpoint", join(scratchDir(), "live.ckpt")], { env: first.env });
    await waitFor(cli, () => itemsOf(cli.stdout(), "$").length >= 10, "10 items were printed");
    await first.kill();
    await server(dataDir, first.port);
    const done = await cli.done;
    // Said once, then quiet retries (stderr is not a terminal here, so no countdown either).
    expect(done.stderr.match(/connection lost \(.*\); retrying quietly, up to 10 times/g)).toHaveLength(1);
    // count is replayable: the restarted server ran it again (a failure's words: exit-status.test.ts).
    expect(done.code, done.stderr).toBe(EXIT.success);
    expect(itemsOf(done.stdout, "$")).toEqual(Array.from({ length: 400 }, (_, i) => i));
  });
});
