/**
 * The Node transport: one `ws` WebSocket per connection, messages encoded and
 * decoded by `@golem-stream/wire`. Inbound bytes are bounded before
 * allocation (`maxPayload`: the largest legal binary message) and decoded
 * strictly; a message that fails decoding closes the socket with the error's
 * close status and is reported through `onClose`, never delivered. Small
 * text messages are framed here (wire's `TextFrameBurst`, masked), a burst
 * of them one socket write; `ws` frames everything else, after them. The
 * server's small text messages are read ahead of `ws` too (wire's
 * `readWsTextFramesFirst`).
 */
import WebSocket from "ws";
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import {
  KiB,
  MAX_BINARY_MESSAGE_BYTES,
  MiB,
  EnvelopePool,
  ProtocolError,
  SUBPROTOCOL,
  decodeServerMessage,
  type ClientMessage,
} from "@golem-stream/wire";
import { readWsTextFramesFirst, TextFrameBurst } from "@golem-stream/wire/internal";
import { errorEnvelope } from "./error-envelope.js";
import type { ClientError } from "./errors.js";
import { plainHttpRefusal, tlsRefusal } from "./tls-refusal.js";
import { catalogueFetch, tlsSettings } from "./ws-tls.js";
import type { WsTlsOptions } from "./ws-tls-options.js";
import { encodeClientMessage, framesCheckedItems } from "./item-encoding.js";
import { integerOption, nonNegativeMs, optionsObject, positiveMs } from "./option-checks.js";
import type { CloseInfo, Connection, ConnectionHandlers, ConnectRequest, Transport } from "./transport.js";

/** Options of `wsTransport`; each has a default, and an unusable value throws `invalid-argument`. */
export interface WsTransportOptions {
  /**
   * Abandon a handshake (a refusal's body included) that takes longer, however busy the server
   * keeps it, ms. Default 10 000. Then it is a lost connection, retried; a refusal whose body did
   * not arrive in time is what its status says (a 5xx retried, any other not).
   */
  readonly handshakeTimeoutMs?: number;
  /**
   * Largest inbound WebSocket message accepted, bytes, 1 to 2^31 - 1 (what `ws` can bound).
   * Default: the protocol's largest binary message (16 MiB + 64 KiB + 4).
   */
  readonly maxPayloadBytes?: number;
  /**
   * A connection that shows no sign of life (no message, no pong) for two intervals is torn
   * down and reported as lost, so a silently dead path (no FIN, no RST) leads to a resume instead
   * of a hang. Default 15 000 ms; 0 disables. Not counted while the client paused reading.
   */
  readonly keepaliveIntervalMs?: number;
  /**
   * Memory kept for the envelopes of large binary messages (64 KiB and more) between sends,
   * shared by the transport's connections: an envelope's buffer is reused once its frame was
   * written instead of allocated anew. Default 4 MiB; 0 allocates every envelope.
   */
  readonly maxPooledSendBytes?: number;
  /**
   * TLS for `wss://` (and the catalogue's `https://`) beyond Node's defaults: `ca`, the certificate
   * authorities to trust instead of Node's (a private CA's certificate, PEM); `cert` and `key`
   * (with `passphrase`), a client certificate for a server or proxy that asks for one;
   * `servername`, the name the server's certificate must carry when the URL's host is not it.
   * Checked at once: PEM that cannot be read throws `invalid-argument` naming the member. Default:
   * Node's certificate authorities (with `NODE_EXTRA_CA_CERTS`), no client certificate. Whatever
   * the settings, a server certificate Node refuses (an unknown CA, expired, not for the URL's
   * host), a server that does not speak TLS, or an `http://` URL of one that does, fails the call or catalogue request at once with
   * `connection-lost`, Node's reason and what to do about it: it is not retried.
   */
  readonly tls?: WsTlsOptions;
}

/** Bound on an HTTP error envelope read from a refused handshake. */
const MAX_ERROR_BODY_BYTES = 64 * KiB;

/** The largest `maxPayloadBytes`: `ws` keeps its `maxPayload` as a 32-bit integer (`| 0`). */
const MAX_PAYLOAD_OPTION_BYTES = 2 ** 31 - 1;

