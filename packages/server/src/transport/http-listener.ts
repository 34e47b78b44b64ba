/**
 * The server's own HTTP listener (`SessionServer.listen`): what it bounds
 * before any route runs. Node's defaults let one client hold a connection
 * for minutes with a request it never finishes (headers a byte at a time, a
 * body no route reads), and answer an oversized or malformed request with a
 * bare status line, outside the error envelope every other refusal uses.
 * A server handed to `attach` keeps its own settings: its owner chose them.
 * With TLS credentials it is an HTTPS server with the same bounds, counted
 * from each TCP accept (tcp-sockets.ts), that answers a plain HTTP request
 * sent to it in plain text rather than dropping it (plain-http-sniff.ts).
 */
import { createServer, type IncomingMessage, type RequestListener, type Server } from "node:http";
import { createServer as createHttpsServer, type Server as HttpsServer } from "node:https";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { TLSSocket } from "node:tls";
import { ProtocolError } from "@golem-stream/wire";
import { ConnectionGate } from "./connection-gate.js";
import { answerAndClose, rawErrorResponse, rejectUpgrade, sendHttpError } from "./http-handshake.js";
import { sniffPlainHttpBeforeTls } from "./plain-http-sniff.js";
import { isProbeRequest, ProbeReserve } from "./probe-reserve.js";
import { TcpSockets } from "./tcp-sockets.js";
import { checkedTlsOptions, TlsCertificateError, type TlsCredentials } from "./tls-credentials.js";

/**
 * Largest request head read. Above the server's own bounds on what it reads
 * from a head (a 16 KiB Authorization header, a 16 KiB bearer entry among
 * the subprotocols, decided by the routes in the envelope), with room for
 * the other headers a browser sends beside them.
 */
export const MAX_REQUEST_HEAD_BYTES = 64 * 1024;

/** How often Node looks for requests past their deadline: a small share of the deadline, from 10 ms to 5 s. */
function checkingIntervalMs(requestTimeoutMs: number): number {
  return Math.max(10, Math.min(5_000, Math.floor(requestTimeoutMs / 4)));
}

/** What the listener bounds (`ServerLimits` members of the same names). */
export interface HttpListenerLimits {
  readonly httpRequestTimeoutMs: number;
  readonly maxHttpConnections: number;
}

/** The listener's server, and how a connection leaves its count. */
export interface HttpListener {
  readonly server: Server | HttpsServer;
  /** Whether it serves HTTPS. */
  readonly secure: boolean;
  /**
   * New connections get these credentials; open ones keep theirs, and the
   * session ticket keys stay, so that a client resumes its TLS session
   * across the change. A `TlsCertificateError` when they cannot be used
   * (the ones in use stay) or the listener serves plain HTTP.
   */
  setTlsCertificate(credentials: TlsCredentials): void;
  /** The connection became a session socket: it no longer counts in `maxHttpConnections`. */
  becameSession(socket: Duplex): void;
  /** Handles upgrades, but for those of connections over the budget: they are refused `overloaded`. */
  onUpgrade(handler: (request: IncomingMessage, socket: Duplex, head: Buffer) => void): void;
  /**
   * Stops listening and closes every connection that is not a session
   * socket, those still in their TLS handshake included; resolves once the
   * server closed (its session sockets closed too). A handshake that would
   * complete afterwards is not served.
   */
  close(): Promise<void>;
}

/**
 * An HTTP server whose requests must arrive whole within
 * `httpRequestTimeoutMs`, answered by `listener`, holding at most
 * `maxHttpConnections` connections that are not session sockets: one more is
 * answered `overloaded` (503) in the envelope and closed, and `refused` is
 * told. A request for one of `probePaths` is the exception
 * (`probe-reserve.ts`): it is answered over the budget too, then its
 * connection closes. With `tls` (checked first: a `TlsCertificateError`
 * when it cannot be used) the server is HTTPS, and its TLS handshake must
 * complete within `httpRequestTimeoutMs` too.
 */
