/**
 * What `PostgresSessionStore` can be told (its options, each with its default) and the
 * constants of its log format.
 */
import pg from "pg";
import type { OutageClock } from "@golem-stream/server/store";
import type { ConnectionTimeouts } from "./connection-settings.js";
import type { LogCompression } from "./log-storage.js";

/**
 * The timeouts (`connectTimeoutMs`, `statementTimeoutMs`, `queryTimeoutMs`,
 * `keepAliveInitialDelayMs`: `connection-settings.ts`) apply to every
 * connection; a call that runs into one rejects with a `PostgresStoreError`.
 */
export interface PostgresSessionStoreOptions extends ConnectionTimeouts {
  /** A libpq-style connection string, e.g. `postgres://user:pass@host:5432/db`. */
  readonly connectionString?: string;
  /**
   * Further node-postgres settings (host, user, password, ssl, `max` for the
   * read pool's size, ...), merged under `connectionString`. The writer and
   * the listener connections use the same settings. Its `pg` timeout
   * settings (`connectionTimeoutMillis`, `statement_timeout`, `query_timeout`,
   * `keepAliveInitialDelayMillis`) count where the store's own option of the
   * same meaning is not given.
   */
  readonly pool?: pg.PoolConfig;
  /** The schema holding the tables (created if missing). Default `golem_stream`. */
  readonly schema?: string;
  /** This node's id in cluster mode. Default: a random UUID per store. */
  readonly nodeId?: string;
  /** Called with errors that have no caller to reject (a dropped listener, a throwing subscriber). Default: ignored. */
  readonly onError?: (error: Error) => void;
  /**
   * Small input chunks and output items of one stream written in the same
   * group share one log row, up to this many bytes (default 7168; 0: a row
   * per append). Only while every live node reads packed rows: a node of an
   * earlier version (schema 1) keeps this node from packing until it has
   * left or its lease has expired (README, *Tables and migrations*).
   */
  readonly maxPackedRowBytes?: number;
  /**
   * How PostgreSQL compresses log rows too large for a page (1 MiB batches):
   * `lz4` (default) where the server was built with it, set for the writer
   * connection only, else the server's own `default_toast_compression`;
   * `server`: always the server's (README, *Log storage*).
   */
  readonly logCompression?: LogCompression;
  /**
   * How long the store waits out a PostgreSQL it cannot reach (refused or
   * lost connections, a server shutting down or starting up) before failing
   * the work: writes are retried in order, with backoff, and a COMMIT whose
   * answer was lost is checked first; reads are retried too. Past it the
   * writes waiting fail with `PostgresStoreError` code `unavailable` (their
   * invocations fail), and later ones at once until PostgreSQL answers. The
   * lease heartbeat, orphan claims and `ping` are never held (docs/cluster.md).
   * Default 30 000; 0 fails at the first error.
   */
  readonly outageGraceMs?: number;
  /** The clock of the outage grace (tests). Default: the process's. */
  readonly outageClock?: OutageClock;
}

/**
 * 7 KiB: a packed row then fits one 8 KiB page with its stream id and other columns, where the
 * log tables keep it uncompressed (`log-storage.ts`); one of 8 KiB spilled over and went through
 * `pglz`. The bound holds the row's data and its part list together (`packRun`).
 */
export const DEFAULT_MAX_PACKED_ROW_BYTES = 7168;
/** The log format this version reads and writes: 2, packed rows (schema version 2). */
export const LOG_FORMAT = 2;

export const DEFAULT_SCHEMA = "golem_stream";
