#!/usr/bin/env node
/**
 * golem-stream-conformance server --url URL --token T [--json] [--junit FILE]
 *   [--only S,...] [--skip S,...] [--restart-cmd CMD] [--durable-restart]
 * golem-stream-conformance client --adapter CMD [--json] [--junit FILE]
 *   [--only S,...] [--skip S,...]
 * Exit code 0 when every selected check passed, 1 on any failure, 2 on a usage error.
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Command, InvalidArgumentError, Option } from "commander";
import { SUBPROTOCOL } from "@golem-stream/wire";
import { sessionEndpoint } from "./endpoint.js";
import { probeUpgrade } from "./http-probe.js";
import { SECTIONS } from "./check.js";
import { CLIENT_SECTIONS } from "./client/scenario.js";
import { formatJsonReport } from "./report/json.js";
import { formatJunitReport } from "./report/junit.js";
import { formatResultLine, formatTextReport } from "./report/text.js";
import { runServerSuite } from "./runner.js";
import type { BaseReport, CheckResult } from "./run-checks.js";

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n <= 0) throw new InvalidArgumentError("must be a positive integer");
  return n;
}

function list(value: string, previous: string[] = []): string[] {
  return [
    ...previous,
    ...value
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s.length > 0),
  ];
}

interface ReportOptions {
  readonly json?: boolean;
  readonly junit?: string;
}

/** Progress on stderr, one line per check, unless the report itself is JSON. */
function progress(options: ReportOptions): ((result: CheckResult) => void) | undefined {
  return options.json === true ? undefined : (r) => process.stderr.write(`${formatResultLine(r).split("\n")[0]}\n`);
}

/** Resolves once everything written to `stream` so far has been handed to the operating system (or the stream is gone). */
function flushed(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => stream.write("", () => resolve()));
}

/**
 * Runs a suite, prints its report, writes JUnit when asked, and exits with the report's status.
 * Every check releases what it started when it ends, so nothing should be left to wait for; the
 * explicit exit is the backstop that keeps a CI job from hanging if a check (or an adapter's
 * command) ever leaves something open all the same.
 */
async function runAndReport(options: ReportOptions, run: () => Promise<BaseReport>): Promise<never> {
  let report;
  try {
    report = await run();
  } catch (error) {
    usage(error instanceof Error ? error.message : String(error));
  }
  process.stdout.write(`${options.json === true ? formatJsonReport(report) : formatTextReport(report)}\n`);
  if (options.junit !== undefined) writeFileSync(options.junit, formatJunitReport(report));
  process.exitCode = report.failed > 0 ? 1 : 0;
  await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
  process.exit();
}

/**
 * `--adapter golem-stream-conformance-client-adapter …` runs this kit's own copy of that adapter,
 * whether or not the command is on the PATH (it is after an install or under `npx`, not in a
 * workspace checkout or when the kit is run by path).
 */
function resolveAdapter(command: string): string {
  const match = /^\s*golem-stream-conformance-client-adapter(?=\s|$)/.exec(command);
  if (match === null) return command;
  const bin = fileURLToPath(new URL("./client/adapter/bin.js", import.meta.url));
  return `${JSON.stringify(process.execPath)} ${JSON.stringify(bin)}${command.slice(match[0].length)}`;
}

/** A usage error: one line on stderr, exit 2 (nothing was run). */
function usage(message: string): never {
  process.stderr.write(`golem-stream-conformance: ${message}\n`);
  process.exit(2);
}

/**
 * One upgrade before the suite: a server that cannot be reached, refuses the token or has no
 * session endpoint at the URL is one usage error, not hundreds of failed checks that all say so.
 */