/**
 * The Node transport, over `ws`: the Node build's default. It sends `Authorization`, reads a refused
 * handshake's error envelope, stops reading the socket while the client is paused (TCP pushes back
 * on the server) and pings to find a dead path. Throws `invalid-argument` for an unusable option.
 */
export function wsTransport(options?: WsTransportOptions): Transport {
  const given = optionsObject(options, "wsTransport");
  const handshakeTimeout = positiveMs(given.handshakeTimeoutMs, 10_000, "handshakeTimeoutMs");
  const maxPayload = integerOption(given.maxPayloadBytes, MAX_BINARY_MESSAGE_BYTES, "maxPayloadBytes", 1, MAX_PAYLOAD_OPTION_BYTES);
  // Two intervals of silence end a connection: each must be a timer Node keeps.
  const keepaliveIntervalMs = nonNegativeMs(given.keepaliveIntervalMs, 15_000, "keepaliveIntervalMs");
  const pooled = integerOption(given.maxPooledSendBytes, 4 * MiB, "maxPooledSendBytes", 0, Number.MAX_SAFE_INTEGER);
  const envelopes = new EnvelopePool(pooled);
  const tls = tlsSettings(given.tls);
  return {
    fetch: catalogueFetch(tls),
    connect(request: ConnectRequest, handlers: ConnectionHandlers): Promise<Connection> {
      return new Promise<Connection>((resolve, reject) => {
        const socket = new WebSocket(request.url, SUBPROTOCOL, {
          headers: { Authorization: `Bearer ${request.token}` },
          perMessageDeflate: false,
          maxPayload,
          handshakeTimeout,
          // The strict decoder checks UTF-8 itself, for the frames read before ws as for the rest.
          skipUTF8Validation: true,
          // Messages are emitted while a chunk is parsed, in order with those read before ws (readWsTextFramesFirst).
          allowSynchronousEvents: true,
          ...tls,
        });
        let opened = false;
        let closed = false;
        let decodeError: ProtocolError | undefined;
        const life: Life = { alive: true };
        const onAbort = (): void => socket.terminate();
        request.signal.addEventListener("abort", onAbort, { once: true });
        // `ws`'s own `handshakeTimeout` only fires when the request's socket is idle: a server
        // trickling its answer (a 101's head, a refusal's body) a byte at a time never trips it.
        // The whole handshake, a refusal's body included, has this deadline instead: the socket
        // is torn down, which ends the handshake as a lost connection, or a refusal's body as
        // unreadable (`readErrorEnvelope`'s fallback).
        const deadline = setTimeout(() => socket.terminate(), handshakeTimeout);

        // The TCP socket under the WebSocket, for corking bursts of small messages (connectionOf).
        let tcp: Socket | undefined;
        socket.once("upgrade", (response: IncomingMessage) => {
          tcp = response.socket;
        });
        let refused = false;
        socket.on("unexpected-response", (_req, response) => {
          // The HTTP refusal carries the public code; read it before tearing the socket down.
          refused = true;
          void readErrorEnvelope(response, request.url).then((error) => {
            clearTimeout(deadline);
            reject(error);
            socket.terminate();
          });
        });
        socket.on("error", (error: Error & { code?: string }) => {
          if (!opened) {
            // A refused certificate, or no TLS at all, fails the call at once: retrying cannot help.
            if (!refused) reject(tlsRefusal(error, request.url) ?? error);
            return;
          }
          // After the handshake, ws reports frames it refused to read (oversized, bad UTF-8, bad
          // opcodes) as errors and closes; those are the server's fault, not an uncertain loss.
          if (decodeError === undefined && typeof error.code === "string" && error.code.startsWith("WS_ERR_")) {
            decodeError =
              error.code === "WS_ERR_UNSUPPORTED_MESSAGE_LENGTH"
                ? new ProtocolError("limit-exceeded", "server sent a message larger than the protocol allows", { cause: error })
                : new ProtocolError("invalid-message", "server sent an invalid WebSocket frame", { cause: error });
          }
        });
        socket.on("open", () => {
          request.signal.removeEventListener("abort", onAbort);
          clearTimeout(deadline);
          if (socket.protocol !== SUBPROTOCOL) {
            socket.terminate();
            reject(new ProtocolError("unsupported-subprotocol", "server did not select golem.agent-invocation.v1"));
            return;
          }
          opened = true;
          // Before the socket delivers anything: its small text messages are read ahead of ws.
          readWsTextFramesFirst(socket, { maxPayloadBytes: maxPayload, masked: false, text: (payload) => onMessage(payload, false) });
          resolve(connectionOf(socket, keepaliveIntervalMs, tcp, envelopes, life));
        });
        const onMessage = (bytes: Uint8Array, isBinary: boolean): void => {
          life.alive = true;
          if (closed || decodeError !== undefined) return;
          let message;
          try {
            message = decodeServerMessage(bytes, isBinary);
          } catch (error) {
            decodeError =
              error instanceof ProtocolError ? error : new ProtocolError("invalid-message", "undecodable server message", { cause: error });
            socket.close(decodeError.closeCode, decodeError.code);
            return;
          }
          handlers.onMessage(message, bytes.byteLength);
        };
        socket.on("message", (data, isBinary) => onMessage(toUint8Array(data), isBinary));
        socket.on("close", (code, reason) => {
          if (closed) return;
          closed = true;
          request.signal.removeEventListener("abort", onAbort);
          if (!opened) {
            // A refusal's body may still be read: the deadline stays until it is.
            if (!refused) clearTimeout(deadline);
            if (!refused) reject(new Error(`connection closed before the handshake completed (${code})`));
            return;
          }
          const info: CloseInfo = { code, reason: reason.toString("utf8"), ...(decodeError === undefined ? {} : { error: decodeError }) };
          handlers.onClose(info);
        });
      });
    },
  };
}

