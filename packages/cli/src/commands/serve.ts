/**
 * `golem-stream serve`: the embedded session server (the demo catalogue, or
 * the agents of an `--agents` module) until SIGINT/SIGTERM, on the SQLite
 * store in the data directory, or with `--store postgres://...` as one node
 * of a cluster on PostgreSQL.
 *
 * stdout gets what a person or a script needs to call it, starting with one
 * stable line `listening on <http-url>`, and (in cluster mode) what the drain
 * did at the end; the log goes to stderr (pino: JSON lines, readable on a
 * terminal). `/healthz` and `/readyz` are always served, `/metrics` with
 * `--metrics` (docs/operations.md).
 *
 * Stopping: the SQLite server closes at once (no other node could take its
 * clients; invocations still running are run again when it starts again,
 * replayable methods, or failed). A
 * cluster node drains: new connections are refused (overloaded), clients
 * are detached (close 1001) to resume at another node, the invocations this
 * node runs may finish until `--drain-timeout`, the replayable ones still
 * running then are left to other nodes to run again, the rest are failed,
 * and the node leaves the cluster. A second signal exits at once (bin.ts).
 */
import { StartCleanup, createDataDir, exposedDataDir } from "../data-dir.js";
import { dirname, join, resolve } from "node:path";
import type { AgentHost, Catalogue, EmbeddedServer } from "@golem-stream/server";
import { loadAgentsModule } from "../agents-module.js";
import { describeServedAgents, type ServedAgents } from "./serve-agents.js";
import type { Keyring } from "@golem-stream/tokens";
import { resolveServeTokens, staticTokens } from "../bearer-tokens.js";
import { jwtAuthentication } from "../jwt-authentication.js";
import { CliError, EXIT, usageError } from "../exit-codes.js";
import type { ExitCode } from "../exit-codes.js";
import { announce, type CliIo } from "../io/cli-io.js";
import { createLogger, type CliLogger } from "../io/logger.js";
import { logUnhandledRejections } from "./serve-process-errors.js";
import { browserAccess, loadConsole } from "./serve-browser.js";
import { describeKeyRoles, KEYRING_FILE, loadOrCreateKeyringFile, readKeyringFile } from "../keyring-file.js";
import { loadServer } from "../optional-packages.js";
import { defaultDataDir } from "../paths.js";
import type { ServeOptions } from "../options.js";
import { scrub } from "../store-url.js";
import { shellWord } from "../io/shell-word.js";
import { commandName } from "../io/command-name.js";
import { serveLimits } from "./serve-limits.js";
import { credentialWarnings } from "./serve-credential-warnings.js";
import { catalogueLine, drainOutcome, formatMs } from "./serve-texts.js";
import { serveTracing } from "./serve-tracing.js";
import { readServeTls, tlsFilesOf, tlsSecretFiles } from "./serve-tls.js";
import { ServeReloads } from "./serve-reload.js";
import { clusterSettings, connectStore } from "./serve-cluster.js";

export async function runServe(options: ServeOptions, io: CliIo): Promise<ExitCode> {
  const cluster = clusterSettings(options, io);
  const logger = createLogger(io, options.logLevel, undefined, options.logFormat);
  const stopLoggingRejections = logUnhandledRejections(logger);
  const start = new StartCleanup();
  try {
    return await serveWith(options, io, cluster, logger, start);
  } catch (error) {
    await start.undo();
    throw error;
  } finally {
    stopLoggingRejections();
  }
}

