/**
 * The one error class of the client. A `ClientError` says *what happened to
 * the invocation* (`kind`, a closed set owned by this package) and, when the
 * server or the protocol supplied one, the stable public `code` (the closed
 * v1 set of `@golem-stream/wire`). Client-side failures such as running out of
 * reconnect attempts have a kind but no public code: they never crossed the
 * wire, so inventing a public code for them would lie about the server.
 */
import type { ClientCancelReason, ErrorCode, ServerCancelReason } from "@golem-stream/wire";
import { CLIENT_CANCEL_REASONS, ProtocolError } from "@golem-stream/wire";

export const CLIENT_ERROR_KINDS = [
  /** The server rejected the attempt (`invocationRejected` or an HTTP handshake error). */
  "rejected",
  /** Another transport took the session over (`attachmentRevoked`). */
  "revoked",
  /** Reconnecting failed more often than the reconnect policy allows. */
  "connection-lost",
  /** The invocation finished with a failure outcome (`invocationFinished`). */
  "invocation-failed",
  /** One output stream ended with an error outcome (`outputStreamEnd`). */
  "stream-failed",
  /** One output stream was cancelled (by the server, or by this client). */
  "stream-cancelled",
  /** The server sent bytes or a message sequence the protocol forbids. */
  "server-violation",
  /** The caller aborted the invocation (`signal`, `cancel()`, `detach()`). */
  "aborted",
  /**
   * The `onCheckpoint` callback threw or rejected: delivery stopped and the
   * handle detached (nothing was cancelled; the last saved state continues).
   */
  "checkpoint-failed",
  /** A caller-supplied argument is unusable (thrown synchronously, before any I/O). */
  "invalid-argument",
  /**
   * `typedAgent(client, contract)`: the server's catalogue describes the agent type differently
   * from the contract; the `cause` is a `ContractError` listing each difference. Nothing was sent.
   */
  "contract-mismatch",
] as const;
export type ClientErrorKind = (typeof CLIENT_ERROR_KINDS)[number];

export interface ClientErrorOptions {
  readonly code?: ErrorCode;
  readonly retryable?: boolean;
  readonly reason?: ServerCancelReason;
  readonly cause?: unknown;
}

export class ClientError extends Error {
  override readonly name = "ClientError";
  readonly kind: ClientErrorKind;
  /** The public protocol code, when the failure has one. */
  readonly code: ErrorCode | undefined;
  /** The server's `retryable` flag of a rejection (false otherwise). */
  readonly retryable: boolean;
  /** The cancellation reason of a `stream-cancelled` error. */
  readonly reason: ServerCancelReason | undefined;

  constructor(kind: ClientErrorKind, message: string, options: ClientErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.kind = kind;
    this.code = options.code;
    this.retryable = options.retryable ?? false;
    this.reason = options.reason;
  }
}

export function isClientError(value: unknown): value is ClientError {
  return value instanceof ClientError;
}

/** Wraps a `ProtocolError` raised while reading server bytes. */
export function serverViolation(error: unknown): ClientError {
  if (error instanceof ClientError) return error;
  if (error instanceof ProtocolError) {
    return new ClientError("server-violation", `server sent an invalid message: ${error.message}`, {
      code: error.code,
      cause: error,
    });
  }
  return new ClientError("server-violation", "server sent an invalid message", { code: "protocol-error", cause: error });
}

/**
 * A server message valid in form but not in the session's state. Where the
 * protocol names the case, the function below carries that code instead.
 */
export function violation(message: string, code: ErrorCode = "protocol-error"): ClientError {
  return new ClientError("server-violation", message, { code });
}

/** Protocol 8: a channel that is unknown, stale, mapped twice, of the wrong direction, or used before its mapping. */
export function invalidChannel(message: string): ClientError {
  return violation(message, "invalid-channel");
}

/** One of the reasons a client may give in `streamCancel` (protocol 5.5). */
export function isClientCancelReason(value: unknown): value is ClientCancelReason {
  return (CLIENT_CANCEL_REASONS as readonly unknown[]).includes(value);
}

export function invalidCancelReason(reason: unknown): ClientError {
  return new ClientError(
    "invalid-argument",
    `a cancel reason is one of ${CLIENT_CANCEL_REASONS.join(", ")}; got ${typeof reason === "string" ? JSON.stringify(reason) : typeof reason}`,
  );
}
