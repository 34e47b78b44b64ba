/**
 * Signals that end a run (bin.ts): each exits as the exit table says, 130, and a second one
 * while a cancel waits exits at once with the same status.
 */
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { TOKEN, itemsOf, scratchDir, start, startServe, waitFor } from "./support/processes.js";
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
