/**
 * `createSessionServer`: the session endpoint and the discovery endpoint on
 * a Node HTTP server, with `ws` in no-server mode so the same handlers can
 * be mounted on a user's `http.Server` (`attach`) or on one of our own
 * (`listen`). Per-message compression is never negotiated; `maxPayload`
 * bounds every message before `ws` buffers it.
 */
import { SYSTEM_TIMERS, type Timers } from "./timers.js";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { Socket, type AddressInfo } from "node:net";
import { networkInterfaces } from "node:os";
import type { Duplex } from "node:stream";
import { WebSocketServer, type RawData, type WebSocket } from "ws";
import { BROWSER_REFUSAL_CLOSE_BASE, EnvelopePool, ProtocolError, SESSION_PATH, SUBPROTOCOL, httpStatusFor } from "@golem-stream/wire";
import type { Keyring } from "@golem-stream/tokens";
import type { AgentHost } from "./agent-host.js";
import { Connection } from "./transport/connection.js";
import { DISCOVERY_PATH, handleDiscovery } from "./transport/discovery.js";
import { BrowserAccess, listeningOrigins, type BrowserOptions } from "./transport/browser-access.js";
import { authenticate, checkUpgradeRequest, rejectUpgrade, sendHttpError } from "./transport/http-handshake.js";
import type { RuntimeDeps } from "./sessions/runtime-deps.js";
import { resolveLimits, silentLogger, type Authenticator, type Authorizer, type Logger, type ServerLimits } from "./options.js";
import { SessionRuntime } from "./sessions/session-runtime.js";
import { isClusterStore, type ClusterSessionStore } from "./store/cluster-store.js";
import type { SessionStore } from "./store/session-store.js";
import { TokenService } from "./admission/token-service.js";
import { DEFAULT_AUDIENCE, DEFAULT_ISSUER, checkIssuerAndAudience } from "./admission/token-budget.js";
import { WsTransport } from "./transport/ws-transport.js";
import type { TracerProvider } from "@opentelemetry/api";
import type { Registry } from "prom-client";
import { handleOperationsRequest, isOperationsPath, type OperationsEndpoints, type Readiness } from "./observability/http-endpoints.js";
import { HostCheck } from "./transport/host-check.js";
import { CatalogueCheck, CatalogueDriftError } from "./cluster/catalogue-check.js";
import { StoreAvailability } from "./cluster/store-availability.js";
import { logObserver } from "./observability/log-observer.js";
import { PrometheusMetrics, type MetricsOptions } from "./observability/prometheus-metrics.js";
import { composeObservers, type PartialObserver, type ServerObserver } from "./observability/server-observer.js";
import { tracingObserver } from "./observability/tracing-observer.js";
import { NodeBudget } from "./invocation/node-budget.js";
import { AuthThrottle } from "./transport/auth-throttle.js";
import { closeThenDrop, watchLiveness } from "./transport/liveness.js";
import { PrincipalSlots } from "./admission/principal-slots.js";
import { StoredBytesTable } from "./admission/stored-bytes.js";

