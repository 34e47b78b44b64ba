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
import type { Authenticator, Logger, Principal } from "./options.js";

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

/** Whether the client offered exactly our subprotocol among its list. */
export function offersSubprotocol(request: IncomingMessage): boolean {
  const header = request.headers["sec-websocket-protocol"];
  if (typeof header !== "string") return false;
  return header.split(",").some((name) => name.trim() === SUBPROTOCOL);
}

/** Authenticates a request; throws `unauthenticated` (or `internal-error` if the authenticator fails). */
export async function authenticate(request: IncomingMessage, authenticator: Authenticator, logger: Logger): Promise<Principal> {
  const token = bearerToken(request);
  if (token === undefined) throw new ProtocolError("unauthenticated", "a bearer token is required");
  let principal: Principal | undefined;
  try {
    principal = await authenticator(token, request);
  } catch (error) {
    logger.error("authenticator failed", { error: String(error) });
    throw new ProtocolError("internal-error", "internal error");
  }
  if (principal === undefined) throw new ProtocolError("unauthenticated", "the bearer token is not valid");
  return principal;
}

/** The checks of an upgrade request, in order: subprotocol, then authentication. */
export async function checkUpgrade(request: IncomingMessage, authenticator: Authenticator, logger: Logger): Promise<Principal> {
  if (!offersSubprotocol(request)) {
    throw new ProtocolError("unsupported-subprotocol", `the ${SUBPROTOCOL} subprotocol is required`);
  }
  return authenticate(request, authenticator, logger);
}

/** Answers a failed upgrade on the raw socket and closes it. */
export function rejectUpgrade(socket: Duplex, error: ProtocolError): void {
  const { status, body } = errorEnvelope(error.code, error.message);
  const head = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Error"}`,
    "Connection: close",
    "Content-Type: application/json",
    `Content-Length: ${Buffer.byteLength(body)}`,
    ...(status === 426 ? ["Upgrade: websocket"] : []),
    "",
    "",
  ].join("\r\n");
  if (socket.writable) socket.end(head + body);
  else socket.destroy();
}

export function sendHttpError(response: ServerResponse, error: ProtocolError): void {
  const { status, body } = errorEnvelope(error.code, error.message);
  response.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    ...(status === 426 ? { upgrade: "websocket", connection: "Upgrade" } : {}),
  });
  response.end(body);
}

export function sendJson(response: ServerResponse, status: number, body: string): void {
  response.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  response.end(body);
}
