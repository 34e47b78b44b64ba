/**
 * The server suite against the project's server on loopback: every check is
 * its own test case, so one can be run by name
 * (`npx vitest run test/server-suite.test.ts -t "handshake.subprotocol-missing"`).
 * Checks run three at a time, as `golem-stream-conformance server` runs them
 * by default; the restart section restarts the server, so it runs alone, after
 * the others. The checks that need a server setting (first-message deadline,
 * pings, per-principal bounds) run against a second server with short ones
 * and small ones, one at a time (two of them count one principal's sockets).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  formatJsonReport,
  formatJunitReport,
  formatTextReport,
  runServerSuite,
  serverChecks,
  type CheckResult,
  type RunOptions,
  type SuiteReport,
} from "../src/index.js";
import { startRestartControl, type RestartControl } from "./support/control.js";
import { BOUNDED_SUITE_OPTIONS, OTHER_PRINCIPAL_TOKEN, startServerUnderTest, TOKEN, type ServerUnderTest } from "./support/server.js";

let server: ServerUnderTest;
let bounded: ServerUnderTest;
let control: RestartControl;

beforeAll(async () => {
  server = await startServerUnderTest();
  bounded = await startServerUnderTest({ bounded: true });
  control = await startRestartControl(() => server.restart());
}, 60_000);

afterAll(async () => {
  await control?.close();
  await server?.dispose();
  await bounded?.dispose();
});

// Generous waits: this run must pass on a loaded machine, where a 5 s silence can happen.
const run = (only: readonly string[], options: Partial<RunOptions> = {}): Promise<SuiteReport> =>
  // The project's server re-runs the demo methods after a restart (docs/durable-execution.md): continuation is required.
  runServerSuite({
    url: server.url,
    token: TOKEN,
    otherPrincipalToken: OTHER_PRINCIPAL_TOKEN,
    restartCmd: control.command,
    durableRestart: true,
    concurrency: 3,
    timeoutMs: 15_000,
    only,
    ...options,
  });

/** Runs one check and fails with what it saw unless it passed. */
async function passes(id: string, runner = run): Promise<void> {
  const report = await runner([id]);
  const result = report.results.find((r: CheckResult) => r.id === id);
  expect(result, `${id} ran`).toBeDefined();
  expect(result!.status, `${id}: ${result!.saw}`).toBe("passed");
}

const checks = serverChecks();

describe("the project's server passes each check", { concurrent: true, timeout: 120_000 }, () => {
  for (const check of checks.filter((c) => c.section !== "restart" && c.needs === undefined)) {
    it(`${check.id}: ${check.expectation}`, () => passes(check.id));
  }
});

describe(
  "the project's server with short deadlines and small bounds passes each check that needs a setting, one at a time",
  { timeout: 120_000 },
  () => {
    const runBounded = (only: readonly string[]): Promise<SuiteReport> =>
      runServerSuite({ url: bounded.url, token: TOKEN, concurrency: 1, timeoutMs: 15_000, only, ...BOUNDED_SUITE_OPTIONS });
    for (const check of checks.filter((c) => c.needs !== undefined)) {
      it(`${check.id}: ${check.expectation}`, () => passes(check.id, runBounded));
    }

    it("without the setting, each of them is skipped and says which option it needs", async () => {
      const report = await run(checks.filter((c) => c.needs !== undefined).map((c) => c.id));
      expect(report.results.map((r) => [r.id, r.status])).toEqual(
        checks.filter((c) => c.needs !== undefined).map((c) => [c.id, "skipped"]),
      );
      expect(report.results.find((r) => r.id === "liveness.first-message-deadline")?.saw).toBe(
        "the server's firstMessageTimeoutMs was not given (--first-message-timeout): a server may set it otherwise, or not enforce it",
      );
    });
  },
);

