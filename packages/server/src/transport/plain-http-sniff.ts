/**
 * The first bytes of each connection a TLS listener accepts, looked at
 * before TLS reads them. A client given an `http://` or `ws://` URL for a
 * port that speaks TLS sends a plain HTTP request, which the TLS handshake
 * can only fail by dropping the connection: the client took that for a lost
 * connection and retried (about 12 s with the client's defaults) before
 * giving up without a reason. As nginx does ("The plain HTTP request was sent
 * to HTTPS port"), such a request is answered once, in plain text: 400 in the
 * error envelope, `protocol-error` (wire's `PLAIN_HTTP_ON_TLS_CODE`, which the
 * client and the CLI recognise), telling the caller to use `https://` or
 * `wss://`; then the connection closes. A TLS record (a ClientHello begins
 * with 0x16) and anything else go to TLS as they arrived, to succeed or fail
 * there as before.
 *
 * Bounded as the handshake it stands before: at most `MAX_METHOD_BYTES` + 1
 * bytes are looked at, and kept while undecided (the socket's own chunks are
 * given back to TLS whole, as Node's TLS socket reads what its TCP socket
 * buffered); a connection whose handshake has not completed
 * `deadlineMs` after its accept is destroyed, whether it sent nothing, a few
 * letters of a method, or a ClientHello it never finished, or lingers after
 * the answer (Node's own handshake timeout counts from the hand-over only).
 */
import type { Server as HttpsServer } from "node:https";
import type { Socket } from "node:net";
import { ProtocolError } from "@golem-stream/wire";
import { PLAIN_HTTP_ON_TLS_CODE } from "@golem-stream/wire/internal";
import { rawErrorResponse } from "./http-handshake.js";

/** The first byte of a TLS handshake record (a ClientHello). */
const TLS_HANDSHAKE_RECORD = 0x16;
const SPACE = 0x20;
/** Longest method taken for plain HTTP (`BASELINE-CONTROL`, `UPDATEREDIRECTREF` are among the longest registered). */
export const MAX_METHOD_BYTES = 20;

/** What a connection's first bytes are: a TLS record or anything not HTTP, a plain HTTP request, or too few bytes to tell. */
export type FirstBytes = "tls" | "plain-http" | "undecided";

/**
 * `bytes` as the start of a connection: a method (upper-case letters and `-`, RFC 9110 section 9
 * tokens as registered) followed by a space is plain HTTP; a TLS record, or any other byte where a
 * method's would be, is for TLS.
 */
export function classifyFirstBytes(bytes: Uint8Array): FirstBytes {
  if (bytes.length === 0) return "undecided";
  if (bytes[0] === TLS_HANDSHAKE_RECORD) return "tls";
  const seen = Math.min(bytes.length, MAX_METHOD_BYTES + 1);
  for (let index = 0; index < seen; index++) {
    const byte = bytes[index]!;
    if (byte === SPACE) return index > 0 ? "plain-http" : "tls";
    const methodByte = (byte >= 0x41 && byte <= 0x5a) || byte === 0x2d;
    if (!methodByte) return "tls";
  }
  return bytes.length > MAX_METHOD_BYTES ? "tls" : "undecided";
}

/** The answer to a plain HTTP request on a TLS port. */
export function plainHttpOnTlsError(): ProtocolError {
  return new ProtocolError(
    PLAIN_HTTP_ON_TLS_CODE,
    "this port speaks TLS and a plain HTTP request was sent to it: use https:// (wss:// for sessions) instead of http:// (ws://)",
  );
}

/**
 * Puts the sniff before `server`'s TLS: Node's own connection listeners (the one that wraps each
 * socket in its TLS socket) are taken off and run for a socket once its first bytes are for TLS.
 * Call it before adding connection listeners of one's own. `secured` says whether a socket's
 * handshake has completed (it then stays open past `deadlineMs`).
 */
export function sniffPlainHttpBeforeTls(server: HttpsServer, deadlineMs: number, secured: (socket: Socket) => boolean): void {
  const toTls = server.listeners("connection") as ((this: HttpsServer, socket: Socket) => void)[];
  server.removeAllListeners("connection");
  server.on("connection", (socket: Socket) =>
    sniff(socket, deadlineMs, secured, (sniffed) => {
      for (const listener of toTls) listener.call(server, sniffed);
    }),
  );
}

function sniff(socket: Socket, deadlineMs: number, secured: (socket: Socket) => boolean, toTls: (socket: Socket) => void): void {
  const deadline = setTimeout(() => {
    if (!secured(socket)) socket.destroy();
  }, deadlineMs);
  deadline.unref();
  socket.once("close", () => clearTimeout(deadline));
  /** What was read while undecided: no more than a method and its space. */
  const chunks: Buffer[] = [];
  const onReadable = (): void => {
    for (let chunk: Buffer | null; (chunk = socket.read() as Buffer | null) !== null;) chunks.push(chunk);
    const head = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    const kind = classifyFirstBytes(head);
    if (kind === "undecided") return;
    socket.off("readable", onReadable);
    socket.off("end", onEnd);
    if (kind === "plain-http") {
      answerPlainHttp(socket);
      return;
    }
    socket.off("error", onError);
    // Given back whole: Node's TLS socket reads what its TCP socket holds before anything new.
    socket.unshift(head);
    toTls(socket);
  };
  // Ended before anything could be told: nothing to hand over or answer.
  const onEnd = (): void => void socket.destroy();
  // Until the hand-over, nothing else listens to this socket: a reset must not be an uncaught error.
  const onError = (): void => undefined;
  socket.on("readable", onReadable);
  socket.once("end", onEnd);
  socket.on("error", onError);
}

/**
 * Answers, then reads and drops whatever else the client sends until it closes its side: closing
 * with its request's bytes unread would reset the connection, and a reset can cost the client the
 * answer. The sniff's deadline closes a client that keeps its side open.
 */
function answerPlainHttp(socket: Socket): void {
  socket.end(rawErrorResponse(plainHttpOnTlsError()));
  socket.on("data", () => undefined);
  // The listener's sockets do not stay half open; this one must not either, whatever its settings.
  socket.once("end", () => {
    if (socket.writableFinished) socket.destroy();
    else socket.once("finish", () => socket.destroy());
  });
}
