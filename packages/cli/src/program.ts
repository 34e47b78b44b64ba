/**
 * The command line of `golem-stream`: every command, option, default and
 * example in one place. Actions load their implementation lazily, so
 * `--help` works (and is fast) even where the server's native SQLite module
 * cannot load.
 */
import { createRequire } from "node:module";
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import { CliError, EXIT, EXIT_INTERNAL } from "./exit-codes.js";
import type { ExitCode } from "./exit-codes.js";
import type { CliIo } from "./io/cli-io.js";
import { report } from "./io/cli-io.js";
import { commandName, spellCommands } from "./io/command-name.js";
import { parseDuration } from "./duration.js";
import { jwtFlags, type JwtServeOptions } from "./jwt-flags.js";
import { DEFAULT_CHECKPOINT_BATCHING } from "./checkpoint/batching.js";
import type { CheckpointBatching } from "./checkpoint/batching.js";
import { applicationOption, DEFAULT_APPLICATION, DEFAULT_ENVIRONMENT, environmentOption, withCatalogueSelector } from "./catalogue-selector.js";

export const DEFAULT_URL = "http://127.0.0.1:8080";
export const DEFAULT_PORT = 8080;
export const DEFAULT_HOST = "127.0.0.1";
/** Session retention after invocationFinished: the default of decisions §6 (the server's own default too). */
export const DEFAULT_RETENTION_MS = 24 * 3_600_000;
/** How long a running invocation may go without any client attached before it is given up (the server's own default). */
export const DEFAULT_DETACHED_TIMEOUT_MS = 24 * 3_600_000;
export const LOG_LEVELS = ["error", "warn", "info", "debug"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
/** `auto`: readable lines on a terminal, JSON lines otherwise. */
export const LOG_FORMATS = ["auto", "json", "pretty"] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];
/** store-postgres's `logCompression`: lz4 where the server has it (its default), or the server's own method. */
export const LOG_COMPRESSIONS = ["lz4", "server"] as const;
export type LogCompression = (typeof LOG_COMPRESSIONS)[number];

const CONNECTION_HELP = `
Connection (invoke, resume, types, codegen):
  --url defaults to $GOLEM_STREAM_URL, then ${DEFAULT_URL}
  --token defaults to $GOLEM_STREAM_TOKEN (a static bearer token the server accepts)
  -a/--application and -e/--environment (invoke, types, codegen) default to $GOLEM_STREAM_APPLICATION
  and $GOLEM_STREAM_ENVIRONMENT, then ${DEFAULT_APPLICATION} and ${DEFAULT_ENVIRONMENT}`;

const EXIT_HELP = `
Exit codes:
  0    success
  1    the invocation was accepted but failed (or an output stream ended in error)
  2    usage error: bad option, argument, input file or checkpoint; nothing was sent
  3    rejected by the server (authentication or invocationRejected)
  4    connection lost; \`golem-stream resume <checkpoint>\` continues
  5    conformance: the suite ran and at least one check failed
  70   internal error of the CLI (a bug: please report it with the message)
  74   stdout or the checkpoint could not be written; \`resume\` continues after the last saved item
       (without --checkpoint, a failed stdout cancels the invocation)
  78   serve --agents: the module could not be loaded or its catalogue is invalid; nothing was started
  130  interrupted (SIGINT/SIGTERM): with --checkpoint the invocation keeps running on the
       server (\`resume\` continues it); without, it is cancelled there (a second Ctrl-C stops waiting)
  141  stdout was closed by its reader (\`| head\`): stopped quietly, like a program stopped by SIGPIPE;
       the invocation was cancelled, or with --checkpoint keeps running (\`resume\` continues it)`;

export interface ConnectionOptions {
  readonly url?: string;
  readonly token?: string;
}

export interface ServeOptions extends JwtServeOptions {
  readonly port: number;
  readonly host: string;
  readonly token: readonly string[];
  readonly tokenFile?: string;
  readonly dataDir?: string;
  readonly logLevel: LogLevel;
  readonly logFormat: LogFormat;
  /** Serve Prometheus metrics at /metrics. */
  readonly metrics: boolean;
  /** Milliseconds a finished invocation stays resumable. */
  readonly retention: number;
  /** Milliseconds a running invocation may go without any client before it is given up. */
  readonly detachedTimeout: number;
  /** A cluster store URL (`postgres://...`); `$GOLEM_STREAM_STORE` when absent. Validated by `serve`, never echoed. */
  readonly store?: string;
  /** This node's id in the cluster (default: generated). */
  readonly nodeId?: string;
  /** Milliseconds a drain (SIGTERM with a cluster store) lets this node's invocations run. */
  readonly drainTimeout?: number;
  /** Milliseconds a node's lease lasts without a heartbeat. */
  readonly leaseTtl?: number;
  /** The PostgreSQL store's connection time limits, ms (0: off); each absent one keeps the store's default. */
  readonly pgConnectTimeoutMs?: number;
  readonly pgStatementTimeoutMs?: number;
  readonly pgQueryTimeoutMs?: number;
  readonly pgKeepaliveInitialDelayMs?: number;
  /** How PostgreSQL compresses log rows too large for a page; absent keeps the store's default (lz4). */
  readonly logCompression?: LogCompression;
  /** The keyring file (default `<data-dir>/keyring.json`). */
  readonly keyring?: string;
  /** Origins whose pages may open sessions (the browser extension, docs/protocol/browser.md); none: off. */
  readonly allowOrigin: readonly string[];
  /** Serve the web console at `/` (`--no-console` turns it off). */
  readonly console: boolean;
  /** Failed authentications per client address per minute before it is refused (0: no throttle); absent: the server's default. */
  readonly authFailureLimit?: number;
  /** Milliseconds a session socket may wait before its first message; absent: the server's default. */
  readonly firstMessageTimeout?: number;
  /** Milliseconds between the server's pings; absent: the server's default. */
  readonly pingInterval?: number;
  /** Open session sockets per principal; absent: the server's default. */
  readonly maxConnectionsPerPrincipal?: number;
  /** Invocations one principal may run at once; absent: the server's default. */
  readonly maxSessionsPerPrincipal?: number;
  /** DNS names the server is reached by, for the Host check of its HTTP endpoints and console. */
  readonly publicHost: readonly string[];
  /** Refuse to start when the keyring or a token file is readable by group or others. */
  readonly strictPermissions?: boolean;
  /** The ES module whose default export is the catalogue to serve (relative to the working directory); absent: the demo. */
  readonly agents?: string;
  /** Serve the demo catalogue beside `--agents` (it is served anyway without them). */
  readonly demo: boolean;
  /** Cluster mode: serve although live nodes serve another catalogue (a rolling upgrade). */
  readonly allowCatalogueDrift?: boolean;
}

