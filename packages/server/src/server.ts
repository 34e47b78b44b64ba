/**
 * `createSessionServer`: one node of the session service, wired from its
 * parts. The options and the `SessionServer` interface are
 * server-options.ts; the WebSocket side of the session endpoint is
 * transport/session-endpoint.ts, the plain HTTP requests
 * transport/http-routes.ts; the first-message rules and the sessions are the
 * `SessionRuntime` (admission/session-runtime.ts). This file builds them
 * over one store, keyring and set of observers, and runs the node's life:
 * ready once recovery has run (and, in a cluster, the node joined,
 * cluster/lease-keeper.ts), draining, closing.
 */
import { SYSTEM_TIMERS, type Timers } from "./timers.js";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { networkInterfaces } from "node:os";
import type { Duplex } from "node:stream";
import { EnvelopePool } from "@golem-stream/wire";
import type { Keyring } from "@golem-stream/tokens";
import type { Registry } from "prom-client";
import { BrowserAccess, listeningOrigins } from "./transport/browser-access.js";
import { routeRequest, type HttpRoutes } from "./transport/http-routes.js";
import { createHttpListener, type HttpListener } from "./transport/http-listener.js";
import { TlsCertificateError, type TlsCredentials } from "./transport/tls-credentials.js";
import { SessionEndpoint } from "./transport/session-endpoint.js";
import { HostCheck } from "./transport/host-check.js";
import { AuthThrottle } from "./transport/auth-throttle.js";
import type { RuntimeDeps } from "./admission/runtime-deps.js";
import { NodeBudget } from "./invocation/node-budget.js";
import { resolveLimits, silentLogger, type Logger, type ServerLimits } from "./options.js";
import { SessionRuntime } from "./admission/session-runtime.js";
import { TokenService } from "./admission/token-service.js";
import { DEFAULT_AUDIENCE, DEFAULT_ISSUER, checkIssuerAndAudience } from "./admission/token-budget.js";
import { StoredBytesTable } from "./admission/stored-bytes.js";
import { RetentionSweep } from "./sessions/retention-sweep.js";
import { isClusterStore } from "./store/cluster-store.js";
import { CatalogueDriftError } from "./cluster/catalogue-check.js";
import { LeaseKeeper } from "./cluster/lease-keeper.js";
import { probePaths, type OperationsEndpoints, type Readiness } from "./observability/http-endpoints.js";
import { logObserver } from "./observability/log-observer.js";
import { PrometheusMetrics } from "./observability/prometheus-metrics.js";
import { composeObservers, type PartialObserver, type ServerObserver } from "./observability/server-observer.js";
import { StoreProbe } from "./observability/store-probe.js";
import { tracingObserver } from "./observability/tracing-observer.js";
import {
  DEFAULT_READINESS_TIMEOUT_MS,
  allowAll,
  checkOptions,
  leaseTtlOf,
  type BufferedBytes,
  type DrainOutcome,
  type ListeningAddress,
  type ListenOptions,
  type SessionServer,
  type SessionServerOptions,
} from "./server-options.js";

export type {
  BufferedBytes,
  ClusterOptions,
  DrainOutcome,
  ListeningAddress,
  ListenOptions,
  PageHandler,
  SessionServer,
  SessionServerOptions,
} from "./server-options.js";

export function createSessionServer(options: SessionServerOptions): SessionServer {
  checkOptions(options);
  return new NodeSessionServer(options);
}

