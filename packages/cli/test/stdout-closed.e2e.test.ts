/**
 * A stdout closed by its reader (`| head`) ends a command as SIGPIPE ends a program: exit 141,
 * quietly. invoke and resume cancel (or detach) first and say something only when the cancel may
 * not have reached the server (output/session-runner.ts). serve is the exception: a server
 * serves on whatever became of its stdout, and stops cleanly (a cluster node's drain:
 * cli-cluster.e2e.test.ts).
 */
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { startTcpProxy } from "@golem-stream/test-support";
import { EXIT } from "../src/exit-codes.js";
import { freePort } from "./support/free-port.js";
import { TOKEN, lines, run, scratchDir, start, startServe, waitFor } from "./support/processes.js";
import type { ServerProcess } from "./support/processes.js";

const ME = ["-c", '{"name":"closed"}'];

const servers: ServerProcess[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.kill()));
});

async function server(): Promise<ServerProcess> {
  const dataDir = join(scratchDir(), "data");
  const s = await startServe(["--port", "0", "--token", TOKEN, "--data-dir", dataDir, "--log-level", "warn"], dataDir);
  servers.push(s);
  return s;
}

it("a cancel that waits after stdout was closed prints no Ctrl-C hint, only that it did not reach the server", async () => {
  const s = await server();
  const proxy = await startTcpProxy({ upstream: s.url });
  try {
    // --output json writes the connection's loss to stdout: the write that finds it closed.
    const cli = start(["invoke", "echo", "count", ...ME, "1000", "5", "--output", "json", "--retries", "1", "--timeout", "1s"], {
      env: { ...s.env, GOLEM_STREAM_URL: proxy.origin },
    });
    await waitFor(cli, () => lines(cli.stdout()).filter((line) => line.includes('"event":"item"')).length >= 3, "3 items");
    // Nothing passes any more, new connections included: the cancel waits for its reconnection (1 s).
    proxy.pause();
    cli.child.stdout?.destroy(); // `| head`
    proxy.cutOpen();
    const done = await cli.done;
    expect(done.code).toBe(EXIT.stdoutClosed);
    expect(done.stderr).not.toMatch(/Ctrl-C again/);
    expect(done.stderr).toMatch(
      /^golem-stream: stdout was closed; the cancel did not reach the server \(.*\), the invocation may keep running\n$/m,
    );
  } finally {
    proxy.resume();
    await proxy.close();
  }
});

it.each([["types"], ["codegen"]])("`%s` whose reader closed stdout before reading it exits 141, quietly", async (command) => {
  const s = await server();
  const cli = start([command], { env: s.env });
  cli.child.stdout?.destroy(); // `| (exec 0<&-; …)`: the reader leaves before the first byte
  const done = await cli.done;
  expect(done.code).toBe(EXIT.stdoutClosed);
  // codegen's summary too: the module was not taken, so "N contracts" would read as success.
  expect(done.stderr).toBe("");
});

it("`serve` whose reader closed stdout before its banner serves on, and a SIGTERM stops it cleanly: exit 0", async () => {
  const port = await freePort();
  const dataDir = join(scratchDir(), "data");
  const serve = start(["serve", "--port", String(port), "--token", TOKEN, "--data-dir", dataDir, "--log-format", "json"]);
  serve.child.stdout?.destroy(); // the reader leaves before the banner
  await waitFor(serve, () => serve.stderr().includes('"event":"server.start"'), "the server started");
  const env = { GOLEM_STREAM_URL: `http://127.0.0.1:${port}`, GOLEM_STREAM_TOKEN: TOKEN };
  const call = await run(["invoke", "echo", "count", ...ME, "3", "0"], { env });
  expect(call.code).toBe(EXIT.success);
  serve.child.kill("SIGTERM");
  const done = await serve.done;
  expect(done.code).toBe(EXIT.success);
  expect(done.stderr).toContain('"event":"server.stop"');
});