/** `auto`: bare output for a single output stream, item lines otherwise; `lines`: always item lines; `json`: events. */
export type OutputFormat = "auto" | "lines" | "json";
/** Where the result goes when stdout carries bare output: stderr, or nowhere. */
export type ResultDestination = "stderr" | "none";

/** What `invoke` and `resume` share: output, progress, checkpoint writes, reconnects. */
export interface RunOptions extends ConnectionOptions {
  readonly output: OutputFormat;
  readonly result: ResultDestination;
  readonly progress: boolean;
  readonly checkpointBatching: CheckpointBatching;
  /** Reconnect attempts without progress before giving up (the client's `reconnect.maxAttempts`). */
  readonly retries: number;
  /** How long the server may take to complete a handshake, answer a start/resume/takeover, or the discovery request, ms. */
  readonly timeoutMs: number;
}

export const DEFAULT_RETRIES = 10;
/** The client's own acceptance timeout default (30 s); also bounds handshakes and discovery here. */
export const DEFAULT_TIMEOUT_MS = 30_000;

export interface InvokeOptions extends RunOptions {
  readonly application: string;
  readonly environment: string;
  /** `--constructor`; renamed because `constructor` is inherited by every object. */
  readonly constructorJson?: string;
  readonly native: boolean;
  readonly idempotencyKey?: string;
  readonly phantomId?: string;
  readonly checkpoint?: string;
}

export type ResumeOptions = RunOptions;

export interface TypesOptions extends ConnectionOptions {
  readonly application: string;
  readonly environment: string;
  readonly json: boolean;
}

export interface CodegenOptions extends ConnectionOptions {
  readonly application: string;
  readonly environment: string;
  /** The file to write (replaced atomically); stdout when absent or `-`. */
  readonly out?: string;
  /** The module the generated source imports `defineAgentType` and `t` from. */
  readonly importFrom: string;
  /** `--timeout`: how long the discovery request may take, ms. */
  readonly timeout: number;
}

function parsePort(value: string): number {
  if (!/^(0|[1-9][0-9]{0,4})$/.test(value) || Number(value) > 65535) {
    throw new InvalidArgumentError("a port is an integer from 0 (any free port) to 65535");
  }
  return Number(value);
}

function parseRetention(value: string): number {
  const ms = parseDuration(value);
  if (ms === undefined) throw new InvalidArgumentError("a duration is a positive whole number and a unit: 90s, 30m, 24h, 7d");
  return ms;
}

/** A strict duration within [min, max] milliseconds (timers cannot wait longer than ~24 days). */
function parseBoundedDuration(min: number, max: number, range: string): (value: string) => number {
  return (value) => {
    const ms = parseRetention(value);
    if (ms < min || ms > max) throw new InvalidArgumentError(`must be ${range}`);
    return ms;
  };
}

export const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;
export const DEFAULT_LEASE_TTL_MS = 10_000;

function collect(value: string, previous: readonly string[]): string[] {
  return [...previous, value];
}

/** An origin exactly as a browser sends it: `scheme://host[:port]`, nothing after. */
function collectOrigin(value: string, previous: readonly string[]): string[] {
  let origin: string | undefined;
  try {
    const url = new URL(value);
    origin = url.protocol === "http:" || url.protocol === "https:" ? url.origin : undefined;
  } catch {
    origin = undefined;
  }
  if (origin !== value) throw new InvalidArgumentError("an origin is http(s)://host[:port], as a browser sends it (no path, no trailing slash)");
  return [...previous, value];
}

