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

/** Every `ClientErrorKind` (a closed set), for checks at run time. */
export const CLIENT_ERROR_KINDS = [
  "rejected",
  "revoked",
  "connection-lost",
  "invocation-failed",
  "stream-failed",
  "stream-cancelled",
  "server-violation",
  "aborted",
  "checkpoint-failed",
  "invalid-argument",
  "contract-mismatch",
] as const;

/**
 * What happened to the operation that failed (`ClientError.kind`), one of:
 *
 * - `rejected`: the server refused it (`invocationRejected`, a refused handshake, a discovery
 *   request answered with an error); `code` says why (`not-found`, `unauthenticated`, …).
 * - `revoked`: another process or connection took the session over (`attachmentRevoked`).
 * - `connection-lost`: reconnecting failed more often than the reconnect policy allows, or a
 *   catalogue request could not reach the server or lost it mid-download; no `code`, since no
 *   server said it.
 * - `invocation-failed`: the invocation finished with a failure outcome (`invocationFinished`).
 * - `stream-failed`: one output stream ended with an error outcome (`outputStreamEnd`).
 * - `stream-cancelled`: one output stream was cancelled, by the server or by this client (`reason`).
 * - `server-violation`: the server sent bytes or a message sequence the protocol forbids (or past
 *   a bound this client keeps); `code` names the case.
 * - `aborted`: the caller aborted the operation (a `signal`, `cancel()`, `detach()`).
 * - `checkpoint-failed`: the `onCheckpoint` callback threw or rejected: delivery stopped and the
 *   handle detached (nothing was cancelled; the last saved state continues).
 * - `invalid-argument`: an argument is unusable; thrown synchronously where possible, before any I/O.
 * - `contract-mismatch`: `client.connect` (or `typedAgent`): the server's catalogue describes the
 *   agent type differently from the contract; the `cause` is a `ContractError` listing each
 *   difference. Nothing was sent. Also a typed call's result, when the server returned a result of
 *   another type than the contract's (its catalogue changed after the check): the call ran, and
 *   `call.invocation.result` has the result untyped.
 */
export type ClientErrorKind = (typeof CLIENT_ERROR_KINDS)[number];

/** The optional parts of a `ClientError`, given to its constructor. */
export interface ClientErrorOptions {
  /** The public protocol code (`ClientError.code`). */
  readonly code?: ErrorCode;
  /** The server's `retryable` flag of a rejection (`ClientError.retryable`). Default false. */
  readonly retryable?: boolean;
  /** The cancellation reason of a `stream-cancelled` error (`ClientError.reason`). */
  readonly reason?: ServerCancelReason;
  /** The underlying error (`Error.cause`): a `ProtocolError`, a source's error, a signal's reason. */
  readonly cause?: unknown;
}

/**
 * Every failure of the client, thrown or as a rejection: `kind` says what happened to the operation,
 * `code` (when the server or the protocol gave one) the public protocol code.
 */
export class ClientError extends Error {
  /** Always `"ClientError"`. */
  override readonly name = "ClientError";
  /** What happened to the operation; see `ClientErrorKind` for each. */
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

/** Whether `value` is a `ClientError` of this package (`instanceof`, so one copy of the package). */
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

/** The server's whole explanation of a failure it gives no reason for (an agent that threw, a restart). */
export const SERVER_GENERIC_FAILURE = "invocation failed";

/**
 * What this process adds to a failure the server gives no reason for when it was away from the
 * server during the call (a connection lost, or a start from saved state): only it knows that, and
 * a restart fails every invocation it was running that is not replayable. When it had to cancel an
 * input whose source was left with the process it took over from (`source-unavailable`), that is
 * the other likely cause. The CLI says the same, and knows the note by its opening words.
 */
export function awayFailureNote(inputsLeftBehind: boolean): string {
  const opening =
    "the invocation failed on the server while this process was away from it, without a reason (the server's log has it); " +
    "it may have been a server restart";
  const restart = "fails every invocation it was running that is not replayable";
  return inputsLeftBehind
    ? `${opening} (it ${restart}), or an input only the process this one took over from could feed, which had to be cancelled here (source-unavailable)`
    : `${opening}, which ${restart}`;
}