async function serveWith(
  options: ServeOptions,
  io: CliIo,
  cluster: ReturnType<typeof clusterSettings>,
  logger: CliLogger,
  start: StartCleanup,
): Promise<ExitCode> {
  const jwt = await jwtAuthentication(options, logger);
  // Checked before anything is created: a setting it cannot honour is a usage error.
  const tracing = await serveTracing(io.env, logger, cluster?.nodeId);
  // From now on a SIGUSR2 is not lost: one sent while serve starts is carried out once it listens.
  const reloads = new ServeReloads(io);
  const tlsFiles = tlsFilesOf(options);
  const tls = tlsFiles === undefined ? undefined : await readServeTls(tlsFiles);
  // An optional peer dependency (it builds SQLite natively): loaded before anything is created.
  const {
    startEmbeddedServer,
    loadOrCreatePrincipalSecret: loadPrincipalSecret,
    PRINCIPAL_SECRET_FILE,
    checkAgents,
    agentsHost,
    agentsFingerprint,
  } = await loadServer();
  // The user's module, loaded and checked before anything is created: a mistake in it leaves nothing behind.
  const served = await loadServedAgents(options, checkAgents, agentsHost, io.signal);
  const dataDir = resolve(options.dataDir ?? defaultDataDir(io.env));
  if (cluster === undefined) start.created(await createDataDir(dataDir));
  const exposed = await exposedDataDir(dataDir);
  const tokenSources = { flags: options.token, env: io.env["GOLEM_STREAM_TOKEN"], file: options.tokenFile };
  const bearers = await resolveServeTokens(tokenSources, dataDir, jwt === undefined);
  const { tokens, generatedFile } = bearers;
  // The SQLite server keeps the server's own default (<data-dir>/keyring.json); a cluster node
  // creates that file atomically, as nodes sharing a data directory may start at once.
  const keyringPath =
    options.keyring !== undefined ? resolve(options.keyring) : cluster === undefined ? undefined : join(dataDir, KEYRING_FILE);
  const weakCredentials = await credentialWarnings({
    flagTokens: options.token,
    tokens: [
      ...options.token.map((token) => ({ token, source: "--token" })),
      ...(io.env["GOLEM_STREAM_TOKEN"] ? [{ token: io.env["GOLEM_STREAM_TOKEN"], source: "GOLEM_STREAM_TOKEN" }] : []),
      ...(options.tokenFile === undefined
        ? []
        : tokens
            .filter((token) => !options.token.includes(token) && token !== io.env["GOLEM_STREAM_TOKEN"])
            .map((token) => ({ token, source: `--token-file ${options.tokenFile}` }))),
    ],
    files: [
      { path: keyringPath ?? join(dataDir, KEYRING_FILE), what: "keyring" },
      ...(options.tokenFile === undefined ? [] : [{ path: resolve(options.tokenFile), what: "token file" }]),
      ...(generatedFile === undefined ? [] : [{ path: generatedFile, what: "generated token file" }]),
      { path: join(dirname(keyringPath ?? join(dataDir, KEYRING_FILE)), PRINCIPAL_SECRET_FILE), what: "principal secret" },
      ...tlsSecretFiles(tlsFiles),
    ],
    strictPermissions: options.strictPermissions === true,
  });
  const pages = options.console ? await loadConsole() : undefined;
  const store = cluster === undefined ? undefined : await connectStore(cluster, logger);
  // Only once the store is reached: a node that cannot join leaves no new keyring behind.
  let keyring: Keyring | undefined;
  let keyringCreated = false;
  if (keyringPath !== undefined) ({ keyring, created: keyringCreated } = await loadOrCreateKeyringFile(keyringPath));
  // Next to the keyring: every node of a cluster needs the same one, as it needs the same keyring.
  const principalSecretDir = dirname(keyringPath ?? join(dataDir, KEYRING_FILE));
  let principalSecret: { readonly secret: Uint8Array; readonly created: boolean };
  try {
    principalSecret = loadPrincipalSecret(principalSecretDir);
  } catch (error) {
    throw usageError(
      `cannot use the principal secret in ${principalSecretDir}: ${error instanceof Error ? error.message : String(error)}`,
      error,
    );
  }
  let server: EmbeddedServer;
  try {
    server = await startEmbeddedServer({
      principalSecret: principalSecret.secret,
      port: options.port,
      host: options.host,
      dataDir,
      ...(served.agents === undefined ? {} : { agents: served.agents, demo: options.demo }),
      tokens: staticTokens(bearers),
      ...(tls === undefined ? {} : { tls: tls.credentials }),
      ...(jwt === undefined ? {} : { authentication: jwt.authentication }),
      logger,
      ...(tracing === undefined ? {} : { tracerProvider: tracing.tracerProvider }),
      healthEndpoints: true,
      ...(options.metrics ? { metrics: { processMetrics: true } } : {}),
      limits: { sessionRetentionMs: options.retention, detachedSessionTimeoutMs: options.detachedTimeout, ...serveLimits(options) },
      ...(keyring === undefined ? {} : { keyring }),
      ...browserAccess(options),
      ...(pages === undefined ? {} : { pages }),
      ...(options.publicHost.length === 0 ? {} : { publicHosts: options.publicHost }),
      // The SQLite store's grace (a cluster's store got its own when it connected).
      ...(store === undefined && options.storeOutageGrace !== undefined ? { storeOutageGraceMs: options.storeOutageGrace } : {}),
      ...(store === undefined || cluster === undefined
        ? {}
        : { store, cluster: { leaseTtlMs: cluster.leaseTtlMs, allowCatalogueDrift: options.allowCatalogueDrift === true } }),
    });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === "EADDRINUSE")
      throw new CliError(EXIT.usage, `${options.host}:${options.port} is already in use; choose another --port`, { cause: error });
    if (code === "EACCES") throw new CliError(EXIT.usage, `not allowed to listen on ${options.host}:${options.port}`, { cause: error });
    if (error instanceof Error && error.name === "CatalogueDriftError")
      throw new CliError(EXIT.agentsInvalid, `cannot join the cluster: ${error.message}`);
    const message = error instanceof Error ? error.message : String(error);
    throw new CliError(EXIT.usage, `cannot start the server: ${scrub(message, cluster?.store.password)}`);
  }
  start.listening();
  const url = server.httpUrl;
  const command = commandName(io.env, io.executable);
  const tokenHint =
    generatedFile !== undefined
      ? `$(cat ${shellWord(generatedFile)})`
      : tokens.length === 0
        ? "<a JWT of the issuer>"
        : "<one of the tokens you gave>";
  // Without --keyring the SQLite server keeps its own in the data directory: read back, it names the signing key too.
  const shownKeyring = keyring ?? (await readKeyringFile(join(dataDir, KEYRING_FILE)));
  const keyRoles = shownKeyring === undefined ? [] : [describeKeyRoles(shownKeyring)];
  const where =
    cluster === undefined
      ? [`data directory ${dataDir}`, ...(keyringPath === undefined ? [] : [`keyring ${keyringPath}`]), ...keyRoles]
      : [
          `store ${cluster.store.shown} (cluster node ${cluster.nodeId}, lease ${formatMs(cluster.leaseTtlMs)}, drain timeout ${formatMs(cluster.drainTimeoutMs)})`,
          `keyring ${keyringPath ?? ""} (every node of the cluster needs this same keyring and the same tokens)`,
          catalogueLine(
            agentsFingerprint(served.agents === undefined ? {} : { agents: served.agents, demo: options.demo }),
            options.allowCatalogueDrift === true,
          ),
          ...keyRoles,
          // A missing or mistyped --keyring would otherwise go unnoticed until a resume at another node fails.
          ...(keyringCreated
            ? [
                `NEW keyring created just now at ${keyringPath ?? ""}: copy this file to every other node; a node with another keyring refuses this node's tokens`,
              ]
            : []),
          ...(principalSecret.created
            ? [
                `NEW principal secret created just now at ${join(principalSecretDir, PRINCIPAL_SECRET_FILE)}: copy it next to the keyring of every other node; a node with another one names callers differently, and they cannot resume there`,
              ]
            : []),
        ];
  if (jwt !== undefined) where.push(jwt.description);
  if (tls !== undefined) where.push(tls.description);
  if (tracing !== undefined) where.push(tracing.description);
  if (exposed !== undefined) where.push(`WARNING: ${exposed}`);
  for (const warning of weakCredentials) where.push(`WARNING: ${warning}`);
  where.push(...served.lines);
  if (options.console) where.push(`web console ${url}/${served.consoleQuery} (sign in with a token)`);
  where.push(`health ${url}/healthz, readiness ${url}/readyz${options.metrics ? `, metrics ${url}/metrics` : ""}`);
  announce(
    io,
    [
      `listening on ${url}`,
      ...where,
      ...(options.allowOrigin.length === 0
        ? []
        : [`web pages of ${options.allowOrigin.join(", ")} may open sessions (bearer token in a subprotocol entry)`]),
      "",
      "Call it from another terminal:",
      `  export GOLEM_STREAM_URL=${url} GOLEM_STREAM_TOKEN=${tokenHint}`,
      ...served.calls(command).map((call) => `  ${call}`),
      "",
      cluster === undefined
        ? "Stop with Ctrl-C."
        : "Stop with Ctrl-C or SIGTERM: the node drains first (a second signal stops it at once).",
      "",
    ].join("\n"),
  );
  if (exposed !== undefined) logger.warn("data directory readable by others", { event: "data-dir.exposed", dataDir });
  for (const warning of weakCredentials) logger.warn(warning, { event: "credentials.weak" });
  if (cluster !== undefined && keyringCreated) logger.warn("created a new keyring", { event: "keyring.created", path: keyringPath });
  if (options.agents !== undefined) logger.info("agents loaded", { event: "agents.loaded", file: options.agents, demo: served.demo });
  logger.info("server started", {
    event: "server.start",
    ...(cluster === undefined ? { url, dataDir } : { url, store: cluster.store.shown, node: cluster.nodeId }),
  });
  const strictPermissions = options.strictPermissions === true;
  const keyringInUse = shownKeyring === undefined ? undefined : { path: keyringPath ?? join(dataDir, KEYRING_FILE), inUse: shownKeyring };
  reloads.start(
    server,
    { tokens: tokenSources, dataDir, generateToken: jwt === undefined, tls: tlsFiles, keyring: keyringInUse, strictPermissions },
    logger,
  );
  await new Promise<void>((resolveStop) => {
    if (io.signal.aborted) resolveStop();
    io.signal.addEventListener("abort", () => resolveStop(), { once: true });
  });
  await reloads.stop();
  const reason = String(io.signal.reason ?? "signal");
  if (cluster === undefined) {
    logger.info("stopping", { event: "server.stopping", reason });
    await server.close();
    await tracing?.shutdown();
    logger.info("stopped", { event: "server.stop" });
    return EXIT.success;
  }
  announce(
    io,
    `draining (${reason}): refusing new connections, clients detached to resume at other nodes; ` +
      `this node's invocations may run for up to ${formatMs(cluster.drainTimeoutMs)}\n`,
  );
  logger.info("draining", { event: "server.draining", reason, timeoutMs: cluster.drainTimeoutMs });
  const started = Date.now();
  const { failed, handedOver } = await server.drain(cluster.drainTimeoutMs);
  await tracing?.shutdown();
  announce(io, `drained in ${formatMs(Date.now() - started)}: ${drainOutcome(failed, handedOver)}; left the cluster\n`);
  logger.info("stopped", { event: "server.stop", failed, handedOver });
  return EXIT.success;
}

/**
 * What this serve runs: the demo, or the `--agents` module's default export
 * (with the demo beside it on `--demo`), and what the banner says of it. A
 * module that also serves the demo's environment is refused here, with its
 * other mistakes, before anything is created.
 */
async function loadServedAgents(
  options: ServeOptions,
  checkAgents: typeof import("@golem-stream/server").checkAgents,
  agentsHost: typeof import("@golem-stream/server").agentsHost,
  signal: AbortSignal,
): Promise<ServedAgents & { readonly agents?: Catalogue | AgentHost }> {
  if (options.agents === undefined) return describeServedAgents(undefined, undefined, true);
  const agents = await loadAgentsModule(options.agents, process.cwd(), checkAgents, signal);
  try {
    // Only to find a clash with the demo now; startEmbeddedServer builds the host it serves.
    agentsHost({ agents, demo: options.demo });
  } catch (error) {
    throw new CliError(EXIT.agentsInvalid, `--agents ${options.agents}: ${error instanceof Error ? error.message : String(error)}`);
  }
  return { ...describeServedAgents(options.agents, agents, options.demo), agents };
}
