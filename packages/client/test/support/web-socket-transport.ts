/**
 * An example `Transport` over any WHATWG-style WebSocket (the `WebSocket`
 * global of Node ≥ 22, undici, Deno, Bun) instead of `ws` — what the README's
 * "Writing a transport" section shows. Tests run it against the real server.
 *
 * What such a socket cannot do, and how this transport copes:
 *
 * - It cannot stop reading, so `pause()` only holds decoded messages here;
 *   TCP does not push back. Past `maxHeldBytes` the connection is closed
 *   (a loss: the runtime resumes from its delivered cursors later) rather
 *   than buffering without bound.
 * - It cannot bound a message before allocating it; the size is checked
 *   right after, before decoding.
 * - It does not expose a refused handshake's HTTP status or body, so a
 *   refusal looks like a network failure and is retried until the reconnect
 *   policy gives up (`connection-lost`, not `rejected`).
 */
import {
  MAX_BINARY_MESSAGE_BYTES,
  ProtocolError,
  SUBPROTOCOL,
  decodeServerMessage,
  encodeMessage,
  type ClientMessage,
  type ServerMessage,
} from "@golem-stream/wire";
import type { Connection, ConnectionHandlers, ConnectRequest, Transport } from "../../src/index.js";

/** The part of the WHATWG `WebSocket` interface this transport uses. */
export interface WebSocketLike {
  binaryType: string;
  readonly protocol: string;
  readonly readyState: number;
  send(data: string | Uint8Array): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: "open" | "error", listener: () => void): void;
  addEventListener(type: "message", listener: (event: { data: unknown }) => void): void;
  addEventListener(type: "close", listener: (event: { code: number; reason: string }) => void): void;
}

/** Opens a socket for `url` offering `protocol`, authenticated with the bearer `token`. */
export type OpenWebSocket = (url: string, protocol: string, token: string) => WebSocketLike;

const OPEN = 1;
const encoder = new TextEncoder();
/** A WHATWG socket may only close with 1000 or 3000..4999 (it throws otherwise). */
const closable = (code: number): number => (code === 1000 || (code >= 3000 && code <= 4999) ? code : 1000);

export function webSocketTransport(open: OpenWebSocket, options: { maxHeldBytes?: number } = {}): Transport {
  const maxHeldBytes = options.maxHeldBytes ?? 64 * 1024 * 1024;
  return {
    connect(request: ConnectRequest, handlers: ConnectionHandlers): Promise<Connection> {
      return new Promise((resolve, reject) => {
        const socket = open(request.url, SUBPROTOCOL, request.token);
        socket.binaryType = "arraybuffer";
        let opened = false;
        let closed = false;
        let failure: ProtocolError | undefined;
        let paused = false;
        let heldBytes = 0;
        const held: { message: ServerMessage; bytes: number }[] = [];
        const fail = (error: ProtocolError): void => {
          failure ??= error; // reported with the close, so the runtime fails instead of retrying
          socket.close(1000, error.code);
        };
        request.signal.addEventListener("abort", () => socket.close(), { once: true });

        socket.addEventListener("open", () => {
          if (socket.protocol !== SUBPROTOCOL) {
            socket.close(1000, "subprotocol");
            reject(new ProtocolError("unsupported-subprotocol", "server did not select golem.agent-invocation.v1"));
            return;
          }
          opened = true;
          resolve(connection);
        });
        socket.addEventListener("error", () => {
          if (!opened) reject(new Error("WebSocket connection failed")); // uncertain: retried
        });
        socket.addEventListener("message", ({ data }) => {
          if (failure !== undefined || closed) return;
          const isBinary = typeof data !== "string";
          const bytes = isBinary ? new Uint8Array(data as ArrayBuffer) : encoder.encode(data);
          if (bytes.byteLength > MAX_BINARY_MESSAGE_BYTES) {
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
          closed = true;
          if (!opened) return reject(new Error(`connection closed before the handshake completed (${code})`));
          handlers.onClose({ code, reason, ...(failure === undefined ? {} : { error: failure }) });
        });

        const connection: Connection = {
          send(message: ClientMessage): void {
            if (socket.readyState === OPEN) socket.send(encodeMessage(message));
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
        };
      });
    },
  };
}
