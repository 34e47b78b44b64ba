/**
 * `serve --store postgres://...`: the settings of a cluster node, every one
 * checked before anything starts (cluster-only flags without `--store` are a
 * usage error), and the connection to the PostgreSQL store, whose errors are
 * told without the URL's password.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { SessionStore } from "@golem-stream/server";
import { checkClusterCredentials } from "../bearer-tokens.js";
import { usageError } from "../exit-codes.js";
import type { CliIo } from "../io/cli-io.js";
import type { CliLogger } from "../io/logger.js";
import { loadStorePostgres } from "../optional-packages.js";
import { DEFAULT_DRAIN_TIMEOUT_MS, DEFAULT_LEASE_TTL_MS } from "../options.js";
import type { LogCompression, ServeOptions } from "../options.js";
import { parseStoreUrl, scrub } from "../store-url.js";
import type { StoreUrl } from "../store-url.js";

const NODE_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/** The store's connection time limits given on the command line; one left out keeps the store's default. */
interface StoreTimeouts {
  connectTimeoutMs?: number;
  statementTimeoutMs?: number;
  queryTimeoutMs?: number;
  keepAliveInitialDelayMs?: number;
}

/** Each `--pg-*-ms` flag and the store option it sets. */
const STORE_TIMEOUT_FLAGS = [
  ["--pg-connect-timeout-ms", "pgConnectTimeoutMs", "connectTimeoutMs"],
  ["--pg-statement-timeout-ms", "pgStatementTimeoutMs", "statementTimeoutMs"],
  ["--pg-query-timeout-ms", "pgQueryTimeoutMs", "queryTimeoutMs"],
  ["--pg-keepalive-initial-delay-ms", "pgKeepaliveInitialDelayMs", "keepAliveInitialDelayMs"],
] as const satisfies readonly (readonly [string, keyof ServeOptions, keyof StoreTimeouts])[];

export interface ClusterSettings {
  readonly store: StoreUrl;
  readonly nodeId: string;
  readonly drainTimeoutMs: number;
  readonly leaseTtlMs: number;
  readonly timeouts: StoreTimeouts;
  /** `--log-compression`; absent keeps the store's default. */
  readonly logCompression: LogCompression | undefined;
  /** `--store-outage-grace`; absent keeps the store's default. */
  readonly outageGraceMs: number | undefined;
}

/** The cluster settings, or undefined for the SQLite server; every check happens before anything starts. */
export function clusterSettings(options: ServeOptions, io: CliIo): ClusterSettings | undefined {
  const fromEnv = io.env["GOLEM_STREAM_STORE"];
  const text = options.store ?? (fromEnv === undefined || fromEnv === "" ? undefined : fromEnv);
  if (text === undefined) {
    const clusterOnly = [
      options.nodeId !== undefined && "--node-id",
      options.drainTimeout !== undefined && "--drain-timeout",
      options.leaseTtl !== undefined && "--lease-ttl",
      ...STORE_TIMEOUT_FLAGS.map(([flag, option]) => options[option] !== undefined && flag),
      options.logCompression !== undefined && "--log-compression",
      options.allowCatalogueDrift === true && "--allow-catalogue-drift",
    ].filter((name) => name !== false);
    if (clusterOnly.length > 0)
      throw usageError(
        `${clusterOnly.join(", ")} only ${clusterOnly.length === 1 ? "applies" : "apply"} to a cluster node: add --store postgres://USER@HOST:PORT/DATABASE`,
      );
    return undefined;
  }
  const store = parseStoreUrl(text, options.store === undefined ? "GOLEM_STREAM_STORE" : "--store");
  checkClusterCredentials({ flags: options.token, env: io.env["GOLEM_STREAM_TOKEN"], file: options.tokenFile }, options.jwtJwks);
  const nodeId = options.nodeId ?? defaultNodeId();
  if (!NODE_ID.test(nodeId)) throw usageError("--node-id: 1..100 of A-Z a-z 0-9 . _ - (starting with a letter or digit)");
  return {
    store,
    nodeId,
    drainTimeoutMs: options.drainTimeout ?? DEFAULT_DRAIN_TIMEOUT_MS,
    leaseTtlMs: options.leaseTtl ?? DEFAULT_LEASE_TTL_MS,
    timeouts: storeTimeouts(options),
    logCompression: options.logCompression,
    outageGraceMs: options.storeOutageGrace,
  };
}

function storeTimeouts(options: ServeOptions): StoreTimeouts {
  const timeouts: StoreTimeouts = {};
  for (const [, option, storeOption] of STORE_TIMEOUT_FLAGS) {
    const value = options[option];
    if (value !== undefined) timeouts[storeOption] = value;
  }
  return timeouts;
}

function defaultNodeId(): string {
  const host = hostname()
    .replace(/[^A-Za-z0-9._-]/g, "")
    .replace(/^[^A-Za-z0-9]+/, "")
    .slice(0, 60);
  return `${host === "" ? "node" : host}-${randomBytes(3).toString("hex")}`;
}

export async function connectStore(cluster: ClusterSettings, logger: CliLogger): Promise<SessionStore> {
  const { store, nodeId } = cluster;
  const module = await loadStorePostgres();
  try {
    return await module.PostgresSessionStore.connect({
      connectionString: store.connectionString,
      nodeId,
      ...cluster.timeouts,
      ...(cluster.outageGraceMs === undefined ? {} : { outageGraceMs: cluster.outageGraceMs }),
      ...(cluster.logCompression === undefined ? {} : { logCompression: cluster.logCompression }),
      onError: (error) => logger.error("store connection error", { event: "store.error", error: scrub(error.message, store.password) }),
    });
  } catch (error) {
    const message = error instanceof Error ? error.message || (error as { code?: string }).code || error.name : String(error);
    // Only the scrubbed message is kept: the original error may quote the password.
    throw usageError(`cannot use the store ${store.shown}: ${scrub(message, store.password)}`);
  }
}
