/**
 * The suite's teeth: through a fault-injecting proxy that breaks one rule at
 * a time, every check the fault table names must fail; through the same proxy
 * without a fault, those checks pass (so the proxy itself breaks nothing).
 * The checks that need a server setting run against the bounded server
 * (short deadlines, small per-principal bounds), one fault at a time.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runServerSuite, serverChecks } from "../src/index.js";
import { startRestartControl, type RestartControl } from "./support/control.js";
import { NO_FAULT, startFaultProxy } from "./support/fault-proxy.js";
import { FAULTS, type FaultCase } from "./support/faults.js";
import { BOUNDED_SUITE_OPTIONS, OTHER_PRINCIPAL_TOKEN, startServerUnderTest, TOKEN, type ServerUnderTest } from "./support/server.js";

/** Waits are short here: a fault that makes the server silent must fail its check quickly. */
const FAULT_TIMEOUT_MS = 1500;

let server: ServerUnderTest;
let bounded: ServerUnderTest;
let control: RestartControl;

beforeAll(async () => {
  server = await startServerUnderTest();
  bounded = await startServerUnderTest({ bounded: true });
  control = await startRestartControl(() => server.restart());
});

afterAll(async () => {
  await control?.close();
  await server?.dispose();
  await bounded?.dispose();
});

const needsSetting = new Set(
  serverChecks()
    .filter((c) => c.needs !== undefined)
    .map((c) => c.id),
);

async function runThroughProxy(
  c: FaultCase | { fault: typeof NO_FAULT; caughtBy: readonly string[] },
  timeoutMs: number,
  checkTimeoutMs = 20_000,
) {
  const results = [];
  // The checks that need a server setting go to the bounded server, told its settings, one at a time.
  for (const [upstream, only, options] of [
    [server, c.caughtBy.filter((id) => !needsSetting.has(id)), { concurrency: 4 }],
    [bounded, c.caughtBy.filter((id) => needsSetting.has(id)), { concurrency: 1, ...BOUNDED_SUITE_OPTIONS }],
  ] as const) {
    if (only.length === 0) continue;
    const proxy = await startFaultProxy(upstream.url, TOKEN, c.fault);
    try {
      // A check that a fault keeps busy (a stream that is never cancelled) is cut off at 20 s.
      // The project's server continues what a restart interrupted: the restart checks require it.
      const report = await runServerSuite({
        url: proxy.url,
        token: TOKEN,
        otherPrincipalToken: OTHER_PRINCIPAL_TOKEN,
        only,
        timeoutMs,
        checkTimeoutMs,
        restartCmd: control.command,
        durableRestart: true,
        ...options,
      });
      expect(proxy.errors.map(String), `errors inside the proxy with fault ${c.fault.name}`).toEqual([]);
      results.push(...report.results);
    } finally {
      await proxy.close();
    }
  }
  return { results };
}

/**
 * Checks that failed only because their hard deadline cut them off: a fault
 * counts as caught when a check says what it expected and saw instead (a
 * wrong message, a wrong close, or the server's silence where a message was
 * due), never when the check was merely still running.
 */
function cutOff(results: readonly { readonly id: string; readonly status: string; readonly saw: string }[]): string[] {
  return results
    .filter((r) => r.status === "failed" && r.saw.startsWith("the check did not finish within"))
    .map((r) => `${r.id}: ${r.saw}`);
}

function summary(ids: readonly string[]): string {
  return ids.length <= 4 ? ids.join(", ") : `${ids.slice(0, 3).join(", ")} and ${ids.length - 3} more`;
}

const knownIds = new Set(serverChecks().map((c) => c.id));

describe("the fault table", () => {
  it("has at least 30 distinct faults, each caught by named, existing checks", () => {
    const names = FAULTS.map((f) => f.fault.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names.length).toBeGreaterThanOrEqual(30);
    for (const f of FAULTS) {
      expect(f.caughtBy.length, f.fault.name).toBeGreaterThan(0);
      for (const id of f.caughtBy) expect(knownIds.has(id), `${f.fault.name}: ${id}`).toBe(true);
    }
  });

  it("names every check of the suite, except the few a proxy cannot break", () => {
    const covered = new Set(FAULTS.flatMap((f) => f.caughtBy));
    const uncovered = serverChecks()
      .filter((c) => !covered.has(c.id))
      .map((c) => c.id);
    expect(uncovered.sort()).toEqual(
      [
        // The proxy's WebSocket layer reassembles fragments before any fault sees them.
        "handshake.fragmentation-ignored",
        // The proxy decodes and re-encodes client messages, so the server only ever sees canonical JSON.
        "idempotency.canonical-encoding-accepted",
        // Which session a replayed acceptance belongs to, and recovering after a rejection, need a
        // server that forgets or confuses sessions: not a frame-level fault.
        "idempotency.new-attempt-after-rejection",
        "idempotency.replay-same-session",
      ].sort(),
    );
  });

  it("without a fault, the proxy is transparent: every check of the table passes through it", async () => {
    const ids = [...new Set(FAULTS.flatMap((f) => f.caughtBy))];
    // Generous waits: the control run must pass on a loaded machine (the backpressure checks move
    // 69 MiB through the proxy while every other package's tests run on the same two cores).
    const report = await runThroughProxy({ fault: NO_FAULT, caughtBy: ids }, 15_000, 150_000);
    expect(report.results.filter((r) => r.status !== "passed").map((r) => `${r.id}: ${r.saw}`)).toEqual([]);
    expect(report.results.length).toBe(ids.length);
  }, 420_000);
});

describe.concurrent("each fault is caught", () => {
  for (const c of FAULTS.filter((f) => f.restart !== true && f.bounded !== true)) {
    it(`${c.fault.name} (${c.fault.description}) fails ${summary(c.caughtBy)}`, async () => {
      const report = await runThroughProxy(c, FAULT_TIMEOUT_MS);
      const passed = report.results.filter((r) => r.status !== "failed").map((r) => r.id);
      expect(passed, `checks that should have caught ${c.fault.name}`).toEqual([]);
      expect(cutOff(report.results), `checks that ${c.fault.name} only kept busy until their deadline`).toEqual([]);
    }, 60_000);
  }
});

describe("faults of the checks that need a server setting are caught, one at a time", () => {
  for (const c of FAULTS.filter((f) => f.bounded === true)) {
    it(`${c.fault.name} (${c.fault.description}) fails ${summary(c.caughtBy)}`, async () => {
      const report = await runThroughProxy(c, FAULT_TIMEOUT_MS);
      expect(
        report.results.filter((r) => r.status !== "failed").map((r) => r.id),
        `checks that should have caught ${c.fault.name}`,
      ).toEqual([]);
      expect(cutOff(report.results), `checks that ${c.fault.name} only kept busy until their deadline`).toEqual([]);
    }, 60_000);
  }
});

describe("restart faults are caught", () => {
  for (const c of FAULTS.filter((f) => f.restart === true)) {
    it(`${c.fault.name} (${c.fault.description}) fails ${c.caughtBy.join(", ")}`, async () => {
      const report = await runThroughProxy(c, 5000);
      expect(report.results.filter((r) => r.status !== "failed").map((r) => r.id)).toEqual([]);
      expect(cutOff(report.results), `checks that ${c.fault.name} only kept busy until their deadline`).toEqual([]);
    }, 60_000);
  }
});
