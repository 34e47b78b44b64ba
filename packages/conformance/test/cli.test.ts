/** The built command as a real process: exit codes, --only/--skip, --json, --junit. */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOUNDED_LIMITS, BOUNDED_TOKEN, startServerUnderTest, TOKEN, type ServerUnderTest } from "./support/server.js";
import { startFaultProxy } from "./support/fault-proxy.js";
import { FAULTS } from "./support/faults.js";

const CLI = fileURLToPath(new URL("../dist/cli.js", import.meta.url));

/** The environment without GOLEM_STREAM_TOKEN, so that --token alone decides. */
function withoutTokenVariable(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.GOLEM_STREAM_TOKEN;
  return env;
}

/** How long a run that must end may take before the test kills it and fails (a bound for a hang, not a measurement). */
const HANG_MS = 60_000;

/** Runs the command; with `killAfterMs`, a run still going then is killed and reports code null. */
function run(args: string[], killAfterMs?: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const signal = killAfterMs === undefined ? undefined : AbortSignal.timeout(killAfterMs);
    const child = spawn(process.execPath, [CLI, ...args], {
      stdio: ["ignore", "pipe", "pipe"],
      env: withoutTokenVariable(),
      ...(signal ? { signal, killSignal: "SIGKILL" as const } : {}),
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", (error) => (signal?.aborted === true ? undefined : reject(error)));
    child.on("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

let server: ServerUnderTest;
let dir: string;
beforeAll(async () => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`pnpm build\` in packages/conformance first`);
  server = await startServerUnderTest();
  dir = mkdtempSync(join(tmpdir(), "golem-stream-conformance-cli-"));
});
afterAll(async () => {
  await server?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

describe("golem-stream-conformance server", () => {
  it("exits 0 when the selected sections pass, and writes JUnit XML", async () => {
    const junit = join(dir, "report.xml");
    const result = await run([
      "server",
      "--url",
      server.url,
      "--token",
      TOKEN,
      "--only",
      "handshake,first-message",
      "--skip",
      "handshake.fragmentation-ignored",
      "--junit",
      junit,
    ]);
    expect(result.stderr).not.toContain("FAIL");
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/\d+ checks: \d+ passed, 0 failed/);
    expect(result.stdout).not.toContain("handshake.fragmentation-ignored");
    expect(readFileSync(junit, "utf8")).toContain('<testsuite name="first-message"');
  });

  it("runs the checks that need a server setting when told it, and skips each one it is not told", async () => {
    const bounded = await startServerUnderTest({ bounded: true });
    try {
      const only = ["--only", "liveness,limits.principal-connections-overloaded,limits.principal-sessions-overloaded"];
      const told = await run([
        "server",
        "--url",
        bounded.url,
        "--token",
        TOKEN,
        ...only,
        "--json",
        "--concurrency",
        "1",
        "--first-message-timeout",
        String(BOUNDED_LIMITS.firstMessageTimeoutMs),
        "--ping-interval",
        String(BOUNDED_LIMITS.pingIntervalMs),
        "--max-connections-per-principal",
        String(BOUNDED_LIMITS.maxConnectionsPerPrincipal),
        "--max-sessions-per-principal",
        String(BOUNDED_LIMITS.maxRunningSessionsPerPrincipal),
        "--bounded-token",
        BOUNDED_TOKEN,
      ]);
      const statuses = (result: { stdout: string }) =>
        (JSON.parse(result.stdout) as { results: { id: string; status: string; saw: string }[] }).results.map(
          (r) => `${r.id} ${r.status}: ${r.saw}`,
        );
      expect(told.code, statuses(told).join("\n")).toBe(0);
      expect(statuses(told).map((line) => line.slice(0, line.indexOf(":")))).toEqual([
        "limits.principal-connections-overloaded passed",
        "limits.principal-sessions-overloaded passed",
        "liveness.first-message-deadline passed",
        "liveness.ping-answered-stays passed",
        "liveness.ping-unanswered-dropped passed",
      ]);
      const untold = await run(["server", "--url", bounded.url, "--token", TOKEN, ...only, "--json"]);
      expect(untold.code).toBe(0);
      expect(statuses(untold)).toContain(
        "liveness.ping-answered-stays skipped: the server's pingIntervalMs was not given (--ping-interval): a server may set it otherwise, or not enforce it",
      );
      expect(statuses(untold).every((line) => line.includes(" skipped: "))).toBe(true);
    } finally {
      await bounded.dispose();
    }
  });

  it("exits 1 when a check fails, and says what it expected and saw", async () => {
    // A server one step off the protocol: it acknowledges the last zero-based sequence instead of the count.
    const proxy = await startFaultProxy(server.url, TOKEN, FAULTS.find((c) => c.fault.name === "ack-as-index")!.fault);
    try {
      const result = await run(["server", "--url", proxy.url, "--token", TOKEN, "--only", "channels.prompt-ack", "--json"]);
      expect(result.code).toBe(1);
      const report = JSON.parse(result.stdout) as {
        summary: { failed: number };
        results: { id: string; status: string; saw: string; expectation: string }[];
      };
      expect(report.summary.failed).toBe(1);
      expect(report.results[0]).toMatchObject({ id: "channels.prompt-ack", status: "failed" });
      expect(report.results[0]!.saw).toBe('highestContiguousSequence: expected "1", saw "0"');
    } finally {
      await proxy.close();
    }
  });

  it("exits 2 with one line, running nothing, when the server cannot be reached, refuses the token or has no session endpoint at the URL", async () => {
    const unreachable = await run(["server", "--url", "ws://127.0.0.1:1", "--token", TOKEN]);
    expect(unreachable.code).toBe(2);
    expect(unreachable.stderr.trim()).toMatch(
      /^golem-stream-conformance: cannot reach ws:\/\/127\.0\.0\.1:1\/v1\/agents\/invoke-agent-session: .*ECONNREFUSED/,
    );
    const refused = await run(["server", "--url", server.url, "--token", "wrong-token"]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("refused the token (HTTP 401)");
    // A base URL with a path keeps it: every check, the raw upgrade probes too, goes to <base>/v1/...
    const prefixed = await run(["server", "--url", `${server.url}/prefix/`, "--token", TOKEN]);
    expect(prefixed.code).toBe(2);
    expect(prefixed.stderr).toContain(`${server.url}/prefix/v1/agents/invoke-agent-session answered HTTP 404`);
    expect(unreachable.stdout + refused.stdout + prefixed.stdout).toBe("");
  });

  it("exits 2 on an unknown section and on a missing --token", async () => {
    const unknown = await run(["server", "--url", server.url, "--token", TOKEN, "--only", "no-such-section"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown section or check");
    const missing = await run(["server", "--url", server.url]);
    expect(missing.code).toBe(2);
  });

  it(
    "exits 1 once the report is written when every check's deadline fires at once, run after run",
    async () => {
      // A 1 ms deadline cuts each check off while it is still connecting: the command used to print its report and hang.
      for (const only of ["channels", "channels", "channels", "channels", "handshake,first-message,resume,cancel,backpressure"]) {
        const result = await run(["server", "--url", server.url, "--token", TOKEN, "--only", only, "--check-timeout", "1"], HANG_MS);
        expect(result.code, `--only ${only}: ${result.stdout.slice(-300)}`).toBe(1);
        expect(result.stdout).toMatch(/\d+ checks: 0 passed, \d+ failed/);
      }
    },
    6 * HANG_MS,
  );

  it("lists the checks without a server, --url or --token", async () => {
    const result = await run(["server", "--list"]);
    expect(result.code).toBe(0);
    expect(result.stdout.split("\n").filter((l) => l.startsWith("handshake.")).length).toBeGreaterThan(5);
  });
});

describe("golem-stream-conformance client", () => {
  const ADAPTER = `node "${fileURLToPath(new URL("../dist/client/adapter/bin.js", import.meta.url))}"`;
  const FAULTY = (fault: string) => `node "${fileURLToPath(new URL("./support/faulty-client-adapter.mjs", import.meta.url))}" ${fault}`;

  it("exits 0 when the selected scenarios pass, with the text report and JUnit XML", async () => {
    const junit = join(dir, "client.xml");
    const result = await run([
      "client",
      "--adapter",
      ADAPTER,
      "--only",
      "outputs,attempts.exact-retry-after-cut",
      "--skip",
      "outputs.terminal-replay",
      "--junit",
      junit,
    ]);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain("Golem Stream Session v1 client conformance");
    expect(result.stdout).toMatch(/\d+ checks: \d+ passed, 0 failed/);
    expect(result.stdout).toContain("attempts.exact-retry-after-cut");
    expect(result.stdout).not.toContain("outputs.terminal-replay");
    expect(readFileSync(junit, "utf8")).toContain('<testsuites name="golem-stream-session-v1 client conformance"');
  });

  it("exits 1 when a scenario fails, and the JSON report names the adapter and what was seen", async () => {
    const result = await run([
      "client",
      "--adapter",
      FAULTY("cursor-before-delivery"),
      "--only",
      "outputs.cursor-after-delivery",
      "--json",
    ]);
    expect(result.code).toBe(1);
    const report = JSON.parse(result.stdout) as {
      suite: string;
      adapter: string;
      summary: { failed: number };
      results: { id: string; status: string; saw: string }[];
    };
    expect(report).toMatchObject({
      suite: "golem-stream-session-v1/client",
      adapter: FAULTY("cursor-before-delivery"),
      summary: { failed: 1 },
    });
    expect(report.results[0]!.saw).toContain("the application had received items 0-2 only");
  });

  it(
    "exits 1 once the report is written when every scenario's deadline fires at once",
    async () => {
      // Cut off while the scripted server starts or the adapter gets ready: both used to outlive the run.
      for (let round = 0; round < 2; round++) {
        const result = await run(
          ["client", "--adapter", ADAPTER, "--only", "outputs,attempts", "--check-timeout", "1", "--concurrency", "4"],
          HANG_MS,
        );
        expect(result.code, result.stdout.slice(-300)).toBe(1);
        expect(result.stdout).toMatch(/\d+ checks: 0 passed, \d+ failed/);
      }
    },
    3 * HANG_MS,
  );

  it("exits 2 on an unknown section or a missing --adapter; lists the scenarios", async () => {
    expect((await run(["client", "--adapter", ADAPTER, "--only", "no-such-section"])).code).toBe(2);
    // A server section is not a client section.
    expect((await run(["client", "--adapter", ADAPTER, "--only", "decoding"])).code).toBe(2);
    expect((await run(["client"])).code).toBe(2);
    const list = await run(["client", "--list"]);
    expect(list.code).toBe(0);
    expect(list.stdout.split("\n").filter((l) => l.startsWith("violations.")).length).toBeGreaterThan(5);
  });

  it("the bundled adapter's command name runs the kit's own adapter, on the PATH or not", async () => {
    const result = await run(["client", "--adapter", "golem-stream-conformance-client-adapter", "--only", "outputs.in-order-once"]);
    expect(result.code, result.stdout + result.stderr).toBe(0);
  });

  it("an adapter command that does not start an adapter is one usage error (exit 2), with the reason; nothing runs", async () => {
    const result = await run(["client", "--adapter", "exit 3", "--json"]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain(
      'the adapter command "exit 3" did not start an adapter: the adapter exited (status 3) before the adapter\'s ready event',
    );
  });

  it("a failure names the lines the adapter wrote that are not events", async () => {
    const junk = join(dir, "junk-adapter.mjs");
    writeFileSync(junk, 'process.stdout.write(\'{"type":"ready"}\\nnot json\\n\'); setInterval(() => {}, 1000);\n');
    const result = await run(["client", "--adapter", `node "${junk}"`, "--only", "outputs.in-order-once", "--timeout", "500", "--json"]);
    expect(result.code).toBe(1);
    const report = JSON.parse(result.stdout) as { results: { saw: string }[] };
    expect(report.results[0]!.saw).toContain("did not see");
    expect(report.results[0]!.saw).toContain("the adapter wrote a line that is not an event: not json");
  });
});
