/**
 * The store's typed failures. Most errors of this store are node-postgres'
 * own (a `DatabaseError` with its SQLSTATE `code`, or a connection error);
 * the timeouts are told apart here, because `pg` reports them only in its
 * message text, and a caller (a health check, a retry policy, a log alert)
 * needs a stable code to branch on.
 */

export const POSTGRES_STORE_ERROR_CODES = [
  /** No connection within `connectTimeoutMs`: PostgreSQL is unreachable, or accepts and does not answer, or the pool stayed full. */
  "connect-timeout",
  /** PostgreSQL cancelled a statement (SQLSTATE 57014), normally because it ran longer than `statementTimeoutMs`. */
  "statement-timeout",
  /**
   * No answer within `queryTimeoutMs` (the server or the network stalled);
   * the connection is closed. For a write, whether it committed is unknown.
   */
  "query-timeout",
  /**
   * PostgreSQL could not be reached, or the connection was lost, and stayed
   * so for longer than `outageGraceMs` (or with a grace of 0: at once). A
   * write that fails with it did not commit, unless its message says "not
   * confirmed".
   */
  "unavailable",
] as const;

export type PostgresStoreErrorCode = (typeof POSTGRES_STORE_ERROR_CODES)[number];

export class PostgresStoreError extends Error {
  override readonly name = "PostgresStoreError";
  readonly code: PostgresStoreErrorCode;

  constructor(code: PostgresStoreErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
  }
}

// node-postgres 8's texts for its own timers (lib/client.js, pg-pool/index.js).
const CONNECT_TIMEOUT_TEXTS = [
  "timeout expired",
  "Connection terminated due to connection timeout",
  "timeout exceeded when trying to connect",
];
const QUERY_TIMEOUT_TEXT = "Query read timeout";

/** Which timeout `error` is, if it is one. */
export function timeoutCode(error: unknown): PostgresStoreErrorCode | undefined {
  if (error instanceof PostgresStoreError) return error.code;
  if (!(error instanceof Error)) return undefined;
  if ((error as { code?: unknown }).code === "57014") return "statement-timeout";
  if (error.message === QUERY_TIMEOUT_TEXT) return "query-timeout";
  if (CONNECT_TIMEOUT_TEXTS.includes(error.message)) return "connect-timeout";
  return undefined;
}

/** `error` as the store reports it: a timeout becomes a `PostgresStoreError` (the original is its `cause`); anything else is left as it is. */
export function asStoreError(error: unknown, context?: string): unknown {
  const code = timeoutCode(error);
  if (code === undefined || error instanceof PostgresStoreError) return error;
  const reason = (error as Error).message;
  return new PostgresStoreError(code, context === undefined ? `${code}: ${reason}` : `${context}: ${code}: ${reason}`, { cause: error });
}

/**
 * SQLSTATEs that say the database is unavailable rather than that a
 * statement is wrong: a connection exception (class 08), the server shutting
 * down or restarting (57P01 admin shutdown, 57P02 crash shutdown, 57P03
 * cannot connect now: starting up, shutting down, in recovery) and too many
 * connections (53300). A full disk (53100) is not among them: it lasts until
 * someone acts, so it is reported, not retried.
 */
const UNAVAILABLE_SQLSTATES: ReadonlySet<string> = new Set([
  "08000",
  "08001",
  "08003",
  "08004",
  "08006",
  "57P01",
  "57P02",
  "57P03",
  "53300",
]);
/** Node's socket errors for a peer that is not there, or went away. */
const UNAVAILABLE_SOCKET_CODES: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "EHOSTDOWN",
  "ENETUNREACH",
  "ENETDOWN",
  "EAI_AGAIN",
]);
// node-postgres 8's texts for a connection that broke or closed under a query (lib/client.js).
const UNAVAILABLE_TEXTS = [
  "Connection terminated unexpectedly",
  "Connection terminated",
  "Client has encountered a connection error and is not queryable",
  "Client was closed and is not queryable",
];

/**
 * Whether `error` says PostgreSQL could not be reached or the connection was
 * lost (the store retries such work within its outage grace), as opposed to
 * a statement's own failure or a timeout. A query timeout is not one: the
 * server may still be running the statement (`query-timeout` stays an error).
 */
export function isUnavailable(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  if (error instanceof PostgresStoreError)
    return error.code === "connect-timeout" || error.code === "unavailable" || isUnavailable(error.cause);
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && (UNAVAILABLE_SQLSTATES.has(code) || UNAVAILABLE_SOCKET_CODES.has(code))) return true;
  // Node reports a refused connection to every address of a name (localhost: ::1 and 127.0.0.1) as one AggregateError.
  if (error instanceof AggregateError && error.errors.length > 0 && error.errors.every(isUnavailable)) return true;
  if (!(error instanceof Error)) return false;
  if (timeoutCode(error) === "connect-timeout") return true;
  return UNAVAILABLE_TEXTS.includes(error.message);
}