async function checkServerReachable(url: string, token: string, timeoutMs: number): Promise<void> {
  const endpoint = sessionEndpoint(url);
  let status: number;
  try {
    ({ status } = await probeUpgrade(url, { token, protocols: [SUBPROTOCOL], timeoutMs }));
  } catch (error) {
    usage(`cannot reach ${endpoint}: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (status === 401 || status === 403)
    usage(`${endpoint} refused the token (HTTP ${status}): pass the one the server accepts with --token or GOLEM_STREAM_TOKEN`);
  if (status === 404) usage(`${endpoint} answered HTTP 404: is --url the server's base URL (the suite appends the session path)?`);
}

/** Starts the adapter once and waits for its `ready`: a command that does not start one is a usage error. */
async function checkAdapterStarts(command: string, timeoutMs: number): Promise<void> {
  const { AdapterProcess } = await import("./client/adapter-process.js");
  let adapter;
  try {
    adapter = await AdapterProcess.spawn(command, timeoutMs);
  } catch (error) {
    usage(
      `the adapter command ${JSON.stringify(command)} did not start an adapter: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  await adapter.kill();
}

const program = new Command()
  .name("golem-stream-conformance")
  .description("Black-box conformance kit for the Golem Stream Session Public Protocol v1")
  .exitOverride((error) => {
    process.exit(error.exitCode === 0 ? 0 : 2);
  });

program
  .command("server")
  .description("run the server suite against a running server that hosts the demo catalogue (decisions-v1 section 7)")
  .option(
    "--url <url>",
    "ws:// or wss:// base URL of the server (the suite appends /v1/agents/invoke-agent-session); required unless --list",
  )
  .addOption(new Option("--token <token>", "bearer token the server accepts; required unless --list").env("GOLEM_STREAM_TOKEN"))
  .option("--json", "print the report as JSON instead of text")
  .option("--junit <file>", "also write a JUnit XML report to FILE")
  .option("--only <sections>", `run only these sections or check ids (comma-separated; sections: ${SECTIONS.join(", ")})`, list)
  .option("--skip <sections>", "leave out these sections or check ids (comma-separated)", list)
  .option("--restart-cmd <command>", "shell command that restarts the server in place; enables the restart section")
  .option(
    "--durable-restart",
    "the server continues invocations a restart interrupted: the restart section requires continuation, and that the re-run of the demo's journal method follows its journal",
  )
  .option(
    "--first-message-timeout <ms>",
    "the server's deadline for a connection's first message; enables liveness.first-message-deadline",
    positiveInt,
  )
  .option("--ping-interval <ms>", "how often the server pings a session socket; enables the liveness.ping-* checks", positiveInt)
  .option(
    "--max-connections-per-principal <n>",
    "open session WebSockets the server allows one principal; enables limits.principal-connections-overloaded",
    positiveInt,
  )
  .option(
    "--max-sessions-per-principal <n>",
    "invocations the server lets one principal run at once; enables limits.principal-sessions-overloaded",
    positiveInt,
  )
  .addOption(
    new Option(
      "--bounded-token <token>",
      "bearer token of the per-principal checks, of a principal nothing else uses meanwhile (default: --token)",
    ).env("GOLEM_STREAM_BOUNDED_TOKEN"),
  )
  .addOption(
    new Option(
      "--other-principal-token <token>",
      "bearer token of a second principal the server accepts (not --token's); enables the authorization section: that principal may not resume, take over or replay --token's sessions, nor read them with their cursors",
    ).env("GOLEM_STREAM_OTHER_PRINCIPAL_TOKEN"),
  )
  .option("--timeout <ms>", "how long the server may stay silent while a check waits for it", positiveInt, 5000)
  .option("--check-timeout <ms>", "hard deadline of one check", positiveInt, 60_000)
  .option("--concurrency <n>", "checks run at once (the restart section always runs alone)", positiveInt, 4)
  .option("--list", "list the checks (id, reference, expectation) without running them")
  .action(
    async (options: {
      url?: string;
      token?: string;
      json?: boolean;
      junit?: string;
      only?: string[];
      skip?: string[];
      restartCmd?: string;
      durableRestart?: boolean;
      firstMessageTimeout?: number;
      pingInterval?: number;
      maxConnectionsPerPrincipal?: number;
      maxSessionsPerPrincipal?: number;
      boundedToken?: string;
      otherPrincipalToken?: string;
      timeout: number;
      checkTimeout: number;
      concurrency: number;
      list?: boolean;
    }) => {
      if (options.list === true) {
        const { serverChecks } = await import("./suite.js");
        for (const check of serverChecks()) process.stdout.write(`${check.id}\t${check.ref}\t${check.expectation}\n`);
        return;
      }
      const { url, token } = options;
      if (url === undefined) usage("required option '--url <url>' not specified");
      if (token === undefined) usage("required option '--token <token>' not specified (or set GOLEM_STREAM_TOKEN)");
      await checkServerReachable(url, token, options.timeout);
      await runAndReport(options, () =>
        runServerSuite({
          url,
          token,
          timeoutMs: options.timeout,
          checkTimeoutMs: options.checkTimeout,
          concurrency: options.concurrency,
          restartCmd: options.restartCmd,
          durableRestart: options.durableRestart === true,
          firstMessageTimeoutMs: options.firstMessageTimeout,
          pingIntervalMs: options.pingInterval,
          maxConnectionsPerPrincipal: options.maxConnectionsPerPrincipal,
          maxRunningSessionsPerPrincipal: options.maxSessionsPerPrincipal,
          boundedToken: options.boundedToken,
          otherPrincipalToken: options.otherPrincipalToken,
          ...(options.only ? { only: options.only } : {}),
          ...(options.skip ? { skip: options.skip } : {}),
          onResult: progress(options),
        }),
      );
    },
  );

program
  .command("client")
  .description(
    "run the client suite: a scripted server on loopback drives the client under test through its adapter (JSON lines on stdin/stdout)",
  )
  .option(
    "--adapter <command>",
    "shell command that starts the client's adapter (for @golem-stream/client: golem-stream-conformance-client-adapter); required unless --list",
  )
  .option("--json", "print the report as JSON instead of text")
  .option("--junit <file>", "also write a JUnit XML report to FILE")
  .option("--only <sections>", `run only these sections or scenario ids (comma-separated; sections: ${CLIENT_SECTIONS.join(", ")})`, list)
  .option("--skip <sections>", "leave out these sections or scenario ids (comma-separated)", list)
  .option("--timeout <ms>", "how long a scenario waits for the client or the adapter to do what it expects", positiveInt, 10_000)
  .option("--check-timeout <ms>", "hard deadline of one scenario", positiveInt, 60_000)
  .option("--concurrency <n>", "scenarios run at once, each with its own server and adapter process", positiveInt, 2)
  .option(
    "--socket-buffer-allowance <bytes>",
    "what the backpressure scenario allows the kernel's socket buffers to hold beyond the client's own queue (raise it on hosts with larger TCP buffers)",
    positiveInt,
    48 * 1024 * 1024,
  )
  .option("--list", "list the scenarios (id, reference, rule) without running them")
  .action(
    async (options: {
      adapter?: string;
      json?: boolean;
      junit?: string;
      only?: string[];
      skip?: string[];
      timeout: number;
      checkTimeout: number;
      concurrency: number;
      socketBufferAllowance: number;
      list?: boolean;
    }) => {
      if (options.list === true) {
        const { clientScenarios } = await import("./client/suite.js");
        for (const scenario of clientScenarios()) process.stdout.write(`${scenario.id}\t${scenario.ref}\t${scenario.expectation}\n`);
        return;
      }
      if (options.adapter === undefined) usage("required option '--adapter <command>' not specified");
      const adapter = resolveAdapter(options.adapter);
      await checkAdapterStarts(adapter, options.timeout);
      const { runClientSuite } = await import("./client/runner.js");
      await runAndReport(options, () =>
        runClientSuite({
          adapter,
          timeoutMs: options.timeout,
          socketBufferAllowanceBytes: options.socketBufferAllowance,
          checkTimeoutMs: options.checkTimeout,
          concurrency: options.concurrency,
          ...(options.only ? { only: options.only } : {}),
          ...(options.skip ? { skip: options.skip } : {}),
          onResult: progress(options),
        }),
      );
    },
  );

await program.parseAsync(process.argv);
