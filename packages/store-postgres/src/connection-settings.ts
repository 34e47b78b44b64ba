/**
 * The time limits of every connection a store opens (read pool, writer,
 * listener), as options with their defaults, mapped onto node-postgres' own
 * settings rather than timers of ours.
 */
import type pg from "pg";

export interface ConnectionTimeouts {
  /**
   * How long opening a connection may take, TCP and TLS handshakes and
   * authentication included; for the read pool also the wait for a free
   * connection when all `max` are busy. `pg`'s `connectionTimeoutMillis`.
   * Default 10 000; 0 waits forever.
   */
  readonly connectTimeoutMs?: number;
  /**
   * How long PostgreSQL lets one statement run before cancelling it (SQLSTATE
   * 57014; the connection stays usable, a write fails alone in its savepoint).
   * Sent as the session's `statement_timeout`. Default 30 000; 0 for none.
   */
  readonly statementTimeoutMs?: number;
  /**
   * How long the client waits for any answer to a query before giving up on
   * it and closing the connection: the backstop for a server or network that
   * stalled, where `statementTimeoutMs` cannot act. Keep it above
   * `statementTimeoutMs`, so a slow statement is cancelled by the server
   * first. `pg`'s `query_timeout`. Default 45 000; 0 for none.
   */
  readonly queryTimeoutMs?: number;
  /**
   * Idle time before TCP keepalive probes start on every connection, so a
   * peer that vanished (a cut network, a killed host) is noticed on the
   * listener, which otherwise only waits for notifications. `pg`'s
   * `keepAliveInitialDelayMillis` (keepAlive is always on). Default 10 000.
   */
  readonly keepAliveInitialDelayMs?: number;
  /**
   * How long PostgreSQL keeps a transaction open while its client sends
   * nothing before ending the connection: a node stalled in the middle of a
   * write (a frozen process, a network cut that keepalives have not noticed
   * yet) then lets go of the rows it locked, so another node can claim the
   * sessions they belong to (a claim leaves those to a later one). Sent as the session's
   * `idle_in_transaction_session_timeout`. Default 10 000; 0 for none.
   */
  readonly idleInTransactionTimeoutMs?: number;
}

export const DEFAULT_CONNECTION_TIMEOUTS: Required<ConnectionTimeouts> = {
  connectTimeoutMs: 10_000,
  statementTimeoutMs: 30_000,
  queryTimeoutMs: 45_000,
  keepAliveInitialDelayMs: 10_000,
  idleInTransactionTimeoutMs: 10_000,
};

/** Each option's `pg` setting, which `pool` may also give. */
const PG_NAMES = {
  connectTimeoutMs: "connectionTimeoutMillis",
  statementTimeoutMs: "statement_timeout",
  queryTimeoutMs: "query_timeout",
  keepAliveInitialDelayMs: "keepAliveInitialDelayMillis",
  idleInTransactionTimeoutMs: "idle_in_transaction_session_timeout",
} as const satisfies Record<keyof ConnectionTimeouts, keyof pg.ClientConfig>;

/**
 * The `pg` settings for `timeouts`. Each is the option if given, else the
 * same setting in `pool` under its `pg` name (so a `pool` written for `pg`
 * keeps working), else the default. Throws `TypeError` for a value that is
 * not a non-negative integer of milliseconds.
 */
export function connectionSettings(timeouts: ConnectionTimeouts, pool: pg.PoolConfig = {}): pg.ClientConfig {
  const resolved = { ...DEFAULT_CONNECTION_TIMEOUTS };
  for (const name of Object.keys(PG_NAMES) as (keyof ConnectionTimeouts)[]) {
    const fromPool: unknown = pool[PG_NAMES[name]];
    // pg reads `statement_timeout: false` as none.
    const value: unknown = timeouts[name] ?? (fromPool === false ? 0 : fromPool);
    if (value === undefined) continue;
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
      throw new TypeError(`${name} must be a non-negative integer of milliseconds, got ${String(value)}`);
    }
    resolved[name] = value;
  }
  return {
    connectionTimeoutMillis: resolved.connectTimeoutMs,
    // pg sends statement_timeout only when it is truthy, and treats a falsy query_timeout as none.
    statement_timeout: resolved.statementTimeoutMs,
    query_timeout: resolved.queryTimeoutMs,
    keepAlive: pool.keepAlive ?? true,
    keepAliveInitialDelayMillis: resolved.keepAliveInitialDelayMs,
    // pg sends it only when it is truthy: 0 leaves the server's own setting (none by default).
    idle_in_transaction_session_timeout: resolved.idleInTransactionTimeoutMs,
  };
}