const urlOption = () => new Option("--url <url>", "server base URL (http://, https://, ws:// or wss://)");
const tokenOption = () => new Option("--token <token>", "bearer token sent to the server");
/** The options `invoke` and `resume` share, added to `command`. */
function addRunOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        "--output <format>",
        "auto: a single output stream bare (strings as lines, bytes raw, other items as JSON lines), several as {\"stream\",\"item\"} lines; lines: always {\"stream\",\"item\"} lines; json: one JSON event per line for everything",
      )
        .choices(["auto", "lines", "json"])
        .default("auto"),
    )
    .addOption(
      new Option("--result <where>", "with bare output: print the result (what is not the stream) on stderr, or not at all")
        .choices(["stderr", "none"])
        .default("stderr"),
    )
    .option("--no-progress", "never draw progress (drawn only when stderr is a terminal and stdout is not)")
    .addOption(
      new Option("--checkpoint-interval <duration>", "write the checkpoint at most this long after an item was printed (0: after every item)")
        .argParser(parseIntervalMs)
        .default(DEFAULT_CHECKPOINT_BATCHING.intervalMs, `${DEFAULT_CHECKPOINT_BATCHING.intervalMs}ms`),
    )
    .addOption(
      new Option("--checkpoint-items <n>", "write the checkpoint at least every n printed items (1: after every item)")
        .argParser(parseCount(1, 1_000_000))
        .default(DEFAULT_CHECKPOINT_BATCHING.maxItems),
    )
    .addOption(
      new Option("--retries <n>", "reconnect attempts without progress before giving up (0: never reconnect)")
        .argParser(parseCount(0, 1_000))
        .default(DEFAULT_RETRIES),
    )
    .addOption(
      new Option("--timeout <duration>", "how long the server may take to accept a connection or answer its first message (then retried), and the discovery request")
        .argParser(parseBoundedDuration(1, 3_600_000, "at most 1h"))
        .default(DEFAULT_TIMEOUT_MS, "30s"),
    )
    .addOption(urlOption())
    .addOption(tokenOption());
}

/** commander's parsed values of addRunOptions, as RunOptions. */
function runOptionsOf(parsed: Record<string, unknown>): RunOptions {
  const { checkpointInterval, checkpointItems, timeout, ...rest } = parsed;
  return {
    ...(rest as Omit<RunOptions, "checkpointBatching" | "timeoutMs">),
    checkpointBatching: { intervalMs: checkpointInterval as number, maxItems: checkpointItems as number },
    timeoutMs: timeout as number,
  };
}

function parseIntervalMs(value: string): number {
  if (value === "0") return 0;
  const ms = parseDuration(value);
  if (ms === undefined || ms > 3_600_000) throw new InvalidArgumentError("0, or a duration up to 1h: 100ms, 2s");
  return ms;
}

/** Milliseconds as a bare whole number, `0` included (off); capped where Node's timers and PostgreSQL's settings stop. */
function parseTimeoutMs(value: string): number {
  if (!/^(0|[1-9][0-9]{0,9})$/.test(value) || Number(value) > MAX_TIMEOUT_MS) {
    throw new InvalidArgumentError(`milliseconds, a whole number from 0 (off) to ${MAX_TIMEOUT_MS}`);
  }
  return Number(value);
}

/** 2^31 - 1: the largest delay of a Node timer and of PostgreSQL's statement_timeout. */
const MAX_TIMEOUT_MS = 2_147_483_647;

function parseCount(min: number, max: number): (value: string) => number {
  return (value) => {
    if (!/^(0|[1-9][0-9]{0,9})$/.test(value) || Number(value) < min || Number(value) > max) {
      throw new InvalidArgumentError(`an integer from ${min} to ${max}`);
    }
    return Number(value);
  };
}

/**
 * Builds the program. `setExitCode` receives the outcome of the action that
 * ran; commander's own exits (help, usage errors) surface as CommanderError.
 */
