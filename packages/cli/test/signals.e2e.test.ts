/**
 * Signals that end a run (bin.ts): SIGINT, SIGTERM and SIGHUP (a closed terminal, a dropped ssh
 * connection) each exit as the exit table says, 130, having cancelled the invocation or, with a
 * checkpoint, detached from it; a second one while a cancel waits exits at once with the same status.
 */
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { sampleOf, scrapeUntil } from "./support/metrics.js";
import { TOKEN, itemsOf, run, scratchDir, start, startServe, waitFor } from "./support/processes.js";
import type { ServerProcess } from "./support/processes.js";

const ME = ["-c", '{"name":"signals"}'];

const servers: ServerProcess[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.kill()));
});

async function server(): Promise<ServerProcess> {
  const dataDir = join(scratchDir(), "data");
  const s = await startServe(["--port", "0", "--token", TOKEN, "--data-dir", dataDir, "--log-level", "warn", "--metrics"], dataDir);
  servers.push(s);
  return s;
}

it("a second SIGTERM while the cancel waits for a server that is gone exits 130, as a second Ctrl-C does", async () => {
  const s = await server();
  const cli = start(["invoke", "echo", "count", ...ME, "1000", "5"], { env: s.env });
  await waitFor(cli, () => itemsOf(cli.stdout(), "$").length >= 3, "3 items were printed");
  await s.kill();
  // Until the CLI has seen the connection die, a cancel would go out on it: wait, so it waits for a reconnection.
  await waitFor(cli, () => /connection lost/.test(cli.stderr()), "the CLI saw the connection die");
  cli.child.kill("SIGTERM");
  await waitFor(cli, () => /cancelling on the server/.test(cli.stderr()), "the cancelling hint");
  cli.child.kill("SIGTERM");
  const done = await cli.done;
  expect(done.code).toBe(EXIT.interrupted);
  expect(done.stderr).toMatch(/exited without waiting for the cancel, so the invocation may keep running on the server\n$/);
});

it("SIGHUP without a checkpoint cancels the invocation on the server and exits 130", async () => {
  const s = await server();
  const cli = start(["invoke", "echo", "count", ...ME, "1000", "5"], { env: s.env });
  await waitFor(cli, () => itemsOf(cli.stdout(), "$").length >= 3, "3 items were printed");
  cli.child.kill("SIGHUP");
  const done = await cli.done;
  expect(done.code).toBe(EXIT.interrupted);
  expect(done.stderr).toBe("golem-stream: interrupted; the invocation was cancelled\n");
  const metrics = await scrapeUntil(s.url, (text) => sampleOf(text, "golem_stream_sessions_running") === 0, "the invocation stopped");
  expect(sampleOf(metrics, 'golem_stream_output_items_total{kind="value"}')).toBeLessThan(1000);
});

it("SIGHUP with --checkpoint detaches: exit 130, and resume finishes the same invocation", async () => {
  const s = await server();
  const checkpoint = join(scratchDir(), "hup.ckpt");
  const cli = start(["invoke", "echo", "count", ...ME, "60", "5", "--checkpoint", checkpoint], { env: s.env });
  await waitFor(cli, () => itemsOf(cli.stdout(), "$").length >= 2, "2 items were printed");
  cli.child.kill("SIGHUP");
  const done = await cli.done;
  expect(done.code).toBe(EXIT.interrupted);
  expect(done.stderr).toMatch(
    /^golem-stream: interrupted; the invocation keeps running, `golem-stream resume .*hup\.ckpt'? --url http:\/\/127\.0\.0\.1:\d+` continues it\n$/,
  );
  const resumed = await run(["resume", checkpoint], { env: s.env });
  expect(resumed.code).toBe(EXIT.success);
  expect((itemsOf(resumed.stdout, "$") as number[]).at(-1)).toBe(59);
});