export interface SessionServerOptions {
  readonly store: SessionStore;
  readonly host: AgentHost;
  /** Signs and verifies tokens; replace it with `rotateKeyring`. */
  readonly keyring: Keyring;
  readonly authenticator: Authenticator;
  /** Default: every authenticated caller may do everything. */
  readonly authorizer?: Authorizer;
  /**
   * Token field 1 (default `golem-stream`). The issuer and audience share what
   * a session token leaves next to the caller's identity: 4275 UTF-8 bytes less
   * `limits.maxCallerIdentityBytes` (2227 at the default); longer is a `RangeError`.
   */
  readonly issuer?: string;
  /** Token field 2 (default `golem-stream-session`). */
  readonly audience?: string;
  readonly limits?: Partial<ServerLimits>;
  readonly logger?: Logger;
  /** Clock in ms since the epoch (tests). */
  readonly now?: () => number;
  /**
   * The timers of the server's time-dependent behaviour (the detached-session
   * timeout, the first-message deadline, pings, dropping a socket that does
   * not answer its close). Default: Node's, unref'd. Tests pass `ManualTimers`
   * (`@golem-stream/server/testing`) and move time themselves.
   */
  readonly timers?: Timers;
  /**
   * Observers of your own, called beside the metrics, log lines and spans
   * the server keeps itself (observability/server-observer.ts: every method
   * is optional, and receives only public, bounded facts). They run on the
   * server's hot paths: keep them cheap and never throw.
   */
  readonly observers?: readonly PartialObserver[];
  /** Cluster mode (the store is a `ClusterSessionStore`): node leases (docs/cluster.md). */
  readonly cluster?: ClusterOptions;
  /**
   * Prometheus metrics (prom-client), served at `/metrics` on the server's
   * HTTP listener and readable from `SessionServer.metrics`. Default off.
   * Metric names and labels: docs/operations.md.
   */
  readonly metrics?: boolean | MetricsOptions;
  /** `/healthz` and `/readyz` on the server's HTTP listener, without a bearer token (default off). */
  readonly healthEndpoints?: boolean;
  /** How long `/readyz` waits for the store before answering not ready (default 2000 ms). */
  readonly readinessTimeoutMs?: number;
  /**
   * Where attachment spans go (default: the global provider of
   * `@opentelemetry/api`, a no-op unless the application registered an SDK).
   */
  readonly tracerProvider?: TracerProvider;
  /**
   * The browser extension (docs/protocol/browser.md), off by default: accept
   * the bearer token in a `golem-stream.bearer.<base64url>` subprotocol entry
   * from pages of these origins, refuse every request whose `Origin` is not
   * one of them, and answer CORS for the catalogue to them.
   */
  readonly browsers?: BrowserOptions;
  /**
   * Every other HTTP request on the server's own listener (`listen`) goes
   * here first: resolve true when it was answered, false for the server's
   * 404. The CLI serves the web console (`@golem-stream/console`) with it.
   * Not called for the session, discovery and operations endpoints.
   */
  readonly pages?: PageHandler;
  /**
   * The DNS names the server is reached by, for the Host check of its plain
   * HTTP endpoints (`/metrics`, `/healthz`, `/readyz`, the catalogue and
   * `pages`) against DNS rebinding: they answer a Host of `localhost`, an IP
   * address, or one of these (`name`, `.example.com` for every name under
   * it, `*` for any), and refuse others with 403 `forbidden`.
   * Default: none (transport/host-check.ts).
   */
  readonly publicHosts?: readonly string[];
}

/** Answers a request it knows (resolving true) or leaves it alone (false). */
export type PageHandler = (request: IncomingMessage, response: ServerResponse) => boolean | Promise<boolean>;

export interface ClusterOptions {
  /**
   * How long a node's lease lasts without a heartbeat (default 10 s). A node
   * heartbeats every third of it; when an owner's lease lapses, another node
   * claims its running invocations within half of it and fails them, once
   * that node has itself renewed its lease without a break for a full TTL
   * (so an outage of the store that lapsed every lease claims nothing:
   * docs/cluster.md, *Store outages*).
   */
  readonly leaseTtlMs?: number;
  /**
   * The fingerprint of the catalogue this node serves (`catalogueFingerprint`;
   * `startEmbeddedServer` computes it). Given, the node records it beside its
   * lease and refuses to start (`listen` rejects with `CatalogueDriftError`)
   * when a live node serves another. Default: none, no check.
   */
  readonly catalogue?: string;
  /** Serve anyway when live nodes serve another catalogue (a rolling upgrade): logged, and in `/readyz`'s details. Default false. */
  readonly allowCatalogueDrift?: boolean;
}

const DEFAULT_LEASE_TTL_MS = 10_000;

export interface ListeningAddress {
  readonly host: string;
  readonly port: number;
  /** `ws://host:port` */
  readonly url: string;
  /** `http://host:port` */
  readonly httpUrl: string;
}

