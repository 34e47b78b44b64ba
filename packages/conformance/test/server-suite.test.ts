/** The whole server suite against the project's server on loopback: every check passes. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatJsonReport, formatJunitReport, formatTextReport, runServerSuite, serverChecks, type SuiteReport } from "../src/index.js";
import { startRestartControl, type RestartControl } from "./support/control.js";
import { startServerUnderTest, TOKEN, type ServerUnderTest } from "./support/server.js";

let server: ServerUnderTest;
let control: RestartControl;
let report: SuiteReport;

beforeAll(async () => {
  server = await startServerUnderTest();
  control = await startRestartControl(() => server.restart());
  // Generous waits: this run must pass on a loaded machine, where a 5 s silence can happen.
  report = await runServerSuite({ url: server.url, token: TOKEN, restartCmd: control.command, concurrency: 3, timeoutMs: 15_000 });
}, 240_000);

afterAll(async () => {
  await control?.close();
  await server?.dispose();
});

describe("the project's server", () => {
  it("passes every check, the restart section included", () => {
    const failed = report.results.filter((r) => r.status !== "passed");
    expect(failed.map((r) => `${r.id}: ${r.saw}`)).toEqual([]);
    expect(report.results.length).toBe(serverChecks().length);
    expect(report.results.filter((r) => r.section === "restart").length).toBeGreaterThan(0);
  });

  it("runs demo-sessions.json end to end: a methods check for every demo method decisions §7 lists", () => {
    const methods = serverChecks().filter((c) => c.section === "methods");
    expect(methods.map((c) => c.expectation.slice(0, c.expectation.indexOf(":"))).sort()).toEqual(["blobs", "count", "digest", "fail", "groups", "reverse", "split"]);
    expect(report.results.filter((r) => r.section === "methods" && r.status === "passed").length).toBe(methods.length);
  });

  it("names a protocol reference and an expectation for every check, with unique ids", () => {
    const checks = serverChecks();
    expect(new Set(checks.map((c) => c.id)).size).toBe(checks.length);
    for (const c of checks) {
      expect(c.ref).toMatch(/§|\.json/);
      expect(c.expectation.length).toBeGreaterThan(10);
    }
  });

  it("reports as text, JSON and JUnit XML", () => {
    expect(formatTextReport(report)).toContain(`${report.results.length} checks: ${report.passed} passed, 0 failed`);
    const json = JSON.parse(formatJsonReport(report)) as { summary: { total: number; failed: number }; results: { id: string }[] };
    expect(json.summary).toMatchObject({ total: report.results.length, failed: 0 });
    const junit = formatJunitReport(report);
    expect(junit).toContain(`<testsuites name="golem-stream-session-v1 server conformance" tests="${report.results.length}" failures="0"`);
    expect(junit.match(/<testcase /g)?.length).toBe(report.results.length);
  });
});
