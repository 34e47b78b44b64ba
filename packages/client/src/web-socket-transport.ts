/**
 * The transport over a WHATWG `WebSocket` (browsers, Deno, Bun, Node ≥ 22,
 * undici): what `createClient` uses by default outside Node. Nothing here
 * imports `ws` or a Node built-in.
 *
 * Authentication: a browser cannot set `Authorization` on a WebSocket, so by
 * default the bearer token travels as one extra `Sec-WebSocket-Protocol`
 * entry, `golem-stream.bearer.<base64url>`, which a server must opt in to
 * read (the browser extension, docs/protocol/browser.md). An `open` function
 * may authenticate otherwise (undici and Bun take headers).
 *
 * What such a socket cannot do, and how this transport copes:
 *
 * - It cannot stop reading, so `pause()` only holds decoded messages here;
 *   TCP does not push back. Past `maxHeldBytes` the connection is closed
 *   (a loss: the runtime resumes from its delivered cursors later) rather
 *   than buffering without bound.
 * - It cannot bound a message before allocating it; the size is checked
 *   right after, before decoding.
 * - It does not expose a refused handshake's HTTP status or body. A server
 *   with the browser extension completes such a handshake and closes at once
 *   with 4000 + the HTTP status and the error code as reason, which is
 *   reported as the refusal it is; any other refusal looks like a network
 *   failure and is retried until the reconnect policy gives up.
 * - It cannot send pings: a silently dead path is noticed when the browser
 *   notices it.
 */
import {
  BROWSER_REFUSAL_CLOSE_BASE,
  MAX_BINARY_MESSAGE_BYTES,
  ProtocolError,
  SUBPROTOCOL,
  decodeServerMessage,
  encodeBearerSubprotocol,
  httpStatusFor,
  isErrorCode,
  type ClientMessage,
  type ServerMessage,
} from "@golem-stream/wire";
import { ClientError } from "./errors.js";
import { encodeClientMessage, framesCheckedItems } from "./item-encoding.js";
import { optionsObject, positiveInteger, positiveMs } from "./option-checks.js";
import type { Connection, ConnectionHandlers, ConnectRequest, Transport } from "./transport.js";
import { pageOriginHint } from "./page-origin-hint.js";

/** The part of the WHATWG `WebSocket` interface this transport uses. */
export interface WebSocketLike {
  /** Set to `"arraybuffer"` by the transport: binary messages must arrive as `ArrayBuffer`s. */
  binaryType: string;
  /** The subprotocol the server chose; the transport requires the protocol's. */
  readonly protocol: string;
  /** `1` (OPEN) once open, as the WHATWG constants. */
  readonly readyState: number;
  /** Sends one text or binary message. */
  send(data: string | Uint8Array): void;
  /** Starts the closing handshake. */
  close(code?: number, reason?: string): void;
  /** The socket opened, or failed (an `error` is followed by `close`). */
  addEventListener(type: "open" | "error", listener: () => void): void;
  /** One message: a string or an `ArrayBuffer`. */
  addEventListener(type: "message", listener: (event: { data: unknown }) => void): void;
  /** The socket closed, with its close code and reason. */
  addEventListener(type: "close", listener: (event: { code: number; reason: string }) => void): void;
}

/** Opens a socket for `url` offering `protocol`, authenticated with the bearer `token` as it sees fit. */
export type OpenWebSocket = (url: string, protocol: string, token: string) => WebSocketLike;

/** Options of `webSocketTransport`; each has a default, and an unusable value throws `invalid-argument`. */
export interface WebSocketTransportOptions {
  /**
   * Opens each socket. Default: `new WebSocket(url, [protocol, "golem-stream.bearer.<base64url>"])`
   * with the global `WebSocket`, for a server that accepts the browser extension.
   */
  readonly open?: OpenWebSocket;
  /** Decoded messages held while the runtime paused reading before the connection is dropped, bytes, at least 1. Default 64 MiB. */
  readonly maxHeldBytes?: number;
  /** Largest inbound WebSocket message accepted, bytes, at least 1. Default: the protocol's largest binary message (16 MiB + 64 KiB + 4). */
  readonly maxPayloadBytes?: number;
  /** Abandon a handshake that takes longer, ms, 1 to 2^31 - 1 (then it is a lost connection, retried). Default 10 000. */
  readonly handshakeTimeoutMs?: number;
}

type WebSocketConstructor = new (url: string, protocols: string[]) => WebSocketLike;

const OPEN = 1;
const encoder = new TextEncoder();
/** A WHATWG socket may only close with 1000 or 3000..4999 (it throws otherwise). */
const closable = (code: number): number => (code === 1000 || (code >= 3000 && code <= 4999) ? code : 1000);

/** The global `WebSocket`, if this runtime has one. */
export function globalWebSocket(): WebSocketConstructor | undefined {
  const candidate = (globalThis as { WebSocket?: unknown }).WebSocket;
  return typeof candidate === "function" ? (candidate as WebSocketConstructor) : undefined;
}

/** The default `open`: the global `WebSocket`, the bearer token in its subprotocol entry. */
function openWithBearerEntry(url: string, protocol: string, token: string): WebSocketLike {
  const WebSocket = globalWebSocket();
  if (WebSocket === undefined) {
    throw new ClientError("invalid-argument", "this runtime has no global WebSocket: pass a transport to createClient");
  }
  const entry = encodeBearerSubprotocol(token);
  // Definitive (not retried): no attempt could carry this token.
  if (entry === undefined)
    throw new ProtocolError("unauthenticated", "a bearer token is 1 to 12 KiB of visible ASCII characters", { retryable: false });
  return new WebSocket(url, [protocol, entry]);
}