export interface SessionServer {
  /** Listens on an HTTP server of its own (port 0 picks a free port). */
  listen(port?: number, host?: string): Promise<ListeningAddress>;
  /** Serves the session and discovery endpoints on an existing server; other paths are left alone. */
  attach(server: Server): void;
  /** New tokens use the new keyring's active key; its verify-only keys keep old tokens valid. */
  rotateKeyring(keyring: Keyring): void;
  /**
   * Stops every invocation (they fail on the next start) and closes every
   * connection with 1001 (going away), dropping those that do not answer
   * within a second; messages arriving meanwhile are not taken.
   */
  close(): Promise<void>;
  /**
   * Graceful stop (SIGTERM): refuses new connections with `overloaded`
   * (a load balancer retries elsewhere), detaches every client (close 1001;
   * clients resume on another node), lets the invocations this process runs
   * finish until `timeoutMs` has passed, fails the rest (`invocation-failed`),
   * leaves the cluster and closes. Resolves with how many were failed.
   */
  drain(timeoutMs: number): Promise<number>;
  /** Resolves when sessions left running by an earlier process have been finished. */
  readonly ready: Promise<void>;
  /** The metrics registry, when `metrics` is on. */
  readonly metrics: Registry | undefined;
  /** What `/readyz` answers: the store is reachable, recovery has run, and the server is not draining or closing. */
  readiness(): Promise<Readiness>;
  /**
   * The node's byte budget (`limits.maxQueuedBytesPerNode`): the bytes held now
   * (received messages not yet decoded, and what the sessions' byte permits hold),
   * the capacity, and the highest held since the previous call.
   */
  bufferedBytes(): BufferedBytes;
}

export interface BufferedBytes {
  readonly held: number;
  readonly capacity: number;
  readonly peak: number;
}

const allowAll: Authorizer = () => true;

export function createSessionServer(options: SessionServerOptions): SessionServer {
  checkOptions(options);
  return new NodeSessionServer(options);
}

/** Configuration mistakes fail at construction, with the option's name. */
function checkOptions(options: SessionServerOptions): void {
  if (typeof options !== "object" || options === null) throw new TypeError("createSessionServer needs an options object");
  const required: [keyof SessionServerOptions, string][] = [
    ["store", "object"],
    ["host", "object"],
    ["keyring", "object"],
    ["authenticator", "function"],
  ];
  for (const [name, type] of required) {
    if (typeof options[name] !== type || options[name] === null) throw new TypeError(`options.${name} must be a ${type === "function" ? "function" : "non-null object"}`);
  }
  for (const name of ["authorizer", "now", "pages"] as const) {
    if (options[name] !== undefined && typeof options[name] !== "function") throw new TypeError(`options.${name} must be a function`);
  }
  const timeout = options.readinessTimeoutMs;
  if (timeout !== undefined && (!Number.isSafeInteger(timeout) || timeout <= 0)) throw new TypeError("options.readinessTimeoutMs must be a positive integer (ms)");
  for (const name of ["issuer", "audience"] as const) {
    const value = options[name];
    if (value !== undefined && (typeof value !== "string" || value.length === 0)) throw new TypeError(`options.${name} must be a non-empty string`);
  }
}

const DEFAULT_READINESS_TIMEOUT_MS = 2000;
/** How long one store check answers `/readyz` (and `readiness()`). */
const READINESS_CACHE_MS = 1000;
/** Read by readiness when the store has no `ping`: no session has this id. */
const NO_SESSION = "00000000-0000-0000-0000-000000000000";

