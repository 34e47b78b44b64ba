/**
 * Ctrl-C on `invoke` of a method that has not returned and reads no input (a real server and CLI
 * process): no cancel of the protocol can reach it, so the CLI waits only as long as it waits for
 * any cancel's answer (2 s), then says the cancel could not reach the invocation and that it may
 * keep running, and exits 130. The server then gives the invocation up after its detached timeout.
 * Before, the CLI waited forever after its "cancelling on the server" hint.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { start, startServeAgents, waitFor, type ServerProcess } from "./support/processes.js";

let server: ServerProcess;
beforeAll(async () => {
  server = await startServeAgents("test/fixtures/agents/never-returns.js", ["--detached-timeout", "1s"]);
});
afterAll(async () => {
  await server?.stop();
});

it("Ctrl-C: one line says the cancel could not reach the invocation, exit 130, and the server gives it up", async () => {
  const cli = start(["invoke", "stuck", "hang", "-a", "stuck", "-c", "{}", "--no-progress"], { env: server.env });
  await waitFor(server.running, () => server.running.stderr().includes("hang: started"), "the method started");
  cli.child.kill("SIGINT");
  const done = await cli.done;
  expect(done.code).toBe(EXIT.interrupted);
  expect(done.stderr).toMatch(
    /\ngolem-stream: interrupted; the cancel could not reach the invocation \(its method had not returned and had no input open to cancel\), so it may keep running on the server until it returns or the server gives it up\n$/,
  );
  expect(done.stdout.toString()).toBe("");
  // The CLI left no attachment behind, so the server's detached timeout runs and fails the method.
  await waitFor(server.running, () => server.running.stderr().includes("hang: given up"), "the server gave the method up");
});