/**
 * Messages sent in one burst (until the current tick's work is done) leave in
 * one write per this many bytes, not one system call each: an input feeder
 * sends its items from microtasks, one after another. The bound keeps the
 * server busy while the rest of a long burst is still being encoded.
 */
const CORKED_BYTES_PER_WRITE = 64 * KiB;

/**
 * Bytes queued in this process for one socket past which input feeders stop
 * pulling their sources (`Connection.congested`), as the server's
 * `sendHighWaterBytes` does for its producers. A client faster than its server
 * otherwise held its whole unacknowledged window (8 MiB per stream) as queued
 * frames, and the garbage collector copied them all on every young-generation
 * collection.
 */
const SEND_HIGH_WATER_BYTES = 1024 * KiB;

/** Whether the server showed a sign of life (a message, a pong) since the last keepalive ping: set by every message, however read. */
interface Life {
  alive: boolean;
}

function connectionOf(
  socket: WebSocket,
  keepaliveIntervalMs: number,
  tcp: Socket | undefined,
  envelopes: EnvelopePool,
  life: Life,
): Connection {
  let corked = false;
  let corkedBytes = 0;
  const uncorkNextTick = (): void => {
    corked = false;
    corkedBytes = 0;
    tcp?.uncork();
  };
  // Small text messages (input items, most of all) are framed by this transport, a burst of them
  // one write; the frames reach the socket only while it is open, after ws's close reply none do.
  const frames =
    tcp === undefined
      ? undefined
      : new TextFrameBurst((bytes) => tcp.write(bytes), {
          masked: true,
          backlogged: () => tcp.writableLength > 0,
          schedule: (task) => process.nextTick(task),
          open: () => socket.readyState === WebSocket.OPEN,
        });
  /** `ws` corks around each frame itself; corks nest, so this outer one joins the frames of a burst. */
  const write = (data: string | Uint8Array): void => {
    if (frames !== undefined && typeof data === "string" && TextFrameBurst.fits(data)) {
      frames.add(data);
      return;
    }
    // Whatever ws writes goes after the frames framed before it.
    frames?.flush();
    // A large message is a write of its own anyway: corking it would only delay it.
    if (tcp !== undefined && !corked && data.length < CORKED_BYTES_PER_WRITE) {
      corked = true;
      tcp.cork();
      process.nextTick(uncorkNextTick);
    }
    // A pooled envelope goes back once ws is done with it: the callback comes after the write (or its failure).
    socket.send(data, envelopes.whenWritten(data));
    if (!corked || tcp === undefined) return;
    corkedBytes += data.length;
    if (corkedBytes >= CORKED_BYTES_PER_WRITE) {
      tcp.uncork();
      tcp.cork();
      corkedBytes = 0;
    }
  };
  /** Called once the socket's queued bytes have gone (or it closed): feeders waiting on `congested`. */
  const drainWaiters = new Set<() => void>();
  const drained = (): void => {
    const waiting = [...drainWaiters];
    drainWaiters.clear();
    for (const wake of waiting) wake();
  };
  tcp?.on("drain", drained);
  socket.once("close", drained);
  let paused = false;
  socket.on("pong", () => {
    life.alive = true;
  });
  const keepalive =
    keepaliveIntervalMs > 0
      ? setInterval(() => {
          // While paused we read nothing, pongs included: silence is expected then.
          if (!life.alive && !paused) {
            socket.terminate();
            return;
          }
          life.alive = false;
          socket.ping();
        }, keepaliveIntervalMs)
      : undefined;
  keepalive?.unref();
  socket.once("close", () => clearInterval(keepalive));
  return framesCheckedItems({
    send(message: ClientMessage): void {
      if (socket.readyState !== WebSocket.OPEN) return;
      write(encodeClientMessage(message, envelopes.encodeOptions));
    },
    congested(wake: () => void): boolean {
      // Above the mark, the socket has refused a write (its own mark is lower), so it will emit
      // "drain" once its queue is empty.
      if (tcp === undefined || socket.readyState !== WebSocket.OPEN || socket.bufferedAmount < SEND_HIGH_WATER_BYTES) return false;
      drainWaiters.add(wake);
      return true;
    },
    pause: () => {
      paused = true;
      socket.pause();
    },
    resume: () => {
      paused = false;
      life.alive = true;
      socket.resume();
    },
    close(code = 1000, reason = ""): void {
      if (socket.readyState === WebSocket.CLOSED || socket.readyState === WebSocket.CLOSING) return;
      // The server's close frame ends the handshake (and confirms it read what came before ours):
      // a paused socket would never read it and fall to ws's 30 s close timer instead.
      if (paused) socket.resume();
      // The items sent before the close go before its frame.
      frames?.flush();
      socket.close(code, reason.slice(0, 120));
    },
  });
}

