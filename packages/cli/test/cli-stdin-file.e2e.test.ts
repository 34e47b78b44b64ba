/**
 * A regular file on stdin (`golem-stream invoke ... - < file`) goes to the
 * server in 1 MiB batches, each one durable event: Node reads a file on stdin
 * 64 KiB at a time with nothing read ahead, which made every 64 KiB its own
 * event (16 times the server's per-event work). The real CLI and a real
 * `serve --metrics`; the server's commit-group histogram counts the writes.
 * A directory on stdin is refused rather than read as empty input.
 */
import { createHash, randomBytes } from "node:crypto";
import { closeSync, openSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { TOKEN, lines, run, scratchDir, startServe } from "./support/processes.js";
import type { ServerProcess } from "./support/processes.js";

const MIB = 1024 * 1024;
let server: ServerProcess;

beforeAll(async () => {
  const dataDir = join(scratchDir(), "data");
  server = await startServe(["--port", "0", "--token", TOKEN, "--data-dir", dataDir, "--metrics", "--log-level", "warn"], dataDir);
});
afterAll(async () => {
  expect((await server.stop()).code).toBe(EXIT.success);
});

/** Store writes committed so far: the sum of the commit-group-size histogram. */
async function storeWrites(): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const match = /^golem_stream_store_commit_group_size_sum (\S+)$/m.exec(text);
  if (match === null) throw new Error("no golem_stream_store_commit_group_size_sum in /metrics");
  return Number(match[1]);
}

/** `invoke echo digest -` with `data` on stdin, as a file or through a pipe; the store writes it took. */
async function digestWrites(data: Buffer, as: "file" | "pipe"): Promise<number> {
  const before = await storeWrites();
  let stdinFd: number | undefined;
  if (as === "file") {
    const file = join(scratchDir(), "data.bin");
    writeFileSync(file, data);
    stdinFd = openSync(file, "r");
  }
  try {
    const result = await run(["invoke", "echo", "digest", "-c", '{"name":"x"}', "-"], {
      env: server.env,
      ...(stdinFd === undefined ? { stdin: data } : { stdinFd }),
    });
    expect(result.code, result.stderr).toBe(EXIT.success);
    expect(lines(result.stdout).map((l) => JSON.parse(l) as unknown)).toEqual([
      { result: { bytes: String(data.length), sha256: createHash("sha256").update(data).digest("hex") } },
    ]);
  } finally {
    if (stdinFd !== undefined) closeSync(stdinFd);
  }
  return (await storeWrites()) - before;
}

it("sends a regular file on stdin in 1 MiB batches: about one store write per MiB", async () => {
  const data = randomBytes(12 * MIB + 5);
  const writes = await digestWrites(data, "file");
  // 13 batches, plus the session's own writes (start, result, finish, the stream's end): a
  // handful. 64 KiB reads made 193 batches.
  expect(writes).toBeGreaterThanOrEqual(13);
  expect(writes).toBeLessThan(13 + 10);
});

it("still reads a pipe as it comes, whole and in order", async () => {
  const data = randomBytes(3 * MIB + 1);
  expect(await digestWrites(data, "pipe")).toBeGreaterThanOrEqual(4);
});

it.each(["digest", "reverse"])("refuses a directory on stdin instead of reading it as empty input: %s", async (method) => {
  const before = await storeWrites();
  const directory = openSync(scratchDir(), "r");
  try {
    const result = await run(["invoke", "echo", method, "-c", '{"name":"x"}', "-"], { env: server.env, stdinFd: directory });
    expect(result.stderr).toMatch(/^golem-stream: stdin is a directory, not data for [a-z]+: redirect a file or a pipe into it\n$/);
    expect(result.code).toBe(EXIT.usage);
    expect(result.stdout.length).toBe(0);
  } finally {
    closeSync(directory);
  }
  // Nothing was started.
  expect(await storeWrites()).toBe(before);
});