class NodeSessionServer implements SessionServer {
  readonly ready: Promise<void>;
  readonly metrics: Registry | undefined;
  readonly #observer: ServerObserver;
  #started = false;
  readonly #options: SessionServerOptions;
  readonly #limits: ServerLimits;
  readonly #nodeBudget: NodeBudget;
  readonly #logger: Logger;
  readonly #tokens: TokenService;
  readonly #runtime: SessionRuntime;
  readonly #endpoint: SessionEndpoint;
  readonly #routes: HttpRoutes;
  readonly #browsers: BrowserAccess | undefined;
  readonly #storeProbe: StoreProbe;
  readonly #sweep: RetentionSweep;
  /** Cluster mode: the node's lease, heartbeats and orphan claims. */
  readonly #leases: LeaseKeeper | undefined;
  /** Rejects with `CatalogueDriftError` when this node may not join: `listen` fails with it. */
  readonly #catalogueVerified: Promise<void>;
  readonly #attached: {
    server: Server;
    upgrade: (request: IncomingMessage, socket: Duplex, head: Buffer) => void;
    request: (request: IncomingMessage, response: ServerResponse) => void;
  }[] = [];
  #owned: HttpListener | undefined;
  #closing = false;
  #draining = false;

  constructor(options: SessionServerOptions) {
    this.#options = options;
    const limits = (this.#limits = resolveLimits(options.limits));
    const envelopes = new EnvelopePool(limits.maxPooledSendBytes);
    const issuer = options.issuer ?? DEFAULT_ISSUER;
    const audience = options.audience ?? DEFAULT_AUDIENCE;
    checkIssuerAndAudience(issuer, audience, limits.maxCallerIdentityBytes);
    this.#nodeBudget = new NodeBudget(limits.maxQueuedBytesPerNode);
    const logger = (this.#logger = options.logger ?? silentLogger);
    const authorizer = options.authorizer ?? allowAll;
    const browsers = (this.#browsers = options.browsers === undefined ? undefined : new BrowserAccess(options.browsers, logger));
    const timers: Timers = options.timers ?? SYSTEM_TIMERS;
    const now = options.now ?? Date.now;
    const authThrottle = new AuthThrottle(
      { maxFailures: limits.authFailuresPerAddress, windowMs: limits.authFailureWindowMs, maxAddresses: limits.maxAuthFailureAddresses },
      now,
    );
    this.#tokens = new TokenService(options.keyring, { issuer, audience }, now);
    const metrics =
      options.metrics === undefined || options.metrics === false
        ? undefined
        : new PrometheusMetrics(options.metrics === true ? {} : options.metrics);
    this.metrics = metrics?.registry;
    const observers: PartialObserver[] = [tracingObserver(options.tracerProvider)];
    if (options.logger !== undefined) observers.push(logObserver(options.logger));
    if (metrics !== undefined) observers.push(metrics.observer);
    observers.push(...(options.observers ?? []));
    metrics?.watchNodeBudget(() => this.#nodeBudget);
    const observer = (this.#observer = composeObservers(observers));
    if (metrics !== undefined) options.store.observeCommits?.((seconds, writes) => observer.storeCommitted(seconds, writes));
    options.store.observeOutages?.((event) => observer.storeOutage(event));
    const operations: OperationsEndpoints = {
      registry: this.metrics,
      health: options.healthEndpoints === true,
      readiness: () => this.readiness(),
    };
    this.#storeProbe = new StoreProbe(options.store, options.readinessTimeoutMs ?? DEFAULT_READINESS_TIMEOUT_MS, now);
    const storedBytes = new StoredBytesTable(limits.maxStoredBytesPerPrincipal, () => observer.principalLimitReached("stored-bytes"));
    const deps: RuntimeDeps = {
      store: options.store,
      cluster: isClusterStore(options.store) ? options.store : undefined,
      host: options.host,
      tokens: this.#tokens,
      limits,
      logger,
      observer,
      now,
      timers,
      nodeBudget: this.#nodeBudget,
      storedBytes,
    };
    const runtime = (this.#runtime = new SessionRuntime(deps, authorizer));
    const cluster = deps.cluster;
    const leaseTtlMs = leaseTtlOf(options);
    this.#leases =
      cluster === undefined
        ? undefined
        : new LeaseKeeper(
            cluster,
            { leaseTtlMs, catalogue: options.cluster?.catalogue, allowCatalogueDrift: options.cluster?.allowCatalogueDrift === true },
            logger,
            observer,
            () => runtime.node.claimOrphans(),
          );
    this.#catalogueVerified = this.#leases?.catalogueVerified ?? Promise.resolve();
    const joined = this.#leases?.joined ?? Promise.resolve();
    this.#sweep = new RetentionSweep(options.store, cluster !== undefined, limits, storedBytes, logger, now);
    this.ready = joined
      .then(() => this.#sweep.countStoredBytes())
      .then(() => runtime.node.recoverInterrupted())
      .then(
        (count) => {
          this.#started = true;
          if (count > 0)
            logger.warn("recovered sessions a restart interrupted: re-run, or failed (invocation.interrupted says why)", {
              event: "recovery.interrupted",
              count,
            });
        },
        (error: unknown) => {
          // A node refused for its catalogue never joined: listen says why.
          if (!(error instanceof CatalogueDriftError))
            logger.error("could not recover interrupted sessions", { event: "recovery.failed", error: String(error) });
        },
      );
    this.#sweep.start();
    this.#endpoint = new SessionEndpoint({
      limits,
      authenticator: options.authenticator,
      runtime,
      observer,
      logger,
      timers,
      envelopes,
      browsers,
      authThrottle,
      ready: this.ready,
      state: () => (this.#closing ? "closing" : this.#draining ? "draining" : "open"),
    });
    this.#routes = {
      operations,
      hosts: new HostCheck(options.publicHosts),
      browsers,
      discovery: {
        host: options.host,
        authenticator: options.authenticator,
        authorizer,
        logger,
        maxCallerIdentityBytes: limits.maxCallerIdentityBytes,
        rejected: (code) => observer.attachRejected(code, "discover"),
        throttle: authThrottle,
      },
      pages: options.pages,
      observer,
      logger,
    };
  }

  async drain(timeoutMs: number): Promise<DrainOutcome> {
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 0) throw new TypeError("drain timeout must be a non-negative integer (ms)");
    const deadline = (this.#options.now ?? Date.now)() + timeoutMs;
    this.#draining = true;
    const claimRound = this.#leases?.stopClaims();
    this.#observer.drainStarted();
    // Clients lose only their transport: they resume, through the balancer, on another node.
    this.#endpoint.detachAll(1001, "server draining");
    // What a claim round under way takes is this node's to run or hand over, as its own are.
    await claimRound;
    const outcome = await this.#runtime.node.finishOwned(deadline);
    this.#leases?.stop();
    if (isClusterStore(this.#options.store)) await this.#options.store.leave();
    await this.close();
    return outcome;
  }

  bufferedBytes(): BufferedBytes {
    return { held: this.#nodeBudget.held, capacity: this.#nodeBudget.capacity, peak: this.#nodeBudget.takePeak() };
  }

  async readiness(): Promise<Readiness> {
    const reachable = await this.#storeProbe.reachable();
    const checks = { store: reachable, started: this.#started, accepting: !this.#draining && !this.#closing };
    const catalogue = this.#leases?.catalogueDetails();
    return {
      ready: checks.store && checks.started && checks.accepting,
      checks,
      ...(catalogue === undefined ? {} : { details: { catalogue } }),
    };
  }

  rotateKeyring(keyring: Keyring): void {
    this.#tokens.setKeyring(keyring);
  }

  attach(server: Server): void {
    const upgrade = (request: IncomingMessage, socket: Duplex, head: Buffer): void =>
      void this.#endpoint.upgrade(request, socket, head, false);
    const request = (req: IncomingMessage, res: ServerResponse): void => void routeRequest(this.#routes, req, res, false);
    server.on("upgrade", upgrade);
    server.on("request", request);
    this.#attached.push({ server, upgrade, request });
  }

  async listen(port = 0, host = "127.0.0.1", options: ListenOptions = {}): Promise<ListeningAddress> {
    await this.ready;
    await this.#catalogueVerified;
    const listener = createHttpListener(
      (req, res) => void routeRequest(this.#routes, req, res, true),
      this.#limits,
      () => this.#observer.attachRejected("overloaded", "connection"),
      probePaths(this.#routes.operations),
      options.tls,
    );
    const { server, becameSession, onUpgrade } = listener;
    onUpgrade((req, socket, head) => {
      void this.#endpoint.upgrade(req, socket, head, true).then((session) => session && becameSession(socket));
    });
    this.#owned = listener;
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
      this.#browsers?.allow(listeningOrigins(address.address, address.port, local, listener.secure));
    }
    const shownHost = address.family === "IPv6" ? `[${address.address}]` : address.address;
    const secure = listener.secure ? "s" : "";
    return {
      host: address.address,
      port: address.port,
      url: `ws${secure}://${shownHost}:${address.port}`,
      httpUrl: `http${secure}://${shownHost}:${address.port}`,
    };
  }

  setTlsCertificate(credentials: TlsCredentials): void {
    const owned = this.#owned;
    if (owned === undefined) throw new TlsCertificateError("tls-not-enabled", "the server does not listen (listen with tls first)");
    owned.setTlsCertificate(credentials);
  }

  async close(): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    this.#sweep.stop();
    this.#leases?.stop();
    this.#runtime.node.shutdown();
    await this.#endpoint.close();
    for (const { server, upgrade, request } of this.#attached.splice(0)) {
      server.off("upgrade", upgrade);
      server.off("request", request);
    }
    await this.#owned?.close();
  }
}