export function buildProgram(io: CliIo, setExitCode: (code: ExitCode) => void): Command {
  const program = new Command("golem-stream")
    .description(
      "Serve the Golem Stream Session protocol, invoke streaming agent methods, and resume them after a crash.",
    )
    .version(VERSION, "-V, --version")
    .exitOverride()
    // Options after a subcommand are its own (conformance hands them all to the kit).
    .enablePositionalOptions()
    .configureOutput({
      // Help and usage spell the command as it is typed here (`pnpm golem-stream` in a checkout).
      writeOut: (text) => io.stdout.write(spellCommands(text, commandName(io.env))),
      writeErr: (text) => io.stderr.write(spellCommands(text, commandName(io.env))),
      // Like every other failure: one line, the program's name first, and where to look.
      outputError: (text, write) => write(`golem-stream: ${text.replace(/^error: /, "").trim().replace(/\s*\n\s*/g, " ")} (see --help)\n`),
    })
    .addHelpText(
      "after",
      `
Examples:
  $ golem-stream serve --token s3cret
  $ export GOLEM_STREAM_URL=http://127.0.0.1:8080 GOLEM_STREAM_TOKEN=s3cret
  $ golem-stream types
  $ golem-stream invoke echo digest -c '{"name":"me"}' - < big.iso
  $ printf 'one\\ntwo\\n' | golem-stream invoke echo split -c '{"name":"me"}' -
  $ golem-stream invoke echo count -c '{"name":"me"}' 100 50 --checkpoint count.ckpt
  $ golem-stream resume count.ckpt
${EXIT_HELP}`,
    );

  const run = <T>(load: () => Promise<(options: T, io: CliIo) => Promise<ExitCode>>) =>
    async (options: T): Promise<void> => {
      const action = await load();
      setExitCode(await action(options, io));
    };
  /** `run` for the commands that read a catalogue: -a/-e decided from the flag, the environment or the default. */
  const runOnCatalogue = <T extends { readonly application: string; readonly environment: string }>(load: () => Promise<(options: T, io: CliIo) => Promise<ExitCode>>) =>
    async (options: T): Promise<void> => {
      const action = await load();
      setExitCode(await action(withCatalogueSelector(options, io.env), io));
    };

  const jwt = jwtFlags();
  program
    .command("serve")
    .description(
      "Start the session server with the embedded SQLite store, the demo catalogue (or your own agents, --agents) and a signing keyring kept in the data directory.",
    )
    .addOption(new Option("--port <port>", "TCP port; 0 picks a free one").argParser(parsePort).default(DEFAULT_PORT))
    .option("--host <host>", "interface to listen on", DEFAULT_HOST)
    .addOption(
      new Option("--token <token>", "accept this static bearer token (repeatable)").argParser(collect).default([]),
    )
    .option("--token-file <file>", "accept every token in this file (one per line, # comments)")
    .option("--agents <file>", "serve the agents of this ES module (its default export: defineCatalogue({...}) or an AgentHost) instead of the demo; see Agents below")
    .option("--demo", "with --agents: serve the demo catalogue (application demo) beside them", false)
    .option("--data-dir <dir>", "store, keyring and generated token live here (default: $XDG_STATE_HOME/golem-stream or ~/.local/state/golem-stream)")
    .addOption(new Option("--log-level <level>", "how much to log on stderr").choices(LOG_LEVELS).default("info"))
    .addOption(new Option("--log-format <format>", "log lines as JSON, or readable (auto: readable on a terminal)").choices(LOG_FORMATS).default("auto"))
    .option("--log-file <file>", "append the log to this file instead of stderr (for serve in the background of a terminal you keep typing in)")
    .option("--metrics", "serve Prometheus metrics at /metrics (no bearer token; keep the port off the public internet)", false)
    .addOption(
      new Option("--retention <duration>", "how long a finished invocation stays resumable (90s, 30m, 24h, 7d)")
        .argParser(parseRetention)
        .default(DEFAULT_RETENTION_MS, "24h"),
    )
    .addOption(
      new Option(
        "--detached-timeout <duration>",
        "how long a running invocation may go without any client attached before its streams are cancelled (transport-detached); up to 24d",
      )
        .argParser(parseBoundedDuration(1_000, 2 ** 31 - 1, "from 1s to 24d"))
        .default(DEFAULT_DETACHED_TIMEOUT_MS, "24h"),
    )
    .option("--keyring <file>", "the signing keyring, created on first start (default: <data-dir>/keyring.json); a cluster's nodes share one")
    .addOption(
      new Option("--allow-origin <origin>", "let web pages of this origin open sessions, with the bearer token in a subprotocol entry (repeatable; see Browsers below)")
        .argParser(collectOrigin)
        .default([]),
    )
    .option("--no-console", "do not serve the web console at / (docs/console.md)")
    .option("--store <url>", "cluster mode: keep sessions in PostgreSQL, postgres://USER@HOST:PORT/DATABASE (default: $GOLEM_STREAM_STORE, else SQLite in the data directory)")
    .option("--node-id <id>", "with --store: this node's id in the cluster (default: <hostname>-<random>)")
    .addOption(
      new Option("--drain-timeout <duration>", "with --store: on SIGTERM/SIGINT, how long this node's invocations may run before they are failed (default: 30s)")
        .argParser(parseBoundedDuration(1, 86_400_000, "at most 24h")),
    )
    .addOption(
      new Option("--lease-ttl <duration>", "with --store: how long this node's lease lasts without a heartbeat (default: 10s)")
        .argParser(parseBoundedDuration(100, 86_400_000, "from 100ms to 24h")),
    )
    .addOption(
      new Option("--pg-connect-timeout-ms <ms>", "with --store: how long opening a PostgreSQL connection (or waiting for a free pooled one) may take; 0: forever (default: 10000)")
        .argParser(parseTimeoutMs),
    )
    .addOption(
      new Option("--pg-statement-timeout-ms <ms>", "with --store: PostgreSQL cancels a statement that runs longer (statement_timeout); 0: not sent (default: 30000)")
        .argParser(parseTimeoutMs),
    )
    .addOption(
      new Option("--pg-query-timeout-ms <ms>", "with --store: how long to wait for any answer to a query before closing its connection; keep it above the statement timeout; 0: none (default: 45000)")
        .argParser(parseTimeoutMs),
    )
    .addOption(
      new Option("--pg-keepalive-initial-delay-ms <ms>", "with --store: idle time before TCP keepalive probes on every PostgreSQL connection; 0: the system's delay (default: 10000)")
        .argParser(parseTimeoutMs),
    )
    .option("--allow-catalogue-drift", "with --store: serve even when other live nodes serve another catalogue (during a rolling upgrade of --agents; logged and shown in /readyz)")
    .addOption(
      new Option(
        "--log-compression <method>",
        "with --store: how PostgreSQL compresses stored items too large for a page (1 MiB batches): lz4 where the server has it, else its own method; server: always the server's default_toast_compression (default: lz4)",
      ).choices(LOG_COMPRESSIONS),
    )
    .addOption(jwt.jwks)
    .addOption(jwt.issuer)
    .addOption(jwt.audience)
    .addOption(jwt.principalClaim)
    .addOption(jwt.accountClaim)
    .addOption(jwt.authorizationClaim)
    .addOption(jwt.authorizationPrefix)
    .addOption(jwt.clockSkew)
    .addOption(
      new Option("--auth-failure-limit <n>", "failed authentications one client address may have per minute before its requests are refused (503) for the rest of that minute; 0: no throttle, e.g. behind a proxy (default: 20)")
        .argParser(parseCount(0, 1_000_000)),
    )
    .addOption(
      new Option("--first-message-timeout <duration>", "how long a session connection may wait before its first message, then it is closed (default: 30s)")
        .argParser(parseBoundedDuration(1, 2 ** 31 - 1, "from 1ms to 24d")),
    )
    .addOption(
      new Option("--ping-interval <duration>", "the server pings every session connection this often and drops one that answers neither of two pings; 0: no pings (default: 30s)")
        .argParser(parseIntervalMs),
    )
    .addOption(
      new Option("--max-connections-per-principal <n>", "open session connections one token (principal) may have; more are refused with 503 overloaded (default: 1000)")
        .argParser(parseCount(1, 1_000_000)),
    )
    .addOption(
      new Option("--max-sessions-per-principal <n>", "invocations one token (principal) may run at once; more starts are refused with overloaded, retryable (default: 500)")
        .argParser(parseCount(1, 1_000_000)),
    )
    .addOption(
      new Option("--public-host <name>", "a DNS name clients reach this server by (repeatable; .example.com for every name under it, * for any): the console, /metrics, /healthz, /readyz and the catalogue answer only a Host of localhost, an IP address or one of these")
        .argParser(collect)
        .default([]),
    )
    .option("--strict-permissions", "refuse to start when the keyring or a token file is readable by group or others (default: a warning)")
    .addHelpText(
      "after",
      `
Agents: without --agents the demo catalogue is served (application demo, environment default,
agent type echo). --agents ./agents.js imports that ES module (a path relative to the working
directory) and serves its default export: defineCatalogue({ applications: { <app>: { <env>:
[implement(contract, methods), ...] } } }) of @golem-stream/server, or an AgentHost of your own.
TypeScript: compile it with tsc, or NODE_OPTIONS=--import=tsx golem-stream serve --agents ./agents.ts.
A module that cannot be loaded, has no default export or declares an invalid catalogue stops serve
at once with one line naming the file and the problem, exit code 78. Format: docs/agents.md.

Tokens: every --token, $GOLEM_STREAM_TOKEN and every line of --token-file are accepted.
With none of them (and no --jwt-jwks), a random token is created on first start and kept in
<data-dir>/bearer-token. With --jwt-jwks, bearer JWTs are accepted too (static tokens only if given):
signed RS256, ES256 or EdDSA by a key of the JWKS, with the --jwt-issuer and --jwt-audience, not
expired. The caller is the sub claim, its account the iss claim (--jwt-principal-claim,
--jwt-account-claim). A refused token gets 401 unauthenticated; a caller its
--jwt-authorization-claim does not grant gets forbidden. Details: docs/operations.md, Authentication.
The server stops cleanly on SIGINT or SIGTERM; sessions survive a restart on the same data directory.
One server per data directory: a second one on the same directory exits with an error.
Health: GET /healthz answers 200 while the process runs; GET /readyz answers 200 when the store is
reachable and the server takes sessions, 503 otherwise (while draining, or the store is down).
Logs: one event per line on stderr (JSON, or readable on a terminal); never a token or a key.
Finished invocations are deleted (with their stored output) once --retention has passed. A running
invocation with no client attached for --detached-timeout is given up: its open streams are cancelled
(transport-detached) and it ends as its method does; a client that comes back later reads that.

The web console at / (open the printed URL in a browser; --no-console turns it off) signs in with
one of the tokens, lists the catalogue, fills parameters through forms, shows every output stream live
and resumes after a reload. Its own origin (the listening address; with localhost for loopback) is
allowed for the browser extension; behind a proxy or a DNS name, add that origin with --allow-origin.

Browsers cannot send Authorization on a WebSocket. With --allow-origin, pages of the given origins
may send the bearer token in a Sec-WebSocket-Protocol entry instead (what @golem-stream/client does in
a browser); every request from any other origin is refused (403), and the catalogue answers CORS to
those origins. Without it, browser pages cannot authenticate. Details: docs/protocol/browser.md.

Cluster mode: every serve started with the same --store (a PostgreSQL database) and the same keyring
(--keyring, a copy of one file on every machine, with the principal-secret file beside it) and
accepting the same tokens is a node of one cluster. Every node serves the same catalogue (the same
--agents module, or the demo): a node whose catalogue differs from a live node's refuses to start
(exit 78), unless --allow-catalogue-drift (a rolling upgrade: it serves, logs the difference and
shows it in /readyz). Put a load balancer in front; a client may start, resume or take over at any node. To
change the keys, rotate in two steps (keyring rotate --staged, then keyring activate; see keyring
--help), rolling each out to every node. The password may be in the URL or in $PGPASSWORD; it is never printed. On SIGTERM or SIGINT a node
drains: it refuses new connections (overloaded), detaches its clients (they resume at another node),
lets the invocations it runs finish until --drain-timeout, fails the rest, leaves the cluster and
exits 0. A second signal stops it at once. Without --store (SQLite), a stop is immediate, as there
is no other node to resume at: invocations still running are failed when it starts again.
The --pg-*-ms flags bound every wait on PostgreSQL (whole milliseconds, 0 turns one off); a limit
that fires fails the store call, handled like PostgreSQL being unreachable (docs/cluster.md).
Rows of small items (up to a page) are kept whole, uncompressed, in their page; larger ones are
compressed (--log-compression). To have PostgreSQL compress small rows too, saving disk for
CPU, set toast_tuple_target on the log tables yourself, once for the cluster:
@golem-stream/store-postgres's README, "Keeping small rows whole costs disk".

Examples:
  $ golem-stream serve
  $ golem-stream serve --agents ./dist/agents.js --token s3cret
  $ golem-stream serve --agents ./dist/agents.js --demo   # the demo too, for the conformance suite
  $ golem-stream serve --port 9000 --token s3cret --data-dir ./state
  $ GOLEM_STREAM_TOKEN=s3cret golem-stream serve --host 0.0.0.0 --log-level debug
  $ golem-stream serve --port 0 --token-file tokens.txt   # prints the URL it picked
  $ golem-stream serve --token s3cret --log-file serve.log &   # in the background: its log in a file, not between your commands
  $ golem-stream serve --metrics --log-format json 2> server.log   # Prometheus scrapes <url>/metrics
  $ golem-stream serve --allow-origin http://localhost:5173   # a web app's dev server may call it
  $ golem-stream serve --jwt-jwks https://login.example.com/.well-known/jwks.json \\
      --jwt-issuer https://login.example.com/ --jwt-audience golem-stream --jwt-authorization-claim scope
  $ PGPASSWORD=... golem-stream serve --store postgres://golem@db:5432/golem --keyring /etc/golem/keyring.json \\
      --token-file /etc/golem/tokens --node-id node-a --drain-timeout 2m`,
    )
    .action(async (options: ServeOptions & { readonly logFile?: string }) => {
      const [{ runServe }, { withLogFile }] = await Promise.all([import("./commands/serve.js"), import("./io/log-file.js")]);
      setExitCode(await withLogFile(options.logFile, io, (served) => runServe(options, served)));
    });

  const invoke = program
    .command("invoke")
    .description("Call an agent method, streaming stdin into it and its output streams to stdout.")
    .argument("<agent-type>", "agent type, for example echo")
    .argument("<method>", "method name, for example digest")
    .argument("[arguments...]", "one per method parameter, in order: JSON, or - to bind stdin to a stream parameter")
    .addOption(applicationOption())
    .addOption(environmentOption())
    .option("-c, --constructor <json>", "constructor parameters as JSON (an object by field name, or an array)")
    .option("--native", "arguments and --constructor are native SchemaValue JSON ({\"kind\":..,\"value\":..})", false)
    .option("--idempotency-key <key>", "invocation idempotency key (default: a fresh UUID)")
    .option("--phantom-id <uuid>", "phantom agent id")
    .option("--checkpoint <file>", "keep checkpoint v1 here, so `resume` can continue after a crash");
  addRunOptions(invoke)
    .addHelpText(
      "after",
      `
Arguments are plain JSON converted with the method's schema from the server's discovery endpoint
(u64/s64 may be given as strings), or native SchemaValue JSON with --native.
"-" binds stdin to a stream parameter: raw bytes for stream<u8> and stream<binary>, one item per line
for stream<string>. Output: a result with a single output stream prints it bare (strings one per
line, bytes raw, other items one JSON value per line; the rest of the result on stderr, or nowhere
with --result none); several streams print one JSON line per item ({"stream":name,"item":value})
and the result last. --output lines always uses those lines; --output json prints one JSON event
per line for everything (acceptance, items, ends, result, finish or failure with its code).
With --checkpoint the file is written in batches behind stdout (--checkpoint-interval,
--checkpoint-items): a crash repeats what was printed since the last write, never skips anything.
Progress is drawn on stderr when it is a terminal and stdout is not.
${CONNECTION_HELP}

Examples:
  $ golem-stream invoke echo digest -c '{"name":"me"}' - < big.iso
  $ printf 'one\\ntwo\\n' | golem-stream invoke echo split -c '{"name":"me"}' -
  $ golem-stream invoke echo reverse -c '["me"]' - < lines.txt | sort
  $ golem-stream invoke echo count -c '{"name":"me"}' 10 100 --checkpoint count.ckpt
  $ golem-stream invoke echo blobs -c '{"name":"me"}' 1 4096 > blob.bin
  $ golem-stream invoke echo count --native -c '{"kind":"record","value":{"fields":[{"kind":"string","value":"me"}]}}' \\
      '{"kind":"u32","value":3}' '{"kind":"u32","value":0}' --output json
${EXIT_HELP}`,
    )
    .action(async (agentType: string, method: string, args: string[], parsed: Record<string, unknown>) => {
      const { runInvoke } = await import("./commands/invoke.js");
      const constructorJson = Object.hasOwn(parsed, "constructor") ? (parsed["constructor"] as string) : undefined;
      const { constructor: _ignored, ...rest } = parsed;
      const options = withCatalogueSelector({ ...runOptionsOf(rest), ...(constructorJson === undefined ? {} : { constructorJson }) } as InvokeOptions, io.env);
      setExitCode(await runInvoke({ agentType, method, args }, options, io));
    });

  const resume = program
    .command("resume")
    .description("Continue an invocation from a checkpoint after a crash or lost connection, without skipping output.")
    .argument("<checkpoint>", "checkpoint file written by invoke --checkpoint (it is kept up to date)");
  addRunOptions(resume)
    .addHelpText(
      "after",
      `
Output continues after the last item the checkpoint records as delivered; what was printed after the
checkpoint's last write (at most --checkpoint-interval of output) is repeated, nothing is skipped. A checkpoint saved before the start was accepted
holds the frozen start: resume sends exactly that start again (same attempt id), and the server either
replays its acceptance or accepts it now. An invocation that already finished prints its result again
and exits 0.

Input read from stdin is not replayable: after a crash, resume has no source for it, and an input
stream the server had not seen end is cancelled with source-unavailable (the invocation then usually
fails, exit 1). Output the server produced is still delivered.
${CONNECTION_HELP}

Examples:
  $ golem-stream invoke echo count -c '{"name":"me"}' 1000 10 --checkpoint run.ckpt >> out.txt
  $ golem-stream resume run.ckpt >> out.txt
  $ golem-stream resume run.ckpt --url http://other-host:8080 --output json
${EXIT_HELP}`,
    )
    .action(async (file: string, parsed: Record<string, unknown>) => {
      const { runResume } = await import("./commands/resume.js");
      setExitCode(await runResume(file, runOptionsOf(parsed), io));
    });

  const keyring = program
    .command("keyring")
    .description(
      "The signing keys of a serve data directory (keyring.json) or of a --keyring file: list, rotate, activate, drop. Secrets are never printed.",
    )
    .addHelpText(
      "after",
      `
The server reads keyring.json when it starts: restart \`golem-stream serve\` after a change (sessions
survive it). Rotate to sign new tokens with a fresh key; tokens signed before keep verifying as long
as their key stays. Drop an old key only once every invocation started while it was active has
finished and --retention has passed since (a session's stream tokens keep its key for its life).

Examples:
  $ golem-stream keyring list
  $ golem-stream keyring rotate --data-dir ./state
  $ golem-stream keyring drop k-1a2b3c4d --data-dir ./state
  $ golem-stream keyring list --keyring /etc/golem/keyring.json   # a cluster's shared file

A cluster's nodes each read their copy of the --keyring file and restart one at a time, so rotate in
two steps; no call fails on the way:
  $ golem-stream keyring rotate --staged --key-id k-2027 --keyring keyring.json
      copy the file to every node, restart each: all verify k-2027, none signs with it
  $ golem-stream keyring activate k-2027 --keyring keyring.json
      copy the file to every node, restart each: k-2027 signs, the old key verifies
  $ golem-stream keyring drop k-2026 --keyring keyring.json     # later (above); copy, restart each`,
    );
  const dataDirOption = () =>
    new Option("--data-dir <dir>", "the serve data directory (default: $XDG_STATE_HOME/golem-stream or ~/.local/state/golem-stream)");
  const keyringOption = () => new Option("--keyring <file>", "a keyring file (serve --keyring) instead of the data directory's").conflicts("dataDir");
  keyring
    .command("list")
    .description("Show each key id and its role: active (signs new tokens), staged (verifies, signs once activated) or verify-only.")
    .addOption(dataDirOption())
    .addOption(keyringOption())
    .option("--json", "print them as JSON", false)
    .action(async (options: { dataDir?: string; keyring?: string; json: boolean }) => {
      const { runKeyringList } = await import("./commands/keyring.js");
      setExitCode(await runKeyringList(options, io));
    });
  keyring
    .command("rotate")
    .description("Add a fresh active key; the current one becomes verify-only. With --staged, add it staged instead (a cluster's first step).")
    .addOption(dataDirOption())
    .addOption(keyringOption())
    .option("--key-id <id>", "id of the new key (default: a random one)")
    .option("--staged", "add the key staged: it verifies tokens but signs none until `keyring activate`", false)
    .action(async (options: { dataDir?: string; keyring?: string; keyId?: string; staged: boolean }) => {
      const { runKeyringRotate } = await import("./commands/keyring.js");
      setExitCode(await runKeyringRotate(options, io));
    });
  keyring
    .command("activate")
    .description("Make a staged (or verify-only) key the one that signs new tokens; the current one becomes verify-only.")
    .argument("<key-id>", "the key to activate")
    .addOption(dataDirOption())
    .addOption(keyringOption())
    .action(async (keyId: string, options: { dataDir?: string; keyring?: string }) => {
      const { runKeyringActivate } = await import("./commands/keyring.js");
      setExitCode(await runKeyringActivate(keyId, options, io));
    });
  keyring
    .command("drop")
    .description("Remove a verify-only key: tokens it signed stop verifying.")
    .argument("<key-id>", "the key to remove (never the active one)")
    .addOption(dataDirOption())
    .addOption(keyringOption())
    .action(async (keyId: string, options: { dataDir?: string; keyring?: string }) => {
      const { runKeyringDrop } = await import("./commands/keyring.js");
      setExitCode(await runKeyringDrop(keyId, options, io));
    });

  const token = program
    .command("token")
    .description("Operator aids for opaque gai1_ tokens.")
    .addHelpText(
      "after",
      `
Examples:
  $ golem-stream token inspect gai1_AQEC...
  $ jq -r .sessionToken run.ckpt | golem-stream token inspect - --json`,
    );
  token
    .command("inspect")
    .description("Decode a gai1_ token and show its fields. The signature is NOT verified: do not trust the output.")
    .argument("<token>", "a gai1_ session, stream or cursor token, or - to read it from stdin")
    .option("--json", "print the fields as JSON", false)
    .addHelpText(
      "after",
      `
Examples:
  $ golem-stream token inspect gai1_AQEC...
  $ jq -r .sessionToken run.ckpt | golem-stream token inspect - --json`,
    )
    .action(async (value: string, options: { json: boolean }) => {
      const { runTokenInspect } = await import("./commands/token-inspect.js");
      setExitCode(await runTokenInspect(value, options, io));
    });

  program
    .command("conformance")
    .description("Run the protocol's black-box conformance suites: against a server, or against a client through its adapter (needs @golem-stream/conformance).")
    .argument("[args...]", "the suite's arguments, e.g. server --url ws://host:port --token T [--json] [--junit FILE] [--only SECTIONS], or client --adapter CMD [...]")
    .helpOption(false)
    .allowUnknownOption()
    .passThroughOptions()
    .addHelpText(
      "after",
      `
Exit status: 0 every check passed, 5 a check failed, 2 usage.

Examples:
  $ golem-stream conformance server --url ws://127.0.0.1:8080 --token "$GOLEM_STREAM_TOKEN"
  $ golem-stream conformance server --help
  $ golem-stream conformance client --adapter golem-stream-conformance-client-adapter
  $ golem-stream conformance client --help`,
    )
    .action(async (args: string[]) => {
      const { runConformance } = await import("./commands/conformance.js");
      setExitCode(await runConformance(args, io));
    });

  program
    .command("types")
    .description("List the agent types and methods the server offers (its discovery endpoint).")
    .addOption(applicationOption())
    .addOption(environmentOption())
    .option("--json", "print the discovery document as JSON", false)
    .addOption(urlOption())
    .addOption(tokenOption())
    .addHelpText(
      "after",
      `${CONNECTION_HELP}

Examples:
  $ golem-stream types
  $ golem-stream types --application demo --environment default --json`,
    )
    .action(runOnCatalogue<TypesOptions>(async () => (await import("./commands/types.js")).runTypes));

  program
    .command("codegen")
    .description("Write typed contracts (defineAgentType source) for every agent type in the server's catalogue.")
    .addOption(applicationOption())
    .addOption(environmentOption())
    .option("-o, --out <file>", "the TypeScript file to write, replaced atomically (default: stdout; - is stdout)")
    .option("--import-from <module>", "the module the source imports defineAgentType and t from", "@golem-stream/contract")
    .addOption(
      new Option("--timeout <duration>", "how long the discovery request may take")
        .argParser(parseBoundedDuration(1, 3_600_000, "at most 1h"))
        .default(DEFAULT_TIMEOUT_MS, "30s"),
    )
    .addOption(urlOption())
    .addOption(tokenOption())
    .addHelpText(
      "after",
      `${CONNECTION_HELP}

One exported contract per agent type: the name in camelCase (ASCII letters and digits) plus
"Contract", e.g. echo -> echoContract; names that collide get _2, _3 in catalogue order.
Exit status: 0 written, 2 usage or unknown application/environment, 3 refused (401/403),
4 server unreachable or its catalogue invalid, 74 the file could not be written.

Examples:
  $ golem-stream codegen --url http://127.0.0.1:8080 --out src/agents.ts
  $ golem-stream codegen --application shop --environment prod > agents.ts`,
    )
    .action(runOnCatalogue<CodegenOptions>(async () => (await import("./commands/codegen.js")).runCodegen));

  return program;
}

// By the package's own name, not a relative path: the bundled executable runs this from
// dist/chunks/, the library from dist/ (package.json exports "./package.json").
const VERSION = (createRequire(import.meta.url)("@golem-stream/cli/package.json") as { version: string }).version;

/**
 * Runs the CLI and resolves with the process exit code. Never throws: a
 * CliError becomes its message and code, anything else is reported as a bug.
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let exitCode: number = EXIT.success;
  const program = buildProgram(io, (code) => {
    exitCode = code;
  });
  try {
    await program.parseAsync([...argv], { from: "user" });
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version exit 0; every parse failure is a usage error.
      return error.exitCode === 0 ? EXIT.success : EXIT.usage;
    }
    if (error instanceof CliError) {
      report(io, `golem-stream: ${error.message}`);
      return error.exitCode;
    }
    report(io, `golem-stream: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    // The executable is a bundle with source maps, which Node reads only when asked: reading
    // them on every start would cost more than a tenth of `invoke`'s start-up (docs/protocol/cli.md).
    if (!process.sourceMapsEnabled) report(io, "golem-stream: NODE_OPTIONS=--enable-source-maps shows this stack in the TypeScript sources");
    return EXIT_INTERNAL;
  }
}
