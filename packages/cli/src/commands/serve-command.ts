/**
 * The `serve` command: its options, defaults, help and examples. The runner
 * (serve.ts, which loads the server) is imported only when the command runs,
 * so `--help` works even where the server's native SQLite module cannot load.
 */
import { Option, type Command } from "commander";
import type { CommandContext } from "./command-context.js";
import { jwtFlags } from "../jwt-flags.js";
import {
  collect,
  collectOrigin,
  parseBoundedDuration,
  parseByteSize,
  parseCount,
  parseIntervalMs,
  parseOutageGrace,
  parsePort,
  parseRetention,
  parseTimeoutMs,
} from "../option-parsers.js";
import {
  DEFAULT_DETACHED_TIMEOUT_MS,
  DEFAULT_DRAIN_TIMEOUT_MS,
  DEFAULT_HOST,
  DEFAULT_LEASE_TTL_MS,
  DEFAULT_PORT,
  DEFAULT_RETENTION_MS,
  LOG_COMPRESSIONS,
  LOG_FORMATS,
  LOG_LEVELS,
  type ServeOptions,
} from "../options.js";

export function addServeCommand(program: Command, { io, setExitCode }: CommandContext): void {
  const jwt = jwtFlags();
  program
    .command("serve")
    .description(
      "Start the session server with the embedded SQLite store, the demo catalogue (or your own agents, --agents) and a signing keyring kept in the data directory.",
    )
    .option(
      "--config <file>",
      'these options from a JSON object, e.g. {"port": 8443, "token-file": "tokens", "metrics": true}; a flag given here wins (see Config below)',
    )
    .addOption(new Option("--port <port>", "TCP port; 0 picks a free one").argParser(parsePort).default(DEFAULT_PORT))
    .option("--host <host>", "interface to listen on", DEFAULT_HOST)
    .addOption(new Option("--token <token>", "accept this static bearer token (repeatable)").argParser(collect).default([]))
    .option(
      "--token-file <file>",
      "accept every token in this file (one per line, # comments): each its own account, or ACCOUNT: TOKEN to group tokens into one account that shares idempotency keys",
    )
    .option("--tls-cert <file>", "serve HTTPS and wss:// with this certificate (PEM, followed by its chain); needs --tls-key")
    .option("--tls-key <file>", "the certificate's private key (PEM); needs --tls-cert")
    .option("--tls-key-passphrase-file <file>", "an encrypted --tls-key's passphrase: this file's first line (owner-only, like the key)")
    .option(
      "--agents <file>",
      "serve the agents of this ES module (its default export: defineCatalogue({...}) or an AgentHost) instead of the demo; see Agents below",
    )
    .option("--demo", "with --agents: serve the demo catalogue (application demo) beside them", false)
    .option(
      "--data-dir <dir>",
      "store, keyring and generated token live here (default: $XDG_STATE_HOME/golem-stream or ~/.local/state/golem-stream)",
    )
    .addOption(new Option("--log-level <level>", "how much to log on stderr").choices(LOG_LEVELS).default("info"))
    .addOption(
      new Option("--log-format <format>", "log lines as JSON, or readable (auto: readable on a terminal)")
        .choices(LOG_FORMATS)
        .default("auto"),
    )
    .option(
      "--log-file <file>",
      "append the log to this file instead of stderr (for serve in the background of a terminal you keep typing in)",
    )
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
        .argParser(parseBoundedDuration(1_000, 2 ** 31 - 1, "from 1s to 24d: 90s, 30m, 24h, 7d"))
        .default(DEFAULT_DETACHED_TIMEOUT_MS, "24h"),
    )
    .option(
      "--keyring <file>",
      "the signing keyring, created on first start (default: <data-dir>/keyring.json); a cluster's nodes share one",
    )
    .addOption(
      new Option(
        "--allow-origin <origin>",
        "let web pages of this origin open sessions, with the bearer token in a subprotocol entry (repeatable; see Browsers below)",
      )
        .argParser(collectOrigin)
        .default([]),
    )
    .option("--no-console", "do not serve the web console at / (docs/console.md)")
    .addOption(
      new Option(
        "--store-outage-grace <duration>",
        "how long work waits for a store that is unavailable (PostgreSQL restarting, unreachable; SQLite busy or an I/O error) before the invocations waiting on a write fail; 0s: at once (default: 30s)",
      ).argParser(parseOutageGrace),
    )
    .option(
      "--store <url>",
      "cluster mode: keep sessions in PostgreSQL, postgres://USER@HOST:PORT/DATABASE (default: $GOLEM_STREAM_STORE, else SQLite in the data directory)",
    )
    .option("--node-id <id>", "with --store: this node's id in the cluster (default: <hostname>-<random>)")
    .addOption(
      new Option(
        "--drain-timeout <duration>",
        "with --store: on SIGTERM/SIGINT, how long this node's invocations may run before replayable ones are left to other nodes to run again and the rest are failed (default: 30s)",
      ).argParser(parseBoundedDuration(1, 86_400_000, "at most 24h: 30s, 5m, 1h")),
    )
    .addOption(
      new Option("--lease-ttl <duration>", "with --store: how long this node's lease lasts without a heartbeat (default: 10s)").argParser(
        parseBoundedDuration(100, 86_400_000, "from 100ms to 24h: 500ms, 10s, 1m"),
      ),
    )
    .addOption(
      new Option(
        "--pg-connect-timeout-ms <ms>",
        "with --store: how long opening a PostgreSQL connection (or waiting for a free pooled one) may take; 0: forever (default: 10000)",
      ).argParser(parseTimeoutMs),
    )
    .addOption(
      new Option(
        "--pg-statement-timeout-ms <ms>",
        "with --store: PostgreSQL cancels a statement that runs longer (statement_timeout); 0: not sent (default: 30000)",
      ).argParser(parseTimeoutMs),
    )
    .addOption(
      new Option(
        "--pg-query-timeout-ms <ms>",
        "with --store: how long to wait for any answer to a query before closing its connection; keep it above the statement timeout; 0: none (default: 45000)",
      ).argParser(parseTimeoutMs),
    )
    .addOption(
      new Option(
        "--pg-keepalive-initial-delay-ms <ms>",
        "with --store: idle time before TCP keepalive probes on every PostgreSQL connection; 0: the system's delay (default: 10000)",
      ).argParser(parseTimeoutMs),
    )
    .option(
      "--allow-catalogue-drift",
      "with --store: serve even when other live nodes serve another catalogue (during a rolling upgrade of --agents; logged and shown in /readyz)",
    )
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
      new Option(
        "--auth-failure-limit <n>",
        "failed authentications one client address may have per minute before its requests are refused (503) for the rest of that minute; 0: no throttle, e.g. behind a proxy (default: 20)",
      ).argParser(parseCount(0, 1_000_000)),
    )
    .addOption(
      new Option(
        "--first-message-timeout <duration>",
        "how long a session connection may wait before its first message, then it is closed (default: 30s)",
      ).argParser(parseBoundedDuration(1, 2 ** 31 - 1, "from 1ms to 24d: 500ms, 30s, 5m")),
    )
    .addOption(
      new Option(
        "--http-request-timeout <duration>",
        "how long a client may take to send a whole HTTP request (an upgrade's head, a catalogue request), then 408 and the connection closes (default: 30s)",
      ).argParser(parseBoundedDuration(1, 2 ** 31 - 1, "from 1ms to 24d: 500ms, 30s, 5m")),
    )
    .addOption(
      new Option(
        "--ping-interval <duration>",
        "the server pings every session connection this often and drops one that answers neither of two pings; 0: no pings (default: 30s)",
      ).argParser(parseIntervalMs),
    )
    .addOption(
      new Option(
        "--max-connections <n>",
        "open session connections of all callers together; more are refused with 503 overloaded (default: 10000)",
      ).argParser(parseCount(1, 10_000_000)),
    )
    .addOption(
      new Option(
        "--max-http-connections <n>",
        "connections that are not (yet) session connections: HTTP requests, idle keep-alive, upgrades being authenticated; more are refused with 503 overloaded, but for /healthz and /metrics (default: 1024)",
      ).argParser(parseCount(1, 10_000_000)),
    )
    .addOption(
      new Option(
        "--max-connections-per-principal <n>",
        "open session connections one token (principal) may have; more are refused with 503 overloaded (default: 1000)",
      ).argParser(parseCount(1, 1_000_000)),
    )
    .addOption(
      new Option(
        "--max-sessions-per-principal <n>",
        "invocations one token (principal) may run at once; more starts are refused with overloaded, retryable (default: 500)",
      ).argParser(parseCount(1, 1_000_000)),
    )
    .addOption(
      new Option(
        "--max-stored-bytes-per-principal <size>",
        "bytes one token (principal) may keep in the store until their retention ends: input, output, and its sessions' parameters, results and attempts (512MiB, 16GiB); at the bound starts and resumes are refused and an item or result past it fails its invocation, both limit-exceeded (default: 16GiB)",
      ).argParser(parseByteSize),
    )
    .addOption(
      new Option(
        "--public-host <name>",
        "a DNS name clients reach this server by (repeatable; .example.com for every name under it, * for any): the console, /metrics, /healthz, /readyz and the catalogue answer only a Host of localhost, an IP address or one of these",
      )
        .argParser(collect)
        .default([]),
    )
    .option(
      "--strict-permissions",
      "refuse to start (or a SIGUSR2 reload) when the keyring, a token file or the TLS key is readable by group or others (default: a warning)",
    )
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

  Tokens: every --token, $GOLEM_STREAM_TOKEN and every line of --token-file are accepted. Each
  token is its own account (idempotency keys are per account); a token file line ACCOUNT: TOKEN
  puts the token in that account with the other tokens of it (docs/operations.md, Authentication).
  With none of them (and no --jwt-jwks), a random token is created on first start and kept in
  <data-dir>/bearer-token; a cluster node (--store) refuses to start instead (exit 2). With --jwt-jwks, bearer JWTs are accepted too (static tokens only if given):
  signed RS256, ES256 or EdDSA by a key of the JWKS, with the --jwt-issuer and --jwt-audience, not
  expired. The caller is the sub claim, its account the iss claim (--jwt-principal-claim,
  --jwt-account-claim). A refused token gets 401 unauthenticated; a caller its
  --jwt-authorization-claim does not grant gets forbidden. Details: docs/operations.md, Authentication.
  The server stops cleanly on SIGINT, SIGTERM or SIGHUP; sessions survive a restart on the same data directory.
  TLS: --tls-cert and --tls-key serve https:// and wss:// (clients must trust the issuer: a private CA's
  certificate in NODE_EXTRA_CA_CERTS for the CLI); an encrypted key takes --tls-key-passphrase-file. SIGUSR2
  reads the certificate, the key (and its passphrase), --token-file and the keyring again (golem-stream
  keyring rotate, then SIGUSR2: no restart): new connections get them, open sessions run on; a file that
  cannot be used changes nothing and is logged (server.reload-failed). SIGHUP stays a stop (a closed
  terminal sends it); systemd: ExecReload=/bin/kill -USR2 $MAINPID.
  Config: --config FILE reads these options from a JSON object whose members are the long options
  without their dashes: {"host": "0.0.0.0", "port": 8443, "tls-cert": "fullchain.pem", "tls-key":
  "key.pem", "token-file": "tokens", "metrics": true, "allow-origin": ["https://app.example"]}. A switch
  is true or false ("console": false for --no-console), a repeatable option a list; relative paths are
  relative to the file's directory. A flag on the command line wins, then $GOLEM_STREAM_STORE, then the
  file. Tokens go in a token file, not here. An unknown member or a bad value stops serve (exit 2).
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
  --help), rolling each out to every node. The password may be in the URL, in $PGPASSWORD or in ~/.pgpass ($PGPASSFILE); it is never printed. On SIGTERM or SIGINT a node
  drains: it refuses new connections (overloaded), detaches its clients (they resume at another node),
  lets the invocations it runs finish until --drain-timeout, leaves the replayable ones still running
  then to other nodes to run again, fails the rest, leaves the cluster and exits 0. A second signal
  stops it at once. Without --store (SQLite), a stop is immediate, as there is no other node to
  resume at: invocations still running are run again when it starts again (replayable methods) or
  failed.
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
  $ golem-stream serve --host 0.0.0.0 --tls-cert /etc/golem/fullchain.pem --tls-key /etc/golem/key.pem --token-file /etc/golem/tokens
  $ golem-stream serve --jwt-jwks https://login.example.com/.well-known/jwks.json \\
      --jwt-issuer https://login.example.com/ --jwt-audience golem-stream --jwt-authorization-claim scope
  $ PGPASSWORD=... golem-stream serve --store postgres://golem@db:5432/golem --keyring /etc/golem/keyring.json \\
      --token-file /etc/golem/tokens --node-id node-a --drain-timeout 2m`,
    )
    .hook("preAction", async (command) => {
      const file = (command.opts() as { config?: string }).config;
      if (file !== undefined) await (await import("./serve-config.js")).applyConfigFile(command, file, io.env);
    })
    .action(async (options: ServeOptions & { readonly logFile?: string; readonly config?: string }, command: Command) => {
      const [{ runServe }, { withLogFile }] = await Promise.all([import("./serve.js"), import("../io/log-file.js")]);
      try {
        setExitCode(await withLogFile(options.logFile, io, (served) => runServe(options, served)));
      } catch (error) {
        // A refusal of a value the config file gave is said as the file's, as its own refusals are.
        if (options.config === undefined) throw error;
        throw (await import("./serve-config.js")).namedByConfig(error, command, options.config);
      }
    });
}
