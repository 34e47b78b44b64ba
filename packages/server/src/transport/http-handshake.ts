/**
 * The HTTP side of the session endpoint (section 1, decisions section 5):
 * everything decided before a WebSocket exists. Failures answer with
 * Golem's HTTP error envelope and nothing is upgraded:
 * 400 `{"code","errors":[message]}`, any other status `{"code","error":message}`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import { httpStatusFor, ProtocolError, SUBPROTOCOL, type ErrorCode } from "@golem-stream/wire";
import type { Authenticator, Logger, Principal } from "../options.js";
import { checkCallerIdentity } from "./caller-identity.js";
import { CredentialMissing } from "./credential-missing.js";

/** Longest Authorization header considered; longer ones are unauthenticated without parsing. */
const MAX_AUTHORIZATION_BYTES = 16 * 1024;

export function errorEnvelope(code: ErrorCode, message: string): { status: number; body: string } {
  const status = httpStatusFor(code);
  const body = status === 400 ? { code, errors: [message] } : { code, error: message };
  return { status, body: JSON.stringify(body) };
}

/** The bearer token of `Authorization: Bearer <token>`, if well formed. */
export function bearerToken(request: IncomingMessage): string | undefined {
  const header = request.headers.authorization;
  if (typeof header !== "string" || header.length > MAX_AUTHORIZATION_BYTES) return undefined;
  // Auth schemes are case-insensitive (RFC 9110 section 11.1); one or more spaces follow.
  const match = /^bearer +([\x21-\x7e]+)$/i.exec(header);
  return match?.[1];
}

/** `Sec-WebSocket-Key`: the base64 text of 16 bytes (RFC 6455 section 4.1). */
const WEBSOCKET_KEY = /^[+/0-9A-Za-z]{22}==$/;

/**
 * `Sec-WebSocket-Protocol = 1#token` (RFC 6455 section 11.3.4): tokens
 * separated by commas with optional spaces or tabs around them. The same
 * grammar `ws` enforces; the token and separator classes are disjoint, so
 * matching is linear.
 */
const SUBPROTOCOL_LIST = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+(?:[ \t]*,[ \t]*[!#$%&'*+\-.^_`|~0-9A-Za-z]+)*$/;

/** Whether a comma-separated header (such as `Connection`) lists `token`, in any case. */
function listsToken(header: string | undefined, token: string): boolean {
  return header !== undefined && header.split(",").some((item) => item.trim().toLowerCase() === token);
}

/**
 * That the request is a WebSocket opening handshake `ws` will complete
 * (RFC 6455 section 4.2.1). Checked here so that every refusal is ours, in
 * the error envelope: `ws` would otherwise answer with its own text/html.
 * Not an upgrade to WebSocket version 13 at all: `not-a-websocket` (426,
 * with `Upgrade: websocket` and `Sec-WebSocket-Version: 13` saying what is
 * needed, RFC 6455 section 4.4). A WebSocket handshake with a malformed
 * key: `invalid-message` (400).
 */
export function checkWebSocketHandshake(request: IncomingMessage): void {
  const upgrade = request.headers.upgrade;
  if (request.method !== "GET" || upgrade?.toLowerCase() !== "websocket" || !listsToken(request.headers.connection, "upgrade")) {
    throw new ProtocolError("not-a-websocket", "this endpoint requires a GET request upgrading to WebSocket");
  }
  if (request.headers["sec-websocket-version"] !== "13") {
    throw new ProtocolError("not-a-websocket", "this endpoint requires WebSocket version 13");
  }
  const key = request.headers["sec-websocket-key"];
  if (key === undefined || !WEBSOCKET_KEY.test(key)) {
    throw new ProtocolError("invalid-message", "the Sec-WebSocket-Key header must be the base64 text of 16 bytes");
  }
}

/**
 * The subprotocols the client offered, or undefined when the header is
 * missing, malformed or names one subprotocol twice (`ws` refuses those).
 */
export function offeredSubprotocols(request: IncomingMessage): ReadonlySet<string> | undefined {
  const header = request.headers["sec-websocket-protocol"];
  if (typeof header !== "string" || !SUBPROTOCOL_LIST.test(header)) return undefined;
  const names = header.split(",").map((name) => name.trim());
  const offered = new Set(names);
  return offered.size === names.length ? offered : undefined;
}

/** Whether the client offered exactly our subprotocol in a well-formed list. */
export function offersSubprotocol(request: IncomingMessage): boolean {
  return offeredSubprotocols(request)?.has(SUBPROTOCOL) === true;
}

/**
 * Authenticates a request by its `Authorization` bearer, or by `token` when
 * given (the browser extension's subprotocol entry); throws `unauthenticated`
 * (or `internal-error` if the authenticator fails), or `forbidden` for an
 * identity longer than `maxIdentityBytes` (`checkCallerIdentity`).
 */
export async function authenticate(
  request: IncomingMessage,
  authenticator: Authenticator,
  logger: Logger,
  maxIdentityBytes: number,
  token = bearerToken(request),
): Promise<Principal> {
  if (token === undefined) throw new CredentialMissing();
  let principal: Principal | undefined;
  try {
    principal = await authenticator(token, request);
  } catch (error) {
    logger.error("authenticator failed", { event: "auth.error", error: String(error) });
    throw new ProtocolError("internal-error", "internal error");
  }
  if (principal === undefined) throw new ProtocolError("unauthenticated", "the bearer token is not valid");
  return checkCallerIdentity(principal, maxIdentityBytes, logger);
}

/**
 * The checks of an upgrade request that come before its credential, in
 * order: WebSocket handshake, subprotocol (then session-endpoint.ts checks the Origin
 * when browsers are allowed, and authenticates).
 */
export function checkUpgradeRequest(request: IncomingMessage): void {
  checkWebSocketHandshake(request);
  if (!offersSubprotocol(request)) {
    throw new ProtocolError("unsupported-subprotocol", `the ${SUBPROTOCOL} subprotocol is required`);
  }
}

/** Answers a failed upgrade on the raw socket and closes it. */
export function rejectUpgrade(socket: Duplex, error: ProtocolError): void {
  answerAndClose(socket, rawErrorResponse(error));
}

/**
 * Writes `answer` on a raw socket no `ServerResponse` writes to, then destroys it once written,
 * as `ws` aborts a handshake. Ended only, the socket would stay half open for as long as the
 * client kept its own side (the HTTP server allows half-open connections, and an upgrade's socket
 * has no timeout left): it would hold its descriptor and its place among the listener's
 * connections (`limits.maxHttpConnections`) for good.
 */
export function answerAndClose(socket: Duplex, answer: string): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.once("finish", () => socket.destroy());
  socket.end(answer);
}

/** `error` in the error envelope as a whole HTTP/1.1 response, for a socket no `ServerResponse` writes to. */
export function rawErrorResponse(error: ProtocolError): string {
  const { status, body } = errorEnvelope(error.code, error.message);
  const head = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Error"}`,
    "Connection: close",
    "Content-Type: application/json",
    `Content-Length: ${Buffer.byteLength(body)}`,
    ...(status === 426 ? ["Upgrade: websocket", "Sec-WebSocket-Version: 13"] : []),
    "",
    "",
  ].join("\r\n");
  return head + body;
}

export function sendHttpError(response: ServerResponse, error: ProtocolError): void {
  const { status, body } = errorEnvelope(error.code, error.message);
  response.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    ...(status === 426 ? { upgrade: "websocket", connection: "Upgrade", "sec-websocket-version": "13" } : {}),
  });
  response.end(body);
}

export function sendJson(response: ServerResponse, status: number, body: string): void {
  response.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  response.end(body);
}
