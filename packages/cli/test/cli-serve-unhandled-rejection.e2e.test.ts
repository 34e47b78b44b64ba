/**
 * `serve --agents` whose agent leaves a promise rejection unhandled (a real process): Node would
 * end the process, and every invocation in flight with it; `serve` logs it as
 * `process.unhandled-rejection` (error, JSON like every other line, with the stack) and goes on
 * serving: the invocation that caused it finishes, and the next one too.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { run, startServeAgents, waitFor, type ServerProcess } from "./support/processes.js";

let server: ServerProcess;
beforeAll(async () => {
  server = await startServeAgents("test/fixtures/agents/stray-rejection.js", ["--log-format", "json"], { logLevel: "info" });
});
afterAll(async () => {
  await server?.stop();
});

const answer = () => run(["invoke", "careless", "answer", "-a", "slips", "-c", "{}"], { env: server.env });

it("is logged with its stack, and the server serves the next invocation", async () => {
  const first = await answer();
  expect(first.code).toBe(EXIT.success);
  expect(first.stdout.toString()).toContain("42");
  await waitFor(server.running, () => server.running.stderr().includes('"process.unhandled-rejection"'), "the rejection's log line");
  const line = server.running
    .stderr()
    .split("\n")
    .map((text) => (text.startsWith("{") ? (JSON.parse(text) as Record<string, unknown>) : {}))
    .find((entry) => entry["event"] === "process.unhandled-rejection");
  expect(line).toMatchObject({
    level: "error",
    error: "Error: the cache refresh failed",
    stack: expect.stringMatching(/^Error: the cache refresh failed\n {4}at .*stray-rejection\.js/),
  });
  const second = await answer();
  expect(second.code).toBe(EXIT.success);
  expect(server.running.child.exitCode).toBeNull();
});
