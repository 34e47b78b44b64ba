/**
 * The one error class of the protocol and its closed set of public codes
 * (protocol section 11, decided in decisions-v1 section 5).
 *
 * Every function in this workspace that reads bytes from the network throws
 * only `ProtocolError`, so callers can map any failure to the public code,
 * the `invocationRejected.retryable` flag and the WebSocket close status
 * without inspecting messages.
 */

/** The frozen v1 code set, in the order decisions-v1 section 5 lists it. */
export const ERROR_CODES = [
  "unsupported-subprotocol",
  "unauthenticated",
  "not-a-websocket",
  "forbidden",
  "invalid-message",
  "validation-error",
  "unsupported-value",
  "not-found",
  "stream-already-consumed",
  "attempt-conflict",
  "idempotency-conflict",
  "invalid-token",
  "session-expired",
  "superseded",
  "invalid-channel",
  "input-gap",
  "input-conflict",
  "protocol-error",
  "limit-exceeded",
  "overloaded",
  "internal-error",
  "producer-error",
  "invocation-failed",
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

const ERROR_CODE_SET: ReadonlySet<string> = new Set(ERROR_CODES);

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === "string" && ERROR_CODE_SET.has(value);
}

/** WebSocket close statuses the protocol uses (section 11). */
export const CLOSE_NORMAL = 1000;
export const CLOSE_PROTOCOL_ERROR = 1002;
export const CLOSE_MESSAGE_TOO_BIG = 1009;
export const CLOSE_INTERNAL_ERROR = 1011;

/** Codes whose rejection means a new resume or takeover may recover the session. */
const RETRYABLE_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  "invalid-channel",
  "input-gap",
  "input-conflict",
  "overloaded",
  "internal-error",
]);

/**
 * The default `retryable` flag for a code. `protocol-error` depends on the
 * session state: retryable after acceptance only (decisions section 5).
 */
export function defaultRetryable(code: ErrorCode, afterAcceptance = false): boolean {
  if (code === "protocol-error") return afterAcceptance;
  return RETRYABLE_CODES.has(code);
}

/** HTTP status of a handshake failure with this code (decisions section 5). */
export function httpStatusFor(code: ErrorCode): number {
  switch (code) {
    case "unauthenticated":
      return 401;
    case "not-a-websocket":
      return 426;
    case "forbidden":
      return 403;
    case "not-found":
      return 404;
    case "overloaded":
      return 503;
    case "internal-error":
      return 500;
    default:
      return 400;
  }
}

/** The WebSocket close status that follows a failure with this code. */
export function closeCodeFor(code: ErrorCode): number {
  return code === "limit-exceeded" ? CLOSE_MESSAGE_TOO_BIG : CLOSE_PROTOCOL_ERROR;
}

export interface ProtocolErrorOptions {
  /** Overrides the code's default `retryable` flag. */
  readonly retryable?: boolean;
  /** Structural path of the offending value, for example `params.fields[0].elements[3]`. */
  readonly path?: string;
  /** The underlying error, kept for logs; never sent to a peer. */
  readonly cause?: unknown;
}

/**
 * A failure with a stable public code. `message` is safe public text: it
 * never contains tokens, keys, stack traces or internal type names.
 */
export class ProtocolError extends Error {
  override readonly name = "ProtocolError";
  readonly code: ErrorCode;
  readonly retryable: boolean;
  readonly path: string | undefined;

  /** A `message` that is not a string is the caller's bug, `internal-error`; `null` options are the defaults. */
  constructor(code: ErrorCode, message: string, options: ProtocolErrorOptions | null = {}) {
    if (typeof message !== "string") throw wrongArgument("new ProtocolError", "message", "a string");
    options ??= {};
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retryable = options.retryable ?? defaultRetryable(code);
    this.path = options.path;
  }

  /** The WebSocket close status a server or client uses after this error. */
  get closeCode(): number {
    return closeCodeFor(this.code);
  }
}

/** False for anything else, a proxy whose traps throw included. */
export function isProtocolError(value: unknown): value is ProtocolError {
  try {
    return value instanceof ProtocolError;
  } catch {
    return false;
  }
}

/**
 * What a public function throws for an argument of the wrong type: the caller's bug,
 * `internal-error`, as for any option out of its domain. Checked with `typeof` (or a test that
 * runs no code of the caller's), so an argument is refused without being read and the small
 * helpers the hot paths call per item cost no more than the check.
 */
export function wrongArgument(fn: string, name: string, expected: string): ProtocolError {
  return new ProtocolError("internal-error", `${fn} ${name} must be ${expected}`, { path: name });
}

/**
 * What a public function throws for an error raised while it read what the
 * calling code handed it: anything but a `ProtocolError` can only come from
 * that code's own objects (a getter or a proxy trap that throws), so it is
 * the caller's bug, `internal-error`, with the original kept as `cause` for
 * the log. A `ProtocolError` is passed on as it is.
 */
export function callerFault(cause: unknown): ProtocolError {
  if (cause instanceof ProtocolError) return cause;
  return new ProtocolError("internal-error", "a value handed to the codec could not be read", { cause });
}
