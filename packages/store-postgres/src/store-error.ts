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
const CONNECT_TIMEOUT_TEXTS = ["timeout expired", "Connection terminated due to connection timeout", "timeout exceeded when trying to connect"];
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
