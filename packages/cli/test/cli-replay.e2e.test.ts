/**
 * Durable invocations by replay with real processes (docs/durable-execution.md
 * of @golem-stream/server): `serve` is killed with SIGKILL in the middle of a
 * `digest` upload or of `count`'s output and started again on the same data
 * directory and port. The demo methods are replayable, so the restarted
 * server re-runs them over the stored input and compares the stored output:
 * the CLI (with --checkpoint, reconnecting by itself) and a typed client
 * finish with success, the exact digest, every item once. (The CLI through
 * a kill -9 mid-`count`: cli-crash.e2e.test.ts.)
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createClient } from "@golem-stream/client";
import { echoContract } from "@golem-stream/contract/demo";
import { EXIT } from "../src/exit-codes.js";
import { U8_BYTES, sampleOf, scrapeUntil } from "./support/metrics.js";
import { TOKEN, scratchDir, start, startServe, type ServerProcess } from "./support/processes.js";

const ME = ["-c", '{"name":"replay"}'];
const servers: ServerProcess[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.kill()));
});

async function serve(dataDir: string, port = 0): Promise<ServerProcess> {
  const started = await startServe(
    ["--port", String(port), "--token", TOKEN, "--data-dir", dataDir, "--log-level", "warn", "--metrics"],
    dataDir,
  );
  servers.push(started);
  return started;
}

const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex");

/** Kills `first` (SIGKILL) and starts the server again on its data directory and port. */
async function killAndRestart(first: ServerProcess): Promise<ServerProcess> {
  const killed = await first.kill();
  expect(killed.signal).toBe("SIGKILL");
  servers.splice(servers.indexOf(first), 1);
  return serve(first.dataDir, first.port);
}

describe("kill -9 of serve mid-invocation, restart on the same data directory", () => {
  it("digest through the CLI with --checkpoint: the upload goes on after the restart and the digest is of every byte once", async () => {
    const first = await serve(join(scratchDir(), "data"));
    const data = Buffer.from(Array.from({ length: 3 * 1024 * 1024 }, (_, i) => (i * 7919) % 251));
    const half = data.length / 2;
    const cli = start(["invoke", "echo", "digest", ...ME, "-", "--checkpoint", join(scratchDir(), "digest.ckpt")], {
      env: first.env,
      stdin: data.subarray(0, half),
      openStdin: true,
    });
    await scrapeUntil(first.url, (text) => sampleOf(text, U8_BYTES) >= half, "the first half was accepted");
    await killAndRestart(first);
    cli.child.stdin?.end(data.subarray(half));
    const done = await cli.done;
    expect(done.code, done.stderr).toBe(EXIT.success);
    expect(done.stderr).toMatch(/reconnected/);
    expect(JSON.parse(done.stdout.toString("utf8"))).toEqual({ result: { bytes: String(data.length), sha256: sha256(data) } });
  });

  it("a typed client: digest mid-upload and count mid-output both finish success, exact and complete", async () => {
    const first = await serve(join(scratchDir(), "data"));
    const client = createClient({ url: first.url, token: TOKEN, reconnect: { initialDelayMs: 20, maxDelayMs: 200, maxAttempts: 100 } });
    const echo = await client.connect(echoContract, { application: "demo", environment: "default", constructor: { name: "typed" } });

    const data = Buffer.from(Array.from({ length: 2 * 1024 * 1024 }, (_, i) => (i * 31) % 253));
    const half = data.length / 2;
    let restarted: () => void = () => undefined;
    const afterRestart = new Promise<void>((resolve) => (restarted = resolve));
    async function* upload(): AsyncGenerator<Uint8Array> {
      for (let at = 0; at < half; at += 64 * 1024) yield data.subarray(at, at + 64 * 1024);
      await afterRestart;
      for (let at = half; at < data.length; at += 64 * 1024) yield data.subarray(at, at + 64 * 1024);
    }
    const digest = echo.digest({ data: upload() });
    const counted: number[] = [];
    const count = echo.count({ to: 120, delayMs: 5 });
    const reading = (async () => {
      for await (const n of await count) counted.push(n);
    })();

    await scrapeUntil(first.url, (text) => sampleOf(text, U8_BYTES) >= half, "the first half was accepted");
    while (counted.length < 5) await new Promise((resolve) => setTimeout(resolve, 10));
    await killAndRestart(first);
    restarted();

    expect(await digest).toEqual({ bytes: BigInt(data.length), sha256: sha256(data) });
    await expect(digest.finished).resolves.toEqual({ kind: "success" });
    await reading;
    expect(counted).toEqual(Array.from({ length: 120 }, (_, i) => i));
    await expect(count.finished).resolves.toEqual({ kind: "success" });
  });
});
