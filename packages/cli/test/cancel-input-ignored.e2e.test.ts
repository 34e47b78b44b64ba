/**
 * Ctrl-C on `invoke` of a method whose input the cancel ends (a real server and CLI process). A
 * method that never reads its input is not stopped by that: the CLI gives it 2 s
 * (`CANCEL_RETURN_WAIT_MS`) after the server ended the input, then says the cancel could not
 * reach it and exits 130; before, it waited as long as the method ran and then said "the
 * invocation was cancelled" of an invocation the server recorded as a success. A method that
 * returns all the same is reported as the success the server records.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { start, startServeAgents, waitFor, type ServerProcess } from "./support/processes.js";

let server: ServerProcess;
beforeAll(async () => {
  server = await startServeAgents("test/fixtures/agents/ignores-input.js", ["--detached-timeout", "1s"], { logLevel: "info" });
});
afterAll(async () => {
  await server?.stop();
});

const invoke = (method: string, ...args: string[]) =>
  start(["invoke", "deaf", method, "-a", "deaf", "-c", "{}", "--no-progress", "-", ...args], {
    env: server.env,
    stdin: "one\n",
    openStdin: true,
  });

it("an input the method never reads: Ctrl-C ends within the wait, says the cancel could not reach it, exit 130", async () => {
  // Ten minutes: the CLI must not wait for it.
  const cli = invoke("ignoreLines", "600000");
  await waitFor(server.running, () => server.running.stderr().includes("ignoreLines: started"), "the method started");
  cli.child.kill("SIGINT");
  const done = await cli.done;
  expect(done.code).toBe(EXIT.interrupted);
  expect(done.stderr).toMatch(
    /\ngolem-stream: interrupted; the cancel could not reach the invocation \(the server ended its input, but its method had not returned 2 s later \(it may not read it, or is still stopping\)\), so it may keep running on the server until it returns or the server gives it up\n$/,
  );
  // While it waited, the hint said how long the method gets.
  expect(done.stderr).toMatch(/^golem-stream: interrupted; cancelling on the server and giving its method 2 s to stop \(Ctrl-C again/);
  expect(done.stdout.toString()).toBe("");
  // No attachment was left behind: the server's detached timeout gives the method up.
  await waitFor(server.running, () => server.running.stderr().includes("ignoreLines: given up"), "the server gave the method up");
});

it("a method that returns when its input fails: the CLI says the invocation finished as a success, as the server records", async () => {
  const cli = invoke("salvage");
  await waitFor(server.running, () => server.running.stderr().includes("salvage: read one"), "the method read the first line");
  cli.child.kill("SIGINT");
  const done = await cli.done;
  expect(done.code).toBe(EXIT.interrupted);
  expect(done.stderr).toMatch(
    /golem-stream: interrupted; the cancel did not stop the invocation: its method returned, and it finished as a success on the server\n$/,
  );
  await waitFor(
    server.running,
    () => /"method":"salvage","outcome":"success"/.test(server.running.stderr()),
    "the server recorded the invocation's outcome",
  );
});
