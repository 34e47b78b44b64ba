/**
 * stderr carries only diagnostics: one that cannot be written (its reader gone, as with `|& head`,
 * or a full disk) loses them and changes nothing else. The run ends with its own exit status, and
 * a cancel still reaches the server (bin.ts). Its error event, unhandled, crashed the CLI (exit 1)
 * at its next line of diagnostics, before the cancel was sent.
 */
import { closeSync, existsSync, openSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { freePort } from "./support/free-port.js";
import { sampleOf, scrapeUntil } from "./support/metrics.js";
import { startTcpProxy } from "@golem-stream/test-support";
import { TOKEN, itemsOf, scratchDir, start, startServe, waitFor } from "./support/processes.js";
import type { ServerProcess } from "./support/processes.js";

const ME = ["-c", '{"name":"stderr"}'];
const FULL = "/dev/full";
if (!existsSync(FULL)) console.log(`stderr-failure: no ${FULL} on this platform; its test skips`);

const servers: ServerProcess[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.kill()));
});

/** `invoke` against a port nothing listens on: the notice of the retry goes to stderr, then it gives up. */
async function invokeUnreachable(stderrFd?: number): Promise<ReturnType<typeof start>> {
  const env = { GOLEM_STREAM_URL: `http://127.0.0.1:${await freePort()}`, GOLEM_STREAM_TOKEN: TOKEN };
  return start(["invoke", "echo", "count", ...ME, "3", "0", "--retries", "1"], { env, ...(stderrFd === undefined ? {} : { stderrFd }) });
}

it("stderr closed by its reader: an unreachable server still exits 4 (connection lost), not 1", async () => {
  const cli = await invokeUnreachable();
  cli.child.stderr?.destroy(); // the reader left before the first line
  expect((await cli.done).code).toBe(EXIT.connectionLost);
});

it.skipIf(!existsSync(FULL))("stderr on a full device: an unreachable server still exits 4 (connection lost), not 1", async () => {
  const full = openSync(FULL, "w");
  try {
    const cli = await invokeUnreachable(full);
    expect((await cli.done).code).toBe(EXIT.connectionLost);
  } finally {
    closeSync(full);
  }
});

it("stderr closed, then the connection lost: the CLI reconnects and goes on, and a closed stdout still cancels on the server (141)", async () => {
  const dataDir = join(scratchDir(), "data");
  const s = await startServe(["--port", "0", "--token", TOKEN, "--data-dir", dataDir, "--log-level", "warn", "--metrics"], dataDir);
  servers.push(s);
  const proxy = await startTcpProxy({ upstream: s.url });
  try {
    const cli = start(["invoke", "echo", "count", ...ME, "1000", "5"], { env: { ...s.env, GOLEM_STREAM_URL: proxy.origin } });
    cli.child.stderr?.destroy();
    const printed = (): number => itemsOf(cli.stdout(), "$").length;
    await waitFor(cli, () => printed() >= 3, "3 items were printed");
    // The notice of the lost connection is the next line of stderr.
    proxy.cutOpen();
    const before = printed();
    await waitFor(cli, () => printed() >= before + 3, "items after the reconnection");
    cli.child.stdout?.destroy(); // `| head`
    expect((await cli.done).code).toBe(EXIT.stdoutClosed);
    await scrapeUntil(s.url, (text) => sampleOf(text, "golem_stream_sessions_running") === 0, "the invocation stopped running");
  } finally {
    await proxy.close();
  }
});
