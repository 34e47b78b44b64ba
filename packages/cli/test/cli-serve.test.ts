/**
 * `golem-stream serve` as a real process: what it prints, where it keeps its
 * token, how it stops and how it refuses a busy port.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { itemsOf, run, scratchDir, start, waitFor } from "./support/processes.js";

it("generates a token on first start, keeps it in the data directory, and says how to use it", async () => {
  const dataDir = join(scratchDir(), "state");
  const server = start(["serve", "--port", "0", "--data-dir", dataDir]);
  await waitFor(server, () => /Stop with Ctrl-C/.test(server.stdout().toString()), "serve printed its instructions");
  const out = server.stdout().toString();
  const url = /^listening on (\S+)$/m.exec(out)?.[1] as string;
  const tokenFile = join(dataDir, "bearer-token");
  const token = readFileSync(tokenFile, "utf8").trim();
  expect(out).toContain(`GOLEM_STREAM_TOKEN=$(cat ${tokenFile})`);
  expect(out).not.toContain(token);
  const invoked = await run(["invoke", "echo", "count", "-c", '{"name":"x"}', "2", "0"], { env: { GOLEM_STREAM_URL: url, GOLEM_STREAM_TOKEN: token } });
  expect(itemsOf(invoked.stdout, "$")).toEqual([0, 1]);
  server.child.kill("SIGINT");
  const stopped = await server.done;
  expect(stopped.code).toBe(EXIT.success);
  expect(stopped.stderr).toMatch(/stopped/);

  // Same data directory, same token: clients keep working across restarts.
  const again = start(["serve", "--port", "0", "--data-dir", dataDir]);
  await waitFor(again, () => /^listening on /m.test(again.stdout().toString()), "serve listened again");
  expect(readFileSync(tokenFile, "utf8").trim()).toBe(token);
  again.child.kill("SIGTERM");
  expect((await again.done).code).toBe(EXIT.success);
});

it("refuses a port that is already in use with a usage error", async () => {
  const dataDir = join(scratchDir(), "state");
  const first = start(["serve", "--port", "0", "--token", "t0", "--data-dir", dataDir]);
  await waitFor(first, () => /^listening on /m.test(first.stdout().toString()), "the first server listened");
  const port = new URL(/^listening on (\S+)$/m.exec(first.stdout().toString())?.[1] as string).port;
  const second = await run(["serve", "--port", port, "--token", "t0", "--data-dir", join(scratchDir(), "other")]);
  expect(second.code).toBe(EXIT.usage);
  expect(second.stderr).toMatch(/already in use/);
  first.child.kill("SIGTERM");
  await first.done;
});

it("refuses a malformed bearer token before starting", async () => {
  const result = await run(["serve", "--port", "0", "--token", "not a token", "--data-dir", join(scratchDir(), "s")]);
  expect(result.code).toBe(EXIT.usage);
  expect(result.stdout.length).toBe(0);
});