describe("the authorization section", { timeout: 60_000 }, () => {
  const ids = checks.filter((c) => c.section === "authorization").map((c) => c.id);

  it("without --other-principal-token, each of its checks is skipped and says which option it needs", async () => {
    const report = await run(ids, { otherPrincipalToken: undefined });
    expect(report.results.map((r) => [r.id, r.status, r.saw])).toEqual(
      ids.map((id) => [
        id,
        "skipped",
        "no --other-principal-token given: the check needs the token of a second principal the server accepts",
      ]),
    );
  });

  it("fails each check when the second principal's token is the first's, or one the server refuses, saying so", async () => {
    const same = await run(ids, { otherPrincipalToken: TOKEN });
    expect(same.results.map((r) => [r.status, r.saw])).toEqual(
      ids.map(() => ["failed", "--other-principal-token is the suite's --token: give the token of a second principal"]),
    );
    const refused = await run(ids, { otherPrincipalToken: "not-a-token-of-this-server" });
    for (const r of refused.results) {
      expect(r.status, r.id).toBe("failed");
      expect(r.saw, r.id).toMatch(/^the upgrade with the second principal's token failed \(upgrade refused with HTTP 401\)/);
    }
  });
});

describe("the project's server passes each restart check, one at a time", { timeout: 120_000 }, () => {
  for (const check of checks.filter((c) => c.section === "restart")) {
    it(`${check.id}: ${check.expectation}`, () => passes(check.id));
  }
});

describe("--durable-restart", { timeout: 120_000 }, () => {
  it("fails a server that finishes an interrupted count as failed, which the suite without the flag accepts", async () => {
    const failing = await startServerUnderTest({ limits: { maxReplays: 0 } });
    const failingControl = await startRestartControl(() => failing.restart());
    try {
      const id = "restart.output-cursor-survives";
      const suite = (durableRestart: boolean) =>
        runServerSuite({
          url: failing.url,
          token: TOKEN,
          restartCmd: failingControl.command,
          durableRestart,
          concurrency: 1,
          timeoutMs: 15_000,
          only: [id],
        });
      expect((await suite(false)).results.find((r) => r.id === id)?.status).toBe("passed");
      const strict = (await suite(true)).results.find((r) => r.id === id);
      expect(strict?.status).toBe("failed");
      expect(strict?.saw).toMatch(/end of a count a durable server continued/);
    } finally {
      await failingControl.close();
      await failing.dispose();
    }
  });
});

describe("restart.rerun-follows-journal without --durable-restart", { timeout: 60_000 }, () => {
  it("is skipped and says which flag it needs: a server the flag does not describe need not serve `journal`", async () => {
    const id = "restart.rerun-follows-journal";
    const report = await run([id], { durableRestart: false });
    expect(report.results.map((r) => [r.id, r.status, r.saw])).toEqual([
      [id, "skipped", "no --durable-restart given: only a server that continues what a restart interrupted keeps a journal to follow"],
    ]);
  });
});

describe("the suite's table and reports", () => {
  it("has a restart section, and a methods check for every demo method decisions §7 lists", () => {
    expect(checks.filter((c) => c.section === "restart").length).toBeGreaterThan(0);
    const methods = checks.filter((c) => c.section === "methods");
    expect(methods.map((c) => c.expectation.slice(0, c.expectation.indexOf(":"))).sort()).toEqual([
      "blobs",
      "count",
      "digest",
      "fail",
      "groups",
      "reverse",
      "split",
    ]);
  });

  it("names a protocol reference and an expectation for every check, with unique ids", () => {
    expect(new Set(checks.map((c) => c.id)).size).toBe(checks.length);
    for (const c of checks) {
      expect(c.ref).toMatch(/§|\.json/);
      expect(c.expectation.length).toBeGreaterThan(10);
    }
  });

  it("reports a section's run as text, JSON and JUnit XML", { timeout: 120_000 }, async () => {
    const report = await run(["handshake"]);
    expect(report.results.length).toBeGreaterThan(1);
    expect(formatTextReport(report)).toContain(`${report.results.length} checks: ${report.passed} passed, 0 failed`);
    const json = JSON.parse(formatJsonReport(report)) as { summary: { total: number; failed: number }; results: { id: string }[] };
    expect(json.summary).toMatchObject({ total: report.results.length, failed: 0 });
    const junit = formatJunitReport(report);
    expect(junit).toContain(`<testsuites name="golem-stream-session-v1 server conformance" tests="${report.results.length}" failures="0"`);
    expect(junit.match(/<testcase /g)?.length).toBe(report.results.length);
  });
});
