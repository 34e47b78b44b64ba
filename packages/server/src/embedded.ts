/**
 * `startEmbeddedServer`: the demo catalogue on the SQLite store with static
 * bearer tokens, in one call. The CLI's `serve` command and outside checks
 * start the server with it. Given a `store` (e.g. a `ClusterSessionStore`
 * on PostgreSQL), it serves from that instead of SQLite.
 *
 * The keyring lives in `<dataDir>/keyring.json` (created with mode 0600 on
 * first start) unless one is given, so tokens stay valid across restarts.
 */
import { existsSync, readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { Keyring, sha256Hex } from "@golem-stream/tokens";
import { createDemoHost } from "./demo/host.js";
import type { Logger, Principal, ServerLimits } from "./options.js";
import { createSessionServer, type ClusterOptions, type SessionServer, type SessionServerOptions } from "./server.js";
import type { BrowserOptions } from "./transport/browser-access.js";
import type { SessionStore } from "./store/session-store.js";
import { SqliteSessionStore } from "./store/sqlite-store.js";

export interface EmbeddedServerOptions {
  /** Default 0: a free port. */
  readonly port?: number;
  /** Default `127.0.0.1`. */
  readonly host?: string;
  /** Holds `sessions.db` and `keyring.json`; created if missing. */
  readonly dataDir: string;
  /**
   * Serve from this store instead of SQLite in `dataDir` (which then only
   * holds the keyring, unless `keyring` is given). `close` and `drain` close it.
   */
  readonly store?: SessionStore;
  /** Cluster mode options, for a `ClusterSessionStore` given as `store`. */
  readonly cluster?: ClusterOptions;
  /** Accepted bearer tokens; each is its own principal of account `local`. */
  readonly tokens: readonly string[];
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
  /** `/metrics` (default off; see `SessionServerOptions.metrics`). */
  readonly metrics?: SessionServerOptions["metrics"];
  /** `/healthz` and `/readyz` (default off). */
  readonly healthEndpoints?: boolean;
  readonly readinessTimeoutMs?: number;
  readonly tracerProvider?: SessionServerOptions["tracerProvider"];
  /** Other HTTP requests (see `SessionServerOptions.pages`), e.g. the web console. */
  readonly pages?: SessionServerOptions["pages"];
}

export interface EmbeddedServer {
  /** `ws://host:port` */
  readonly url: string;
  /** `http://host:port` */
  readonly httpUrl: string;
  readonly server: SessionServer;
  close(): Promise<void>;
  /** `SessionServer.drain`, then closes the store; resolves with how many invocations were failed. */
  drain(timeoutMs: number): Promise<number>;
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
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  writeFileSync(path, keyring.exportKeyringJson(), { mode: 0o600, flag: "wx" });
  return keyring;
}

/** Maps each static token to a principal named by a digest prefix (the token itself is never kept as a name). */
function staticAuthenticator(tokens: readonly string[]): (bearer: string) => Principal | undefined {
  const principals = new Map<string, Principal>();
  for (const token of tokens) {
    const digest = sha256Hex(token);
    principals.set(digest, { account: "local", principal: `token-${digest.slice(0, 16)}` });
  }
  // Lookup by digest: the comparison never runs over the secret's bytes.
  return (bearer) => principals.get(sha256Hex(bearer));
}

export async function startEmbeddedServer(options: EmbeddedServerOptions): Promise<EmbeddedServer> {
  if (typeof options !== "object" || options === null) throw new TypeError("startEmbeddedServer needs an options object");
  if (typeof options.dataDir !== "string" || options.dataDir.length === 0) throw new TypeError("options.dataDir must be a non-empty path");
  if (!Array.isArray(options.tokens) || options.tokens.length === 0 || !options.tokens.every((t) => typeof t === "string" && t.length > 0)) {
    throw new TypeError("options.tokens must be a non-empty array of non-empty strings");
  }
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  const keyring = options.keyring ?? loadOrCreateKeyring(options.dataDir);
  const store =
    options.store ??
    new SqliteSessionStore({
      dataDir: options.dataDir,
      synchronous: options.synchronous ?? "full",
      ...(options.payloadFileThreshold === undefined ? {} : { payloadFileThreshold: options.payloadFileThreshold }),
    });
  const server = createSessionServer({
    store,
    host: createDemoHost(),
    keyring,
    authenticator: staticAuthenticator(options.tokens),
    ...(options.limits === undefined ? {} : { limits: options.limits }),
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    ...(options.cluster === undefined ? {} : { cluster: options.cluster }),
    ...(options.metrics === undefined ? {} : { metrics: options.metrics }),
    ...(options.healthEndpoints === undefined ? {} : { healthEndpoints: options.healthEndpoints }),
    ...(options.readinessTimeoutMs === undefined ? {} : { readinessTimeoutMs: options.readinessTimeoutMs }),
    ...(options.tracerProvider === undefined ? {} : { tracerProvider: options.tracerProvider }),
    ...(options.browsers === undefined ? {} : { browsers: options.browsers }),
    ...(options.pages === undefined ? {} : { pages: options.pages }),
  });
  let address;
  try {
    address = await server.listen(options.port ?? 0, options.host ?? "127.0.0.1");
  } catch (error) {
    await server.close();
    await store.close();
    throw error;
  }
  let closed: Promise<void> | undefined;
  let drained: Promise<number> | undefined;
  return {
    url: address.url,
    httpUrl: address.httpUrl,
    server,
    close: () => (closed ??= server.close().then(() => store.close())),
    drain: (timeoutMs) => (drained ??= server.drain(timeoutMs).finally(() => (closed ??= store.close()))),
  };
}