export function createHttpListener(
  listener: RequestListener,
  limits: HttpListenerLimits,
  refused: () => void = () => {},
  probePaths: ReadonlySet<string> = new Set(),
  tls?: TlsCredentials,
): HttpListener {
  const requestTimeoutMs = limits.httpRequestTimeoutMs;
  const gate = new ConnectionGate(limits.maxHttpConnections);
  const reserve = new ProbeReserve(requestTimeoutMs);
  const tcp = new TcpSockets();
  let closing = false;
  const options = {
    headersTimeout: requestTimeoutMs,
    requestTimeout: requestTimeoutMs,
    connectionsCheckingInterval: checkingIntervalMs(requestTimeoutMs),
    maxHeaderSize: MAX_REQUEST_HEAD_BYTES,
  };
  const onRequest: RequestListener = (request, response) => {
    // No route reads a request body: one that brings one must not keep its connection for it.
    if (bringsBody(request)) response.shouldKeepAlive = false;
    const socket = tcp.tcpOf(request.socket);
    if (reserve.holds(socket)) {
      response.shouldKeepAlive = false;
      if (!reserve.take(socket) || !isProbeRequest(request, probePaths)) {
        refused();
        sendHttpError(response, overloadedError());
        return;
      }
    }
    listener(request, response);
  };
  const server =
    tls === undefined
      ? createServer(options, onRequest)
      : createHttpsServer({ ...options, ...checkedTlsOptions(tls), handshakeTimeout: requestTimeoutMs }, onRequest);
  server.on("clientError", answerClientError);
  // Before the listeners below: it takes TLS's own off the server, to run them once a connection's
  // first bytes are for TLS. The handshake (or the answer to plain HTTP) must be done within the request timeout of the accept.
  if (tls !== undefined) sniffPlainHttpBeforeTls(server as HttpsServer, requestTimeoutMs, (socket) => tcp.secureOf(socket) !== undefined);
  // After Node's own connection listener, which gives the socket its parser (or, with TLS, the
  // sniff, which wraps it in its TLS socket later): destroying it now ends that parser (or the
  // sniff, or handshake) as any closed connection does.
  server.on("connection", (socket: Socket) => {
    if (tls !== undefined) tcp.accepted(socket);
    if (gate.admit(socket)) return;
    const refuse = (): void => {
      refused();
      // Over TLS the envelope can only go out once the handshake has completed; before, the socket just closes.
      const answering = tls === undefined ? socket : tcp.secureOf(socket);
      if (answering === undefined) socket.destroy();
      else refuseConnection(answering);
    };
    // A refusal over TLS waits in the reserve for its handshake, probe or not: a handshake begun
    // for every connection over the budget would cost what the budget is there to bound.
    if ((probePaths.size > 0 || tls !== undefined) && reserve.admit(socket, refuse)) return;
    refuse();
  });
  if (tls !== undefined)
    server.on("secureConnection", (socket: TLSSocket) => {
      // Node's own listener, before this one, gave it its parser: closing, it is served nothing.
      if (closing) socket.destroy();
      else tcp.secured(socket);
    });
  return {
    server,
    secure: tls !== undefined,
    setTlsCertificate: (credentials) => {
      if (!("setSecureContext" in server)) throw new TlsCertificateError("tls-not-enabled", "the server listens without TLS");
      // A new secure context gets new session ticket keys unless given the ones in use: every
      // client reconnecting after a renewal (every SIGUSR2 of serve) would pay a full handshake.
      server.setSecureContext({ ...checkedTlsOptions(credentials), ticketKeys: server.getTicketKeys() });
    },
    becameSession: (socket) => gate.release(tcp.tcpOf(socket)),
    onUpgrade: (handler) =>
      server.on("upgrade", (request: IncomingMessage, socket: Duplex, head: Buffer) => {
        const under = tcp.tcpOf(socket);
        if (!reserve.holds(under)) {
          handler(request, socket, head);
          return;
        }
        reserve.take(under);
        refused();
        rejectUpgrade(socket, overloadedError());
      }),
    close: () => {
      closing = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Node's closeAllConnections knows the connections that have a parser: over TLS, only those
      // whose handshake completed. The others would hold close() for up to httpRequestTimeoutMs.
      tcp.destroyHandshaking();
      server.closeAllConnections();
      return closed;
    },
  };
}

function overloadedError(): ProtocolError {
  return new ProtocolError("overloaded", "the server holds as many connections as it may; retry later");
}

/** An answer before any request: the client may not have sent one yet, and nothing of it is read. */
function refuseConnection(socket: Duplex): void {
  socket.on("error", () => undefined);
  answerAndClose(socket, rawErrorResponse(overloadedError()));
}

function bringsBody(request: IncomingMessage): boolean {
  const length = request.headers["content-length"];
  return request.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0");
}

/**
 * A request Node could not read: an oversized head is answered in the error
 * envelope (`limit-exceeded`), a malformed one too (`invalid-message`); a
 * request that did not arrive in time gets Node's bare 408, as nothing of it
 * was judged. The connection is destroyed either way.
 */
function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  // As Node's own handler: write the answer unless one is already under way on this connection
  // (a response begun, its headers sent), then destroy the socket. Ending it instead would leave
  // the connection half open for as long as the client keeps its side: no timer watches it now.
  const answering = (socket as Duplex & { _httpMessage?: { _headerSent?: boolean } })._httpMessage?._headerSent === true;
  if (socket.writable && !answering && error.code !== "ECONNRESET") socket.write(answerTo(error));
  socket.destroy();
}

function answerTo(error: Error & { code?: string }): string {
  if (error.code === "ERR_HTTP_REQUEST_TIMEOUT") return "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n";
  return rawErrorResponse(
    error.code === "HPE_HEADER_OVERFLOW"
      ? new ProtocolError("limit-exceeded", `the request's head is larger than ${MAX_REQUEST_HEAD_BYTES} bytes`)
      : new ProtocolError("invalid-message", "the request is not well-formed HTTP/1.1"),
  );
}