class NodeSessionServer implements SessionServer {
  readonly ready: Promise<void>;
  readonly metrics: Registry | undefined;
  readonly #observer: ServerObserver;
  readonly #endpoints: OperationsEndpoints;
  #started = false;
  readonly #options: SessionServerOptions;
  readonly #limits: ServerLimits;
  /** Memory of large binary output envelopes, reused across this server's connections. */
  readonly #envelopes: EnvelopePool;
  readonly #nodeBudget: NodeBudget;
  readonly #logger: Logger;
  readonly #authorizer: Authorizer;
  readonly #tokens: TokenService;
  readonly #runtime: SessionRuntime;
  readonly #wss: WebSocketServer;
  readonly #browsers: BrowserAccess | undefined;
  /** Authenticated session sockets: what `limits.maxConnections` counts (a socket refused by a close is not one). */
  readonly #sessions = new Set<WebSocket>();
  readonly #authThrottle: AuthThrottle;
  readonly #timers: Timers;
  readonly #hosts: HostCheck;
  /** The last store check of `/readyz` and when it started (see `#storeReachable`). */
  #storeCheck: { readonly at: number; readonly reachable: Promise<boolean> } | undefined;
  /** Payload bytes each principal keeps in the store (`limits.maxStoredBytesPerPrincipal`). */
  readonly #storedBytes: StoredBytesTable;
  /** Session sockets per principal (`limits.maxConnectionsPerPrincipal`). */
  readonly #connectionsPerPrincipal: PrincipalSlots;
  readonly #attached: {
    server: Server;
    upgrade: (request: IncomingMessage, socket: Duplex, head: Buffer) => void;
    request: (request: IncomingMessage, response: ServerResponse) => void;
  }[] = [];
  #owned: Server | undefined;
  #sweeper: NodeJS.Timeout | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #orphanClaims: NodeJS.Timeout | undefined;
  /** Whether this node may claim other nodes' sessions yet (cluster mode). */
  readonly #availability: StoreAvailability;
  readonly #catalogueCheck: CatalogueCheck | undefined;
  /** Rejects with `CatalogueDriftError` when this node may not join: `listen` fails with it. */
  readonly #catalogueVerified: Promise<void>;
  #closing = false;
  #draining = false;

  constructor(options: SessionServerOptions) {
    this.#options = options;
    this.#limits = resolveLimits(options.limits);
    this.#envelopes = new EnvelopePool(this.#limits.maxPooledSendBytes);
    const issuer = options.issuer ?? DEFAULT_ISSUER;
    const audience = options.audience ?? DEFAULT_AUDIENCE;
    checkIssuerAndAudience(issuer, audience, this.#limits.maxCallerIdentityBytes);
    this.#nodeBudget = new NodeBudget(this.#limits.maxQueuedBytesPerNode);
    this.#logger = options.logger ?? silentLogger;
    this.#authorizer = options.authorizer ?? allowAll;
    this.#browsers = options.browsers === undefined ? undefined : new BrowserAccess(options.browsers, this.#logger);
    this.#hosts = new HostCheck(options.publicHosts);
    this.#timers = options.timers ?? SYSTEM_TIMERS;
    const now = options.now ?? Date.now;
    this.#authThrottle = new AuthThrottle(
      { maxFailures: this.#limits.authFailuresPerAddress, windowMs: this.#limits.authFailureWindowMs, maxAddresses: this.#limits.maxAuthFailureAddresses },
      now,
    );
    this.#tokens = new TokenService(
      options.keyring,
      { issuer, audience },
      now,
    );
    const metrics = options.metrics === undefined || options.metrics === false ? undefined : new PrometheusMetrics(options.metrics === true ? {} : options.metrics);
    this.metrics = metrics?.registry;
    const observers: PartialObserver[] = [tracingObserver(options.tracerProvider)];
    if (options.logger !== undefined) observers.push(logObserver(options.logger));
    if (metrics !== undefined) observers.push(metrics.observer);
    observers.push(...(options.observers ?? []));
    metrics?.watchNodeBudget(() => this.#nodeBudget);
    this.#observer = composeObservers(observers);
    this.#connectionsPerPrincipal = new PrincipalSlots(this.#limits.maxConnectionsPerPrincipal, "connections", (limit) => this.#observer.principalLimitReached(limit));
    const observer = this.#observer;
    if (metrics !== undefined) options.store.observeCommits?.((seconds, writes) => observer.storeCommitted(seconds, writes));
    options.store.observeOutages?.((event) => observer.storeOutage(event));
    this.#endpoints = { registry: this.metrics, health: options.healthEndpoints === true, readiness: () => this.readiness() };
    this.#storedBytes = new StoredBytesTable(this.#limits.maxStoredBytesPerPrincipal, () => observer.principalLimitReached("stored-bytes"));
    const deps: RuntimeDeps = {
      store: options.store,
      cluster: isClusterStore(options.store) ? options.store : undefined,
      host: options.host,
      tokens: this.#tokens,
      limits: this.#limits,
      logger: this.#logger,
      observer,
      now,
      timers: this.#timers,
      nodeBudget: this.#nodeBudget,
      storedBytes: this.#storedBytes,
    };
    this.#runtime = new SessionRuntime(deps, this.#authorizer);
    this.#wss = new WebSocketServer({
      noServer: true,
      perMessageDeflate: false,
      // The strict decoder checks UTF-8 itself, so invalid text is answered
      // with invalid-message and 1002 (section 11) rather than ws's bare 1007.
      skipUTF8Validation: true,
      maxPayload: Math.max(this.#limits.maxBinaryMessageBytes, this.#limits.maxTextMessageBytes),
      handleProtocols: (protocols) => (protocols.has(SUBPROTOCOL) ? SUBPROTOCOL : false),
      clientTracking: true,
    });
    const cluster = deps.cluster;
    const leaseTtlMs = options.cluster?.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS;
    if (!Number.isSafeInteger(leaseTtlMs) || leaseTtlMs < 100) throw new TypeError("cluster.leaseTtlMs must be an integer of at least 100");
    const check =
      cluster === undefined || options.cluster?.catalogue === undefined
        ? undefined
        : new CatalogueCheck(cluster, options.cluster.catalogue, options.cluster.allowCatalogueDrift === true, this.#logger);
    this.#catalogueCheck = check;
    // The catalogue is compared before the first heartbeat: a refused node never joins.
    this.#catalogueVerified = check === undefined ? Promise.resolve() : check.verify();
    const availability = new StoreAvailability(leaseTtlMs, Math.floor(leaseTtlMs / 3));
    this.#availability = availability;
    const joined =
      cluster === undefined
        ? Promise.resolve()
        : this.#catalogueVerified
            .then(() => cluster.heartbeat(leaseTtlMs))
            .then(() => availability.succeeded(performance.now()))
            .then(() => check?.record())
            .then(() => observer.leaseHeartbeat(true));
    if (cluster !== undefined) {
      let refused = false;
      this.#catalogueVerified.catch(() => (refused = true));
      const beat = async (): Promise<void> =>
        refused ? undefined : cluster.heartbeat(leaseTtlMs).then(
          () => {
            availability.succeeded(performance.now());
            observer.leaseHeartbeat(true);
            return check?.refresh();
          },
          (error: unknown) => {
            availability.failed();
            observer.leaseHeartbeat(false);
            this.#logger.error("lease heartbeat failed", { event: "cluster.heartbeat-error", error: String(error) });
          },
        );
      this.#heartbeat = setInterval(() => void beat(), Math.floor(leaseTtlMs / 3));
      this.#heartbeat.unref();
      this.#orphanClaims = setInterval(() => void this.#claimOrphans(), Math.floor(leaseTtlMs / 2));
      this.#orphanClaims.unref();
    }
    this.ready = joined.then(() => this.#countStoredBytes()).then(() => this.#runtime.recoverInterrupted()).then(
      (count) => {
        this.#started = true;
        if (count > 0) this.#logger.warn("finished sessions interrupted by a restart", { event: "recovery.interrupted", count });
      },
      (error: unknown) => {
        // A node refused for its catalogue never joined: listen says why.
        if (!(error instanceof CatalogueDriftError)) this.#logger.error("could not recover interrupted sessions", { event: "recovery.failed", error: String(error) });
      },
    );
    const sweepEvery = Math.min(this.#limits.sessionRetentionMs, 60_000);
    this.#sweeper = setInterval(() => void this.#sweep(), sweepEvery);
    this.#sweeper.unref();
  }

  async #claimOrphans(): Promise<void> {
    // Not before this node has seen the store available for a full lease (store-availability.ts).
    if (!this.#availability.mayClaim(performance.now())) return;
    try {
      const claimed = await this.#runtime.claimOrphans();
      if (claimed > 0) this.#observer.orphansClaimed(claimed);
    } catch (error) {
      this.#logger.error("orphan claim failed", { event: "cluster.orphan-claim-failed", error: String(error) });
    }
  }

  async drain(timeoutMs: number): Promise<number> {
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 0) throw new TypeError("drain timeout must be a non-negative integer (ms)");
    const deadline = (this.#options.now ?? Date.now)() + timeoutMs;
    this.#draining = true;
    this.#observer.drainStarted();
    // Clients lose only their transport: they resume, through the balancer, on another node.
    for (const client of this.#wss.clients) client.close(1001, "server draining");
    const failed = await this.#runtime.finishOwned(deadline);
    if (this.#heartbeat !== undefined) clearInterval(this.#heartbeat);
    if (this.#orphanClaims !== undefined) clearInterval(this.#orphanClaims);
    await this.#clusterStore()?.leave();
    await this.close();
    return failed;
  }

  #clusterStore(): ClusterSessionStore | undefined {
    return isClusterStore(this.#options.store) ? this.#options.store : undefined;
  }

  async #sweep(): Promise<void> {
    try {
      const now = (this.#options.now ?? Date.now)();
      const finishedBefore = now - this.#limits.sessionRetentionMs;
      // One node: the bytes of what the purge deletes, given back after it (a cluster counts anew below).
      const purgeable = this.#clusterStore() === undefined ? await this.#options.store.storedBytesByPrincipal?.(finishedBefore) : undefined;
      await this.#options.store.purgeFinished(finishedBefore, now, now - this.#limits.tombstoneRetentionMs);
      if (purgeable !== undefined) this.#storedBytes.giveBack(purgeable);
    } catch (error) {
      this.#logger.error("retention sweep failed", { event: "retention.sweep-failed", error: String(error) });
    }
    // In a cluster the store's sums, after the purge, count what the other nodes wrote since the last sweep.
    if (this.#clusterStore() !== undefined) await this.#countStoredBytes();
  }

  /**
   * Replaces the per-principal counts of stored bytes with the store's sums
   * (when the store has them). A store that cannot answer leaves the counts
   * as they are, to be read again at the next sweep.
   */
  async #countStoredBytes(): Promise<void> {
    try {
      const totals = await this.#options.store.storedBytesByPrincipal?.();
      if (totals !== undefined) this.#storedBytes.replace(totals);
    } catch (error) {
      this.#logger.error("could not read the bytes each principal keeps in the store", { event: "stored-bytes.count-failed", error: String(error) });
    }
  }

  bufferedBytes(): BufferedBytes {
    return { held: this.#nodeBudget.held, capacity: this.#nodeBudget.capacity, peak: this.#nodeBudget.takePeak() };
  }

  async readiness(): Promise<Readiness> {
    const reachable = await this.#storeReachable();
    const checks = { store: reachable, started: this.#started, accepting: !this.#draining && !this.#closing };
    const catalogue = this.#catalogueCheck?.details();
    return { ready: checks.store && checks.started && checks.accepting, checks, ...(catalogue === undefined ? {} : { details: { catalogue } }) };
  }

  /**
   * Whether the store answers, asked at most once per `READINESS_CACHE_MS`:
   * probes and scrapers (and anyone who can reach `/readyz`) share one round
   * trip, in flight or recent. Draining and closing are read live.
   */
  #storeReachable(): Promise<boolean> {
    const now = (this.#options.now ?? Date.now)();
    const last = this.#storeCheck;
    if (last !== undefined && now - last.at < READINESS_CACHE_MS && now >= last.at) return last.reachable;
    const store = this.#options.store;
    const timeoutMs = this.#options.readinessTimeoutMs ?? DEFAULT_READINESS_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    const reachable = Promise.race([
      (store.ping !== undefined ? store.ping() : store.getSession(NO_SESSION)).then(
        () => true,
        () => false,
      ),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs))),
    ]).finally(() => clearTimeout(timer));
    this.#storeCheck = { at: now, reachable };
    return reachable;
  }

  rotateKeyring(keyring: Keyring): void {
    this.#tokens.setKeyring(keyring);
  }

  attach(server: Server): void {
    const upgrade = (request: IncomingMessage, socket: Duplex, head: Buffer): void =>
      void this.#onUpgrade(request, socket, head, false);
    const request = (req: IncomingMessage, res: ServerResponse): void => void this.#onRequest(req, res, false);
    server.on("upgrade", upgrade);
    server.on("request", request);
    this.#attached.push({ server, upgrade, request });
  }

  async listen(port = 0, host = "127.0.0.1"): Promise<ListeningAddress> {
    await this.ready;
    await this.#catalogueVerified;
    const server = createServer((req, res) => void this.#onRequest(req, res, true));
    server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => void this.#onUpgrade(req, socket, head, true));
    this.#owned = server;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
    const address = server.address() as AddressInfo;
    if (this.#options.browsers?.allowListeningOrigins === true) {
      const local = Object.values(networkInterfaces()).flatMap((entries) => (entries ?? []).map((entry) => entry.address));
      this.#browsers?.allow(listeningOrigins(address.address, address.port, local));
    }
    const shownHost = address.family === "IPv6" ? `[${address.address}]` : address.address;
    return {
      host: address.address,
      port: address.port,
      url: `ws://${shownHost}:${address.port}`,
      httpUrl: `http://${shownHost}:${address.port}`,
    };
  }

  async #onRequest(request: IncomingMessage, response: ServerResponse, owned: boolean): Promise<void> {
    const url = parseRequestUrl(request);
    const ours = owned || (url !== undefined && (url.pathname === DISCOVERY_PATH || isOperationsPath(url.pathname, this.#endpoints)));
    if (ours && url?.pathname !== SESSION_PATH && !this.#hosts.allows(request)) {
      sendHttpError(response, new ProtocolError("forbidden", "this server does not answer to that Host name (see publicHosts, serve --public-host)"));
      return;
    }
    if (url !== undefined && (await handleOperationsRequest(url.pathname, request, response, this.#endpoints))) return;
    if (url === undefined) {
      if (owned) sendHttpError(response, new ProtocolError("not-found", "no such endpoint"));
    } else if (url.pathname === SESSION_PATH) {
      sendHttpError(response, new ProtocolError("not-a-websocket", "this endpoint requires a WebSocket upgrade"));
    } else if (url.pathname === DISCOVERY_PATH) {
      if (this.#browsers !== undefined) {
        try {
          this.#browsers.checkOrigin(request);
        } catch (error) {
          this.#observer.attachRejected((error as ProtocolError).code, "discover");
          sendHttpError(response, error as ProtocolError);
          return;
        }
        if (this.#browsers.answerCors(request, response)) return;
      }
      await handleDiscovery(request, response, url, {
        host: this.#options.host,
        authenticator: this.#options.authenticator,
        authorizer: this.#authorizer,
        logger: this.#logger,
        maxCallerIdentityBytes: this.#limits.maxCallerIdentityBytes,
        rejected: (code) => this.#observer.attachRejected(code, "discover"),
        throttle: this.#authThrottle,
      });
    } else if (owned) {
      const pages = this.#options.pages;
      if (pages !== undefined && (await this.#servePage(pages, request, response))) return;
      sendHttpError(response, new ProtocolError("not-found", "no such endpoint"));
    }
  }

  async #servePage(pages: PageHandler, request: IncomingMessage, response: ServerResponse): Promise<boolean> {
    try {
      return await pages(request, response);
    } catch (error) {
      this.#logger.error("page handler failed", { event: "http.page-failed", error: String(error) });
      if (!response.headersSent) sendHttpError(response, new ProtocolError("internal-error", "internal error"));
      else response.destroy();
      return true;
    }
  }

  async #onUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer, owned: boolean): Promise<void> {
    socket.on("error", () => socket.destroy());
    const url = parseRequestUrl(request);
    if (url?.pathname !== SESSION_PATH) {
      if (owned) rejectUpgrade(socket, new ProtocolError("not-found", "no such endpoint"));
      return;
    }
    try {
      await this.ready;
      if (this.#closing) throw new ProtocolError("overloaded", "the server is shutting down");
      if (this.#draining) throw new ProtocolError("overloaded", "the server is draining; connect to another node");
      this.#checkConnectionCount();
      checkUpgradeRequest(request);
      this.#browsers?.checkOrigin(request);
      const address = request.socket.remoteAddress;
      // Before the authenticator runs, and answered over HTTP even to a page: a throttled address gets no socket.
      this.#authThrottle.check(address);
      const viaEntry = this.#browsers?.offersBearerEntry(request) === true;
      let caller;
      try {
        const credential = this.#browsers?.credential(request) ?? { from: "authorization" };
        const token = credential.from === "subprotocol" ? credential.token : undefined;
        caller = await authenticate(request, this.#options.authenticator, this.#logger, this.#limits.maxCallerIdentityBytes, token);
      } catch (error) {
        if (error instanceof ProtocolError && error.code === "unauthenticated") this.#authThrottle.failed(address);
        // A page cannot read a refused handshake's status: tell it in a close it can read.
        if (viaEntry && error instanceof ProtocolError) return this.#refuseByClose(request, socket, head, error);
        throw error;
      }
      // Again: other upgrades may have been authenticated meanwhile.
      this.#checkConnectionCount();
      // Held until the TCP socket closes, whether the upgrade completes or not.
      const slot = this.#connectionsPerPrincipal.acquire(caller);
      if (socket.destroyed) return slot.release(); // the client left while it was authenticated
      socket.once("close", () => slot.release());
      // A peer that vanished without a FIN is found by the kernel even while the server sends nothing.
      if (socket instanceof Socket) socket.setKeepAlive(true, this.#limits.tcpKeepAliveDelayMs);
      this.#wss.handleUpgrade(request, socket, head, (ws) => this.#onSocket(ws, caller, socket));
    } catch (error) {
      const failure = error instanceof ProtocolError ? error : new ProtocolError("internal-error", "internal error");
      this.#observer.attachRejected(failure.code, "upgrade");
      rejectUpgrade(socket, failure);
    }
  }

  /** Refuses an upgrade with `overloaded` when `limits.maxConnections` authenticated sockets are open. */
  #checkConnectionCount(): void {
    if (this.#sessions.size >= this.#limits.maxConnections) {
      throw new ProtocolError("overloaded", "the server cannot take more sessions now");
    }
  }

  /**
   * The browser extension's refusal: the upgrade completes (selecting only
   * the protocol's subprotocol) and the socket closes at once with
   * 4000 + the HTTP status, the error code as reason; nothing is read from it.
   * A peer that never answers the close frame is dropped a second later
   * (`closeThenDrop`) instead of after `ws`'s 30 seconds: such sockets cost
   * an attacker nothing, and they are not sessions (never counted in
   * `limits.maxConnections`).
   */
  #refuseByClose(request: IncomingMessage, socket: Duplex, head: Buffer, error: ProtocolError): void {
    this.#observer.attachRejected(error.code, "upgrade");
    this.#wss.handleUpgrade(request, socket, head, (ws) => {
      ws.on("error", () => ws.terminate());
      closeThenDrop(ws, BROWSER_REFUSAL_CLOSE_BASE + httpStatusFor(error.code), error.code, this.#timers);
    });
  }

  #onSocket(ws: WebSocket, caller: { account: string; principal: string }, socket: Duplex): void {
    const observer = this.#observer;
    const transport = new WsTransport(ws, this.#limits.sendHighWaterBytes, socket, () => observer.backpressure("socket-buffer"), this.#envelopes);
    const connection = new Connection(transport, caller, this.#runtime);
    observer.connectionOpened();
    this.#sessions.add(ws);
    watchLiveness(ws, this.#limits, this.#timers, (reason) => observer.connectionSilent(reason));
    ws.on("message", (data: RawData, isBinary: boolean) => {
      // While the server closes, nothing more is taken (the runtime is shut down); it was never ACKed.
      if (!this.#closing) connection.receive(toBytes(data, isBinary), isBinary);
    });
    ws.on("close", () => {
      this.#sessions.delete(ws);
      observer.connectionClosed();
      connection.transportClosed();
    });
    ws.on("error", (error) => this.#logger.warn("websocket error", { event: "connection.error", error: String(error) }));
  }

  async close(): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    if (this.#sweeper !== undefined) clearInterval(this.#sweeper);
    if (this.#heartbeat !== undefined) clearInterval(this.#heartbeat);
    if (this.#orphanClaims !== undefined) clearInterval(this.#orphanClaims);
    this.#runtime.shutdown();
    await closeClients(this.#wss.clients);
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
    for (const { server, upgrade, request } of this.#attached.splice(0)) {
      server.off("upgrade", upgrade);
      server.off("request", request);
    }
    const owned = this.#owned;
    if (owned !== undefined) {
      owned.closeAllConnections();
      await new Promise<void>((resolve) => owned.close(() => resolve()));
    }
  }
}

/**
 * How long `close()` waits for clients to answer its close frame (1001, going
 * away) before it drops the ones that did not: a client told the server is
 * going away reconnects at once, one that only sees the connection vanish
 * (1006) may first wait out its own timeouts.
 */
const CLOSE_GRACE_MS = 1_000;

/** Closes every socket with 1001; those that do not complete the close within `CLOSE_GRACE_MS` are dropped. */
async function closeClients(clients: Iterable<WebSocket>): Promise<void> {
  const closing = [...clients].map(
    (client) =>
      new Promise<void>((resolve) => {
        if (client.readyState === client.CLOSED) return resolve();
        client.once("close", () => resolve());
        client.close(1001, "server shutting down");
      }),
  );
  if (closing.length === 0) return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_GRACE_MS)));
  await Promise.race([Promise.all(closing), grace]);
  clearTimeout(timer);
  for (const client of clients) client.terminate();
}

/** The request target as a URL, or undefined when it does not parse. */
function parseRequestUrl(request: IncomingMessage): URL | undefined {
  try {
    return new URL(request.url ?? "/", "http://localhost");
  } catch {
    return undefined;
  }
}

/**
 * `ws` delivers Buffers; the runtime works on plain Uint8Array views (so
 * `slice` copies). A text message's bytes are only decoded to text, never
 * kept or sliced: its Buffer goes on as it is, with no view made per message.
 */
function toBytes(data: RawData, isBinary: boolean): Uint8Array {
  if (!isBinary && data instanceof Uint8Array) return data;
  if (Array.isArray(data)) {
    const joined = Buffer.concat(data);
    return new Uint8Array(joined.buffer, joined.byteOffset, joined.byteLength);
  }
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}