function toUint8Array(data: WebSocket.RawData): Uint8Array {
  if (Array.isArray(data)) return Buffer.concat(data);
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return data;
}

/**
 * Turns a refused handshake into a `ProtocolError` with the server's public
 * code (decisions §5 envelope: `{"code":C,"error":m}` or `{"code":C,"errors":[m]}`).
 * A body that is missing, too large or not an envelope becomes a retryable
 * `internal-error` for 5xx statuses and a definitive `protocol-error` otherwise.
 * A TLS port's envelope refusing the plain request to `url` becomes `plainHttpRefusal`'s `ClientError`.
 */
function readErrorEnvelope(response: IncomingMessage, url: string): Promise<ProtocolError | ClientError> {
  return new Promise((resolve) => {
    const status = response.statusCode ?? 0;
    const chunks: Buffer[] = [];
    let size = 0;
    const fallback = (): ProtocolError =>
      status >= 500
        ? new ProtocolError("internal-error", `handshake failed with HTTP ${status}`, { retryable: true })
        : new ProtocolError("protocol-error", `handshake failed with HTTP ${status}`, { retryable: false });
    response.on("data", (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > MAX_ERROR_BODY_BYTES) {
        response.destroy();
        resolve(fallback());
        return;
      }
      chunks.push(chunk);
    });
    response.on("error", () => resolve(fallback()));
    // Torn down before its end (the handshake's deadline): what arrived is not the whole envelope.
    response.on("close", () => {
      if (!response.complete) resolve(fallback());
    });
    response.on("end", () => {
      const envelope = errorEnvelope(Buffer.concat(chunks), MAX_ERROR_BODY_BYTES);
      const refusal = envelope === undefined ? undefined : new ProtocolError(envelope.code, envelope.message ?? `HTTP ${status}`);
      resolve(refusal === undefined ? fallback() : (plainHttpRefusal(refusal, status, url) ?? refusal));
    });
  });
}