/**
 * The refusal a server with the browser extension reports by closing an
 * upgraded connection at once (4000 + HTTP status, the error code as reason).
 */
function refusalOf(code: number, reason: string): ProtocolError | undefined {
  if (!isErrorCode(reason) || code !== BROWSER_REFUSAL_CLOSE_BASE + httpStatusFor(reason)) return undefined;
  return new ProtocolError(reason, `the server refused the connection: ${reason}`);
}

/**
 * A transport over a WHATWG `WebSocket` (the global one by default): the default of the browser
 * build, and usable under Node 22 or any runtime that has one. It cannot stop reading a socket or
 * send pings; see the package README for what that means. Throws `invalid-argument` for an
 * unusable option.
 */
export function webSocketTransport(options?: WebSocketTransportOptions): Transport {
  // Checked where given, as wsTransport's: a NaN bound is false against every size (no bound), a negative one true.
  const given = optionsObject(options, "webSocketTransport");
  if (given.open !== undefined && typeof given.open !== "function") throw new ClientError("invalid-argument", "open must be a function");
  const open = given.open ?? openWithBearerEntry;
  const maxHeldBytes = positiveInteger(given.maxHeldBytes, 64 * 1024 * 1024, "maxHeldBytes");
  const maxPayloadBytes = positiveInteger(given.maxPayloadBytes, MAX_BINARY_MESSAGE_BYTES, "maxPayloadBytes");
  const handshakeTimeoutMs = positiveMs(given.handshakeTimeoutMs, 10_000, "handshakeTimeoutMs");
  return {
    connect(request: ConnectRequest, handlers: ConnectionHandlers): Promise<Connection> {
      return new Promise((resolve, reject) => {
        const socket = open(request.url, SUBPROTOCOL, request.token);
        socket.binaryType = "arraybuffer";
        let opened = false;
        let closed = false;
        /** Any message from the server: a refusal close comes before the first one. */
        let heard = false;
        let failure: ProtocolError | undefined;
        let paused = false;
        let heldBytes = 0;
        const held: { message: ServerMessage; bytes: number }[] = [];
        const fail = (error: ProtocolError): void => {
          failure ??= error; // reported with the close, so the runtime fails instead of retrying
          socket.close(1000, error.code);
        };
        const onAbort = (): void => socket.close();
        request.signal.addEventListener("abort", onAbort, { once: true });
        const handshakeTimer = setTimeout(() => {
          if (!opened) socket.close();
        }, handshakeTimeoutMs);

        socket.addEventListener("open", () => {
          clearTimeout(handshakeTimer);
          // From here the runtime closes the connection itself (as with ws-transport).
          request.signal.removeEventListener("abort", onAbort);
          if (socket.protocol !== SUBPROTOCOL) {
            socket.close(1000, "subprotocol");
            reject(new ProtocolError("unsupported-subprotocol", "server did not select golem.agent-invocation.v1"));
            return;
          }
          opened = true;
          resolve(connection);
        });
        socket.addEventListener("error", () => {
          // Uncertain: retried. A browser tells no reason, not even the server's 403 to a page origin it does not allow.
          if (!opened) reject(new Error(`WebSocket connection failed${pageOriginHint()}`));
        });
        socket.addEventListener("message", ({ data }) => {
          if (failure !== undefined || closed) return;
          heard = true;
          const isBinary = typeof data !== "string";
          if (isBinary && !(data instanceof ArrayBuffer)) {
            fail(new ProtocolError("invalid-message", "the WebSocket delivered a binary message that is not an ArrayBuffer"));
            return;
          }
          const bytes = isBinary ? new Uint8Array(data) : encoder.encode(data as string);
          if (bytes.byteLength > maxPayloadBytes) {
            fail(new ProtocolError("limit-exceeded", "server sent a message larger than the protocol allows"));
            return;
          }
          let message: ServerMessage;
          try {
            message = decodeServerMessage(bytes, isBinary);
          } catch (error) {
            fail(error instanceof ProtocolError ? error : new ProtocolError("invalid-message", "undecodable server message"));
            return;
          }
          if (!paused) return handlers.onMessage(message, bytes.byteLength);
          held.push({ message, bytes: bytes.byteLength });
          heldBytes += bytes.byteLength;
          if (heldBytes > maxHeldBytes) socket.close(4008, "client cannot hold more"); // a loss; resumed later
        });
        socket.addEventListener("close", ({ code, reason }) => {
          if (closed) return;
          closed = true;
          clearTimeout(handshakeTimer);
          request.signal.removeEventListener("abort", onAbort);
          if (!opened) return reject(new Error(`connection closed before the handshake completed (${code})`));
          const refusal = heard ? undefined : refusalOf(code, reason);
          handlers.onClose({
            code,
            reason,
            ...(failure === undefined ? {} : { error: failure }),
            ...(refusal === undefined ? {} : { refusal }),
          });
        });

        const connection: Connection = framesCheckedItems({
          send(message: ClientMessage): void {
            if (socket.readyState === OPEN) socket.send(encodeClientMessage(message));
          },
          pause(): void {
            paused = true;
          },
          resume(): void {
            paused = false;
            while (!paused && !closed && held.length > 0 && failure === undefined) {
              const next = held.shift()!;
              heldBytes -= next.bytes;
              handlers.onMessage(next.message, next.bytes);
            }
          },
          close(code = 1000, reason = ""): void {
            socket.close(closable(code), reason.slice(0, 120));
          },
        });
      });
    },
  };
}
