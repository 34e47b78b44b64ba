/**
 * `golem-stream conformance …` runs the conformance kit's command
 * (@golem-stream/conformance) with the same arguments, as real processes
 * against a real `serve`: a passing section exits 0 with the kit's report;
 * a failing scenario exits 5; a usage error of the kit (a missing option, a
 * server that refuses the token) exits 2; an unusable lookup says how to
 * install the kit.
 */
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { conformanceBin } from "../src/commands/conformance.js";
import { run, scratchDir, start, waitFor, type Running } from "./support/processes.js";

let server: Running;
let url = "";

beforeAll(async () => {
  server = start(["serve", "--port", "0", "--token", "conformance-token", "--data-dir", join(scratchDir(), "state")]);
  await waitFor(server, () => /^listening on /m.test(server.stdout().toString()), "serve listened");
  url = (/^listening on (\S+)$/m.exec(server.stdout().toString())?.[1] as string).replace(/^http/, "ws");
});

afterAll(async () => {
  server?.child.kill("SIGTERM");
  await server?.done;
});

it("runs the kit's server suite: a section that passes exits 0 with the kit's report", async () => {
  const result = await run(["conformance", "server", "--url", url, "--token", "conformance-token", "--only", "handshake"]);
  const report = result.stdout.toString();
  expect(result.code, report + result.stderr).toBe(EXIT.success);
  expect(report).toMatch(/handshake/);
  expect(report).not.toMatch(/FAIL/);
}, 120_000);

it("hands --other-principal-token to the kit: a serve with two tokens in its --token-file passes the authorization section, which is skipped without it", async () => {
  const tokens = join(scratchDir(), "tokens.txt");
  writeFileSync(tokens, "# two principals\nconformance-alice\nconformance-bob\n");
  const two = start(["serve", "--port", "0", "--token-file", tokens, "--data-dir", join(scratchDir(), "two-principals")]);
  try {
    await waitFor(two, () => /^listening on /m.test(two.stdout().toString()), "serve listened");
    const twoUrl = (/^listening on (\S+)$/m.exec(two.stdout().toString())?.[1] as string).replace(/^http/, "ws");
    const args = ["conformance", "server", "--url", twoUrl, "--token", "conformance-alice", "--only", "authorization", "--json"];
    const statuses = (stdout: Buffer) =>
      (JSON.parse(stdout.toString()) as { results: { id: string; status: string }[] }).results.map((r) => `${r.id} ${r.status}`);
    const told = await run([...args, "--other-principal-token", "conformance-bob"]);
    expect(told.code, told.stdout.toString() + told.stderr.toString()).toBe(EXIT.success);
    expect(statuses(told.stdout)).toEqual([
      "authorization.other-principal-resume passed",
      "authorization.other-principal-takeover passed",
      "authorization.other-principal-resume-replay passed",
      "authorization.other-principal-start-replay passed",
      "authorization.other-principal-cursor passed",
    ]);
    const untold = await run(args);
    expect(untold.code).toBe(EXIT.success);
    expect(statuses(untold.stdout).every((line) => line.endsWith(" skipped"))).toBe(true);
  } finally {
    two.child.kill("SIGTERM");
    await two.done;
  }
}, 120_000);

it("a server that refuses the token is the kit's usage error (exit 2), with nothing run", async () => {
  const result = await run(["conformance", "server", "--url", url, "--token", "not-the-token", "--only", "handshake"]);
  expect(result.code).toBe(EXIT.usage);
  expect(result.stderr.toString()).toContain("refused the token (HTTP 401)");
}, 120_000);

it("the kit's usage errors exit 2", async () => {
  const result = await run(["conformance", "server", "--token", "t"]);
  expect(result.code).toBe(EXIT.usage);
  expect(result.stderr).toMatch(/--url/);
});

it("without the kit installed, says which package to install", () => {
  expect(() =>
    conformanceBin(() => {
      throw Object.assign(new Error("Cannot find module '@golem-stream/conformance/package.json'"), { code: "MODULE_NOT_FOUND" });
    }),
  ).toThrow(/npm install -g @golem-stream\/conformance/);
});

it("runs the kit's client suite against an adapter: the adapter of @golem-stream/client passes (0), a failing scenario exits 5", async () => {
  // The adapter the kit ships, found the way the CLI finds the kit.
  const adapter = `node "${join(dirname(conformanceBin()), "client", "adapter", "bin.js")}"`;
  const passing = await run([
    "conformance",
    "client",
    "--adapter",
    adapter,
    "--only",
    "outputs.cursor-after-delivery,inputs.suffix-resend-after-high-water",
  ]);
  expect(passing.code, passing.stdout.toString() + passing.stderr.toString()).toBe(EXIT.success);
  expect(passing.stdout.toString()).toMatch(/client conformance/);
  // An adapter that starts and then does nothing: the scenario fails, the command exits 5.
  const silent = join(scratchDir(), "silent-adapter.mjs");
  writeFileSync(silent, 'process.stdout.write(\'{"type":"ready"}\\n\'); setInterval(() => {}, 1000);\n');
  const failing = await run(["conformance", "client", "--adapter", `node "${silent}"`, "--only", "lifecycle.revoked", "--timeout", "500"]);
  expect(failing.code).toBe(EXIT.checksFailed);
}, 120_000);
