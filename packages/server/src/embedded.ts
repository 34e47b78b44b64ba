/**
 * `startEmbeddedServer`: a catalogue (`agents`: a `defineCatalogue`, or an
 * `AgentHost` of your own; the demo without) on the SQLite store with static
 * bearer tokens, in one call. The CLI's `serve` command and outside checks start the server
 * with it. Given a `store` (e.g. a `ClusterSessionStore` on PostgreSQL), it
 * serves from that instead of SQLite.
 *
 * The keyring lives in `<dataDir>/keyring.json` (created with mode 0600 on
 * first start) unless one is given, so tokens stay valid across restarts.
 */
import { randomBytes } from "node:crypto";
import { existsSync, linkSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { makeDirectorySync } from "./store/make-directory.js";
import { join } from "node:path";
import { Keyring } from "@golem-stream/tokens";
import { checkStaticTokens, withStaticTokens, type Authentication, type StaticToken } from "./auth/static-tokens.js";
import { agentsFingerprint, agentsHost, type AgentsOptions } from "./catalogue/agents-host.js";
import { isClusterStore } from "./store/cluster-store.js";
import type { Authorizer, Logger, Principal, ServerLimits } from "./options.js";
import { createSessionServer, type ClusterOptions, type DrainOutcome, type SessionServer, type SessionServerOptions } from "./server.js";
import type { BrowserOptions } from "./transport/browser-access.js";
import type { TlsCredentials } from "./transport/tls-credentials.js";
import type { SessionStore } from "./store/session-store.js";
import { SqliteSessionStore } from "./store/sqlite-store.js";
import { checkOutageGraceMs } from "./store/outage-grace.js";

/** `agents` and `demo` (`AgentsOptions`): what it serves; the demo catalogue without `agents`. */
export interface EmbeddedServerOptions extends AgentsOptions {
  /** Default 0: a free port. */
  readonly port?: number;
  /** Default `127.0.0.1`. */
  readonly host?: string;
  /** Serve HTTPS and `wss://` with this certificate and key (see `ListenOptions.tls`); replace it with `server.setTlsCertificate`. */
  readonly tls?: TlsCredentials;
  /** Holds `sessions.db` and `keyring.json`; created if missing. */
  readonly dataDir: string;
  /**
   * Serve from this store instead of SQLite in `dataDir` (which then only
   * holds the keyring, unless `keyring` is given). `close` and `drain` close it.
   */
  readonly store?: SessionStore;
  /**
   * Cluster mode options, for a `ClusterSessionStore` given as `store`. The
   * catalogue's fingerprint (`cluster.catalogue`) defaults to that of what
   * this server serves, so every node checks that the others serve the same
   * (none for an `AgentHost` of your own).
   */
  readonly cluster?: ClusterOptions;
  /**
   * Accepted static bearer tokens; each is its own principal and its own
   * account, unless given as `{ token, account }`: then it shares the named
   * account (and its idempotency keys) with the other tokens given in it.
   * Each may do everything. May be empty when `authentication` is given.
   */
  readonly tokens: readonly StaticToken[];
  /**
   * Bearers that are none of `tokens` go to this authenticator, and its
   * callers to its authorizer (e.g. `createJwtAuth(...)`). Default: none.
   */
  readonly authentication?: Authentication;
  /**
   * The key (at least 16 bytes) of the HMAC that names each token's principal.
   * Default: `<dataDir>/principal-secret`, created (32 random bytes, mode 0600)
   * on first start. Every node of a cluster needs the same one.
   */
  readonly principalSecret?: Uint8Array;
  /** Overrides the keyring file. */
  readonly keyring?: Keyring;
  readonly limits?: Partial<ServerLimits>;
  readonly logger?: Logger;
  /** The browser extension: pages of these origins may open sessions (docs/protocol/browser.md). Default: off. */
  readonly browsers?: BrowserOptions;
  /** SQLite durability (default `full`). */
  readonly synchronous?: "full" | "normal";
  /** Payloads of at least this many bytes go to per-session files (default 65536; see `SqliteSessionStoreOptions`). */
  readonly payloadFileThreshold?: number;
  /** Payload files written with direct I/O (default true on Linux; see `SqliteSessionStoreOptions.payloadDirectIo`). */
  readonly payloadDirectIo?: boolean;
  /**
   * How long the SQLite store retries writes that failed with a transient
   * error (busy, I/O) before failing them (default 30 000; 0: at once; see
   * `SqliteSessionStoreOptions.outageGraceMs`). Not used with `store`: give
   * your store its own (`PostgresSessionStore`'s `outageGraceMs`).
   */
  readonly storeOutageGraceMs?: number;
  /** `/metrics` (default off; see `SessionServerOptions.metrics`). */
  readonly metrics?: SessionServerOptions["metrics"];
  /** `/healthz` and `/readyz` (default off). */
  readonly healthEndpoints?: boolean;
  readonly readinessTimeoutMs?: number;
  readonly tracerProvider?: SessionServerOptions["tracerProvider"];
  /** Other HTTP requests (see `SessionServerOptions.pages`), e.g. the web console. */
  readonly pages?: SessionServerOptions["pages"];
  /** The timers of time-dependent behaviour (see `SessionServerOptions.timers`; tests). */
  readonly timers?: SessionServerOptions["timers"];
  /** Observers of your own (see `SessionServerOptions.observers`). */
  readonly observers?: SessionServerOptions["observers"];
  /** The names the server is reached by, for the Host check (see `SessionServerOptions.publicHosts`). */
  readonly publicHosts?: readonly string[];
}

export interface EmbeddedServer {
  /** `ws://host:port` (`wss://` with `tls`) */
  readonly url: string;
  /** `http://host:port` (`https://` with `tls`) */
  readonly httpUrl: string;
  readonly server: SessionServer;
  /**
   * Replaces the static tokens (as `options.tokens`; a `TypeError` for a
   * list it would refuse, and the tokens in use stay): new handshakes, a
   * resume or takeover included, are authenticated against the new list;
   * connections already open keep the caller they were authenticated as.
   */
  setTokens(tokens: readonly StaticToken[]): void;
  close(): Promise<void>;
  /** `SessionServer.drain`, then closes the store; resolves with what became of the invocations still running at the deadline. */
  drain(timeoutMs: number): Promise<DrainOutcome>;
}

export const KEYRING_FILE = "keyring.json";

/**
 * Loads `<dataDir>/keyring.json`, or creates it (mode 0600, the directory 0700) with a fresh key
 * when there is none yet. Every token the server signs must still verify after a restart, or no
 * invocation can be resumed across it: give `createSessionServer` this keyring, not a
 * `Keyring.generate()` made at each start.
 */
export function loadOrCreateKeyring(dataDir: string): Keyring {
  const path = join(dataDir, KEYRING_FILE);
  if (existsSync(path)) return Keyring.fromJSON(readFileSync(path, "utf8"));
  const keyring = Keyring.generate();
  makeDirectorySync(dataDir, 0o700);
  writeFileSync(path, keyring.exportKeyringJson(), { mode: 0o600, flag: "wx" });
  return keyring;
}

export const PRINCIPAL_SECRET_FILE = "principal-secret";
const PRINCIPAL_SECRET_BYTES = 32;

/**
 * Loads `<dir>/principal-secret`, or creates it (mode 0600) with 32 random
 * bytes: the key that names static-token principals. Created whole or not
 * at all (written aside, then linked, which never replaces): processes
 * starting at once on one directory (cluster nodes sharing a keyring's
 * directory) all read the one that was linked first.
 */
export function loadOrCreatePrincipalSecret(dir: string): { readonly secret: Uint8Array; readonly created: boolean } {
  const path = join(dir, PRINCIPAL_SECRET_FILE);
  let created = false;
  if (!existsSync(path)) {
    makeDirectorySync(dir, 0o700);
    const aside = join(dir, `.${PRINCIPAL_SECRET_FILE}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
    writeFileSync(aside, randomBytes(PRINCIPAL_SECRET_BYTES), { mode: 0o600, flag: "wx" });
    try {
      linkSync(aside, path);
      created = true;
    } catch (error) {
      if ((error as { code?: unknown }).code !== "EEXIST") throw error;
    } finally {
      unlinkSync(aside);
    }
  }
  return { secret: checkPrincipalSecret(readFileSync(path), path), created };
}

function checkPrincipalSecret(secret: Uint8Array, where: string): Uint8Array {
  if (!(secret instanceof Uint8Array) || secret.length < 16) throw new TypeError(`${where}: a principal secret has at least 16 bytes`);
  return secret;
}

/** The cluster options for a cluster store: the caller's, with the served catalogue's fingerprint unless it gave one. */
function clusterOptions(options: EmbeddedServerOptions, store: SessionStore): { cluster?: ClusterOptions } {
  if (!isClusterStore(store)) return options.cluster === undefined ? {} : { cluster: options.cluster };
  const catalogue = options.cluster?.catalogue ?? agentsFingerprint(options);
  return { cluster: { ...options.cluster, ...(catalogue === undefined ? {} : { catalogue }) } };
}

export async function startEmbeddedServer(options: EmbeddedServerOptions): Promise<EmbeddedServer> {
  if (typeof options !== "object" || options === null) throw new TypeError("startEmbeddedServer needs an options object");
  if (typeof options.dataDir !== "string" || options.dataDir.length === 0) throw new TypeError("options.dataDir must be a non-empty path");
  try {
    checkStaticTokens(options.tokens);
  } catch (error) {
    throw new TypeError(`options.tokens: ${(error as Error).message}`);
  }
  if (options.tokens.length === 0 && options.authentication === undefined)
    throw new TypeError("options.tokens must not be empty without options.authentication");
  // Before anything is created: a bad catalogue leaves no data directory behind.
  const host = agentsHost(options);
  makeDirectorySync(options.dataDir, 0o700);
  const keyring = options.keyring ?? loadOrCreateKeyring(options.dataDir);
  const store =
    options.store ??
    new SqliteSessionStore({
      dataDir: options.dataDir,
      synchronous: options.synchronous ?? "full",
      ...(options.payloadFileThreshold === undefined ? {} : { payloadFileThreshold: options.payloadFileThreshold }),
      ...(options.payloadDirectIo === undefined ? {} : { payloadDirectIo: options.payloadDirectIo }),
      ...(options.storeOutageGraceMs === undefined
        ? {}
        : { outageGraceMs: checkOutageGraceMs(options.storeOutageGraceMs, "storeOutageGraceMs") }),
    });
  const secret =
    options.principalSecret === undefined
      ? loadOrCreatePrincipalSecret(options.dataDir).secret
      : checkPrincipalSecret(options.principalSecret, "options.principalSecret");
  const authentication = swappableTokens(options.tokens, secret, options.authentication);
  const server = createSessionServer({
    store,
    host,
    keyring,
    authenticator: authentication.authenticator,
    authorizer: authentication.authorizer,
    ...(options.limits === undefined ? {} : { limits: options.limits }),
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    ...clusterOptions(options, store),
    ...(options.metrics === undefined ? {} : { metrics: options.metrics }),
    ...(options.healthEndpoints === undefined ? {} : { healthEndpoints: options.healthEndpoints }),
    ...(options.readinessTimeoutMs === undefined ? {} : { readinessTimeoutMs: options.readinessTimeoutMs }),
    ...(options.tracerProvider === undefined ? {} : { tracerProvider: options.tracerProvider }),
    ...(options.browsers === undefined ? {} : { browsers: options.browsers }),
    ...(options.pages === undefined ? {} : { pages: options.pages }),
    ...(options.timers === undefined ? {} : { timers: options.timers }),
    ...(options.observers === undefined ? {} : { observers: options.observers }),
    ...(options.publicHosts === undefined ? {} : { publicHosts: options.publicHosts }),
  });
  let address;
  try {
    address = await server.listen(options.port ?? 0, options.host ?? "127.0.0.1", options.tls === undefined ? {} : { tls: options.tls });
  } catch (error) {
    await server.close();
    await store.close();
    throw error;
  }
  let closed: Promise<void> | undefined;
  let drained: Promise<DrainOutcome> | undefined;
  return {
    url: address.url,
    httpUrl: address.httpUrl,
    server,
    setTokens: (tokens) => {
      try {
        checkStaticTokens(tokens);
      } catch (error) {
        throw new TypeError(`tokens: ${(error as Error).message}`);
      }
      if (tokens.length === 0 && options.authentication === undefined)
        throw new TypeError("tokens must not be empty without options.authentication");
      authentication.replace(tokens);
    },
    close: () => (closed ??= server.close().then(() => store.close())),
    drain: (timeoutMs) => (drained ??= server.drain(timeoutMs).finally(() => (closed ??= store.close()))),
  };
}

/**
 * `withStaticTokens` whose token list can be replaced. Each caller is
 * authorized by the authorizer of the list that authenticated it: a
 * connection opened before a replacement keeps the rights it was given
 * (sessions already attached run on), whatever the new list says.
 */
function swappableTokens(
  tokens: readonly StaticToken[],
  secret: Uint8Array,
  other: Authentication | undefined,
): Required<Authentication> & { replace(tokens: readonly StaticToken[]): void } {
  let current = withStaticTokens(tokens, secret, other);
  const authorizedBy = new WeakMap<Principal, Authorizer>();
  return {
    authenticator: (bearer, request) => {
      const { authenticator, authorizer } = current;
      const remember = (caller: Principal | undefined): Principal | undefined => {
        if (caller !== undefined) authorizedBy.set(caller, authorizer);
        return caller;
      };
      // A static token is found at once: no promise (and no turn of the event loop) for it.
      const caller = authenticator(bearer, request);
      return caller instanceof Promise ? caller.then(remember) : remember(caller);
    },
    authorizer: (request) => (authorizedBy.get(request.caller) ?? current.authorizer)(request),
    replace: (next) => {
      current = withStaticTokens(next, secret, other);
    },
  };
}
