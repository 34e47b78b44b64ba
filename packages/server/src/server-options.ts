/**
 * What `createSessionServer` takes and returns: its options (with the
 * defaults of those that are not limits; the limits are `ServerLimits`,
 * options.ts), the checks that fail a configuration mistake at
 * construction with the option's name, and the `SessionServer` interface.
 * Kept apart from the server's wiring (server.ts) so the public surface
 * reads in one place.
 */
import { type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Keyring } from "@golem-stream/tokens";
import type { TracerProvider } from "@opentelemetry/api";
import type { Registry } from "prom-client";
import type { AgentHost } from "./agent-host.js";
import type { Authenticator, Authorizer, Logger, ServerLimits } from "./options.js";
import type { SessionStore } from "./store/session-store.js";
import type { Timers } from "./timers.js";
import type { BrowserOptions } from "./transport/browser-access.js";
import type { TlsCredentials } from "./transport/tls-credentials.js";
import type { Readiness } from "./observability/http-endpoints.js";
import type { MetricsOptions } from "./observability/prometheus-metrics.js";
import type { PartialObserver } from "./observability/server-observer.js";

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
   * claims its running invocations within half of it (re-running those of
   * replayable methods, failing the others), once
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

/** `cluster.leaseTtlMs`, or its default; a `TypeError` when it is not an integer of at least 100 ms. */
export function leaseTtlOf(options: SessionServerOptions): number {
  const leaseTtlMs = options.cluster?.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS;
  if (!Number.isSafeInteger(leaseTtlMs) || leaseTtlMs < 100) throw new TypeError("cluster.leaseTtlMs must be an integer of at least 100");
  return leaseTtlMs;
}

export interface ListeningAddress {
  readonly host: string;
  readonly port: number;
  /** `ws://host:port` (`wss://` with TLS) */
  readonly url: string;
  /** `http://host:port` (`https://` with TLS) */
  readonly httpUrl: string;
}

/** How `listen` serves beyond its port and host. */
export interface ListenOptions {
  /**
   * Serve HTTPS (and `wss://`) with this certificate and key, under the same
   * bounds as plain HTTP; the TLS handshake counts in `limits.httpRequestTimeoutMs`.
   * Credentials that cannot be used reject `listen` with `TlsCertificateError`
   * before anything listens. Replace them later with `setTlsCertificate`.
   */
  readonly tls?: TlsCredentials;
}

export interface SessionServer {
  /** Listens on an HTTP (with `options.tls`, HTTPS) server of its own (port 0 picks a free port). */
  listen(port?: number, host?: string, options?: ListenOptions): Promise<ListeningAddress>;
  /**
   * Serves new connections of the listener `listen` opened with TLS with
   * these credentials (a renewed certificate); open connections keep theirs.
   * The session ticket keys stay: a client reconnecting after it resumes its
   * TLS session instead of a full handshake.
   * Throws `TlsCertificateError`, leaving the credentials in use as they
   * were: `tls-certificate-invalid` when they cannot be used (a PEM that
   * does not parse, a key that is not the certificate's, a wrong
   * passphrase), `tls-not-enabled` when the server does not listen with TLS.
   */
  setTlsCertificate(credentials: TlsCredentials): void;
  /** Serves the session and discovery endpoints on an existing server; other paths are left alone. */
  attach(server: Server): void;
  /** New tokens use the new keyring's active key; its verify-only keys keep old tokens valid. */
  rotateKeyring(keyring: Keyring): void;
  /**
   * Stops every invocation (on the next start they run again, replayable
   * methods, or fail) and closes every
   * connection with 1001 (going away), dropping those that do not answer
   * within a second; messages arriving meanwhile are not taken.
   */
  close(): Promise<void>;
  /**
   * Graceful stop (SIGTERM): refuses new connections with `overloaded`
   * (a load balancer retries elsewhere), detaches every client (close 1001;
   * clients resume on another node), lets the invocations this process runs
   * finish until `timeoutMs` has passed, leaves those still running whose
   * methods are replayable to their next owner (another node, or this one
   * when it starts again), fails the rest (`invocation-failed`), leaves the
   * cluster and closes. Resolves with how many were handed over and failed.
   */
  drain(timeoutMs: number): Promise<DrainOutcome>;
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

/** What a drain did with the invocations still running at its deadline (`SessionServer.drain`). */
export interface DrainOutcome {
  /** Failed (`invocation-failed`): their methods cannot be run again. */
  readonly failed: number;
  /** Stopped without an outcome and left running in the store, for their next owner to run again (replayable methods). */
  readonly handedOver: number;
}

export interface BufferedBytes {
  readonly held: number;
  readonly capacity: number;
  readonly peak: number;
}

/** The default authorizer: every authenticated caller may do everything. */
export const allowAll: Authorizer = () => true;

/** Configuration mistakes fail at construction, with the option's name. */
export function checkOptions(options: SessionServerOptions): void {
  if (typeof options !== "object" || options === null) throw new TypeError("createSessionServer needs an options object");
  const required: [keyof SessionServerOptions, string][] = [
    ["store", "object"],
    ["host", "object"],
    ["keyring", "object"],
    ["authenticator", "function"],
  ];
  for (const [name, type] of required) {
    if (typeof options[name] !== type || options[name] === null)
      throw new TypeError(`options.${name} must be a ${type === "function" ? "function" : "non-null object"}`);
  }
  for (const name of ["authorizer", "now", "pages"] as const) {
    if (options[name] !== undefined && typeof options[name] !== "function") throw new TypeError(`options.${name} must be a function`);
  }
  const timeout = options.readinessTimeoutMs;
  if (timeout !== undefined && (!Number.isSafeInteger(timeout) || timeout <= 0))
    throw new TypeError("options.readinessTimeoutMs must be a positive integer (ms)");
  for (const name of ["issuer", "audience"] as const) {
    const value = options[name];
    if (value !== undefined && (typeof value !== "string" || value.length === 0))
      throw new TypeError(`options.${name} must be a non-empty string`);
  }
}

/** `readinessTimeoutMs` when not given. */
export const DEFAULT_READINESS_TIMEOUT_MS = 2000;
