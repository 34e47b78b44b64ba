/**
 * The session endpoint's WebSocket side: `ws` in no-server mode (so the same
 * handler serves the server's own listener and a user's `http.Server`), the
 * checks before an upgrade completes (the server's state, the connection
 * bounds, the handshake, the browser origin, the authentication throttle,
 * the authenticator), and each accepted socket's `Connection`. Per-message
 * compression is never negotiated; `maxPayload` bounds every message before
 * `ws` buffers it.
 */
import type { IncomingMessage } from "node:http";
import { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { WebSocketServer, type RawData, type WebSocket } from "ws";
import { BROWSER_REFUSAL_CLOSE_BASE, ProtocolError, SESSION_PATH, SUBPROTOCOL, httpStatusFor, type EnvelopePool } from "@golem-stream/wire";
import { readWsTextFramesFirst } from "@golem-stream/wire/internal";
import type { SessionRuntime } from "../admission/session-runtime.js";
import { PrincipalSlots } from "../admission/principal-slots.js";
import type { Authenticator, Logger, Principal, ServerLimits } from "../options.js";
import type { ServerObserver } from "../observability/server-observer.js";
import type { Timers } from "../timers.js";
import type { AuthThrottle } from "./auth-throttle.js";
import type { BrowserAccess } from "./browser-access.js";
import { Connection } from "./connection.js";
import { authenticate, checkUpgradeRequest, rejectUpgrade } from "./http-handshake.js";
import { parseRequestUrl } from "./http-routes.js";
import { closeThenDrop, watchLiveness } from "./liveness.js";
import { ReceivingBytes } from "./receiving-bytes.js";
import { WsTransport } from "./ws-transport.js";

export interface SessionEndpointDeps {
  readonly limits: ServerLimits;
  readonly authenticator: Authenticator;
  readonly runtime: SessionRuntime;
  readonly observer: ServerObserver;
  readonly logger: Logger;
  readonly timers: Timers;
  /** Memory of large binary output envelopes, reused across connections. */
  readonly envelopes: EnvelopePool;
  readonly browsers: BrowserAccess | undefined;
  readonly authThrottle: AuthThrottle;
  /** Resolves when the server may take sessions (recovery has run). */
  readonly ready: Promise<void>;
  /** Whether the server is still open, draining (refuses new connections) or closing (takes nothing more). */
  state(): "open" | "draining" | "closing";
}

/**
 * How long `close()` waits for clients to answer its close frame (1001, going
 * away) before it drops the ones that did not: a client told the server is
 * going away reconnects at once, one that only sees the connection vanish
 * (1006) may first wait out its own timeouts.
 */
const CLOSE_GRACE_MS = 1_000;

export class SessionEndpoint {
  readonly #deps: SessionEndpointDeps;
  readonly #wss: WebSocketServer;
  /**
   * Authenticated session sockets, each with its transport: what `limits.maxConnections` counts
   * (a socket refused by a close is not one), and what a close from outside the connection (a
   * drain, a shutdown) closes through, so the small messages its transport framed and has not yet
   * written go before the close frame, as they would have through `ws`.
   */
  readonly #sessions = new Map<WebSocket, WsTransport>();
  /** Session sockets per principal (`limits.maxConnectionsPerPrincipal`). */
  readonly #connectionsPerPrincipal: PrincipalSlots;
  /** Messages still arriving, all sockets together (`limits.maxReceivingBytesPerNode`). */
  readonly #receiving: ReceivingBytes;

  constructor(deps: SessionEndpointDeps) {
    this.#deps = deps;
    const limits = deps.limits;
    this.#connectionsPerPrincipal = new PrincipalSlots(limits.maxConnectionsPerPrincipal, "connections", (limit) =>
      deps.observer.principalLimitReached(limit),
    );
    this.#receiving = new ReceivingBytes(limits.maxReceivingBytesPerNode, (bytes) =>
      deps.logger.warn("closed the session socket receiving the most: the node's sockets were receiving more than they may (1013)", {
        event: "connection.receiving-too-much",
        bytes,
        limit: limits.maxReceivingBytesPerNode,
      }),
    );
    this.#wss = new WebSocketServer({
      noServer: true,
      perMessageDeflate: false,
      // The strict decoder checks UTF-8 itself, so invalid text is answered
      // with invalid-message and 1002 (section 11) rather than ws's bare 1007.
      skipUTF8Validation: true,
      maxPayload: Math.max(limits.maxBinaryMessageBytes, limits.maxTextMessageBytes),
      // Messages are emitted while a chunk is parsed, in order with those read before ws (readWsTextFramesFirst).
      allowSynchronousEvents: true,
      handleProtocols: (protocols) => (protocols.has(SUBPROTOCOL) ? SUBPROTOCOL : false),
      clientTracking: true,
    });
  }

  /**
   * An HTTP upgrade; `owned`: on the server's own listener, where an upgrade to another path is
   * refused rather than left alone. True once `socket` is a session socket (`limits.maxConnections`
   * counts it from then); false when it was refused or left alone.
   */
  async upgrade(request: IncomingMessage, socket: Duplex, head: Buffer, owned: boolean): Promise<boolean> {
    socket.on("error", () => socket.destroy());
    const url = parseRequestUrl(request);
    if (url?.pathname !== SESSION_PATH) {
      if (owned) rejectUpgrade(socket, new ProtocolError("not-found", "no such endpoint"));
      return false;
    }
    const deps = this.#deps;
    try {
      await deps.ready;
      const state = deps.state();
      if (state === "closing") throw new ProtocolError("overloaded", "the server is shutting down");
      if (state === "draining") throw new ProtocolError("overloaded", "the server is draining; connect to another node");
      this.#checkConnectionCount();
      checkUpgradeRequest(request);
      deps.browsers?.checkOrigin(request);
      const address = request.socket.remoteAddress;
      // Before the authenticator runs, and answered over HTTP even to a page: a throttled address gets no socket.
      const admission = await deps.authThrottle.admit(address);
      const viaEntry = deps.browsers?.offersBearerEntry(request) === true;
      let caller;
      try {
        const credential = deps.browsers?.credential(request) ?? { from: "authorization" };
        const token = credential.from === "subprotocol" ? credential.token : undefined;
        caller = await authenticate(request, deps.authenticator, deps.logger, deps.limits.maxCallerIdentityBytes, token);
        admission.settled();
      } catch (error) {
        admission.settled(error);
        // A page cannot read a refused handshake's status: tell it in a close it can read.
        if (viaEntry && error instanceof ProtocolError) {
          this.#refuseByClose(request, socket, head, error);
          return false;
        }
        throw error;
      }
      // Again: other upgrades may have been authenticated meanwhile.
      this.#checkConnectionCount();
      // Held until the TCP socket closes, whether the upgrade completes or not.
      const slot = this.#connectionsPerPrincipal.acquire(caller);
      if (socket.destroyed) {
        slot.release(); // the client left while it was authenticated
        return false;
      }
      socket.once("close", () => slot.release());
      // A peer that vanished without a FIN is found by the kernel even while the server sends nothing.
      if (socket instanceof Socket) socket.setKeepAlive(true, deps.limits.tcpKeepAliveDelayMs);
      // `ws` completes an upgrade at once when, as here, no `verifyClient` runs; a socket it
      // completed later would only stay counted as a pending connection until it closed.
      let session = false;
      this.#wss.handleUpgrade(request, socket, head, (ws) => {
        session = true;
        this.#onSocket(ws, caller, socket);
      });
      return session;
    } catch (error) {
      const failure = error instanceof ProtocolError ? error : new ProtocolError("internal-error", "internal error");
      deps.observer.attachRejected(failure.code, "upgrade");
      rejectUpgrade(socket, failure);
      return false;
    }
  }

  /** Closes every client's socket with `code` (their sessions stay: clients resume elsewhere or later). */
  detachAll(code: number, reason: string): void {
    for (const client of this.#wss.clients) this.#closeSocket(client, code, reason);
  }

  /** Closes every socket with 1001, drops those that do not answer, and stops the WebSocket server. */
  async close(): Promise<void> {
    await closeClients(this.#wss.clients, (client, code, reason) => this.#closeSocket(client, code, reason));
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
  }

  /** Closes `socket` through its session's transport when it has one (see `#sessions`). */
  #closeSocket(socket: WebSocket, code: number, reason: string): void {
    const transport = this.#sessions.get(socket);
    if (transport === undefined) socket.close(code, reason);
    else transport.close(code, reason);
  }

  /** Refuses an upgrade with `overloaded` when `limits.maxConnections` authenticated sockets are open. */
  #checkConnectionCount(): void {
    if (this.#sessions.size >= this.#deps.limits.maxConnections) {
      throw new ProtocolError("overloaded", "the server cannot take more sessions now");
    }
  }

  /**
   * The browser extension's refusal: the upgrade completes (selecting only
   * the protocol's subprotocol) and the socket closes at once with
   * 4000 + the HTTP status, the error code as reason; nothing is read from it.
   * A peer that never answers the close frame is dropped a second later
   * (`closeThenDrop`) instead of after `ws`'s 30 seconds: such sockets cost
   * an attacker nothing, and they are not sessions (never counted in
   * `limits.maxConnections`).
   */
  #refuseByClose(request: IncomingMessage, socket: Duplex, head: Buffer, error: ProtocolError): void {
    this.#deps.observer.attachRejected(error.code, "upgrade");
    this.#wss.handleUpgrade(request, socket, head, (ws) => {
      ws.on("error", () => ws.terminate());
      closeThenDrop(ws, BROWSER_REFUSAL_CLOSE_BASE + httpStatusFor(error.code), error.code, this.#deps.timers);
    });
  }

  #onSocket(ws: WebSocket, caller: Principal, socket: Duplex): void {
    const deps = this.#deps;
    const observer = deps.observer;
    const transport = new WsTransport(
      ws,
      deps.limits.sendHighWaterBytes,
      socket,
      () => observer.backpressure("socket-buffer"),
      deps.envelopes,
    );
    const connection = new Connection(transport, caller, deps.runtime);
    observer.connectionOpened();
    this.#sessions.set(ws, transport);
    const liveness = watchLiveness(ws, deps.limits, deps.timers, (reason) => observer.connectionSilent(reason));
    const onMessage = (data: Uint8Array, isBinary: boolean): void => {
      liveness.heard();
      // While the server closes, nothing more is taken (the runtime is shut down); it was never ACKed.
      if (deps.state() !== "closing") connection.receive(data, isBinary);
    };
    ws.on("message", (data: RawData, isBinary: boolean) => onMessage(toBytes(data, isBinary), isBinary));
    // The client's small text frames (its items) are read before ws, which reads every other frame (docs/protocol/server.md, Socket reads).
    readWsTextFramesFirst(ws, { maxPayloadBytes: deps.limits.maxTextMessageBytes, masked: true, text: (text) => onMessage(text, false) });
    // After the frame reader: it measures what `ws` holds once each chunk has been read.
    this.#receiving.watch(ws);
    ws.on("close", () => {
      this.#sessions.delete(ws);
      observer.connectionClosed();
      connection.transportClosed();
    });
    ws.on("error", (error) => deps.logger.warn("websocket error", { event: "connection.error", error: String(error) }));
  }
}

/** Closes every socket with 1001; those that do not complete the close within `CLOSE_GRACE_MS` are dropped. */
async function closeClients(clients: Iterable<WebSocket>, close: (client: WebSocket, code: number, reason: string) => void): Promise<void> {
  const closing = [...clients].map(
    (client) =>
      new Promise<void>((resolve) => {
        if (client.readyState === client.CLOSED) return resolve();
        client.once("close", () => resolve());
        close(client, 1001, "server shutting down");
      }),
  );
  if (closing.length === 0) return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_GRACE_MS)));
  await Promise.race([Promise.all(closing), grace]);
  clearTimeout(timer);
  for (const client of clients) client.terminate();
}

/**
 * `ws` delivers Buffers; the runtime works on plain Uint8Array views (so
 * `slice` copies). A text message's bytes are only decoded to text, never
 * kept or sliced: its Buffer goes on as it is, with no view made per message.
 */
function toBytes(data: RawData, isBinary: boolean): Uint8Array {
  if (!isBinary && data instanceof Uint8Array) return data;
  if (Array.isArray(data)) {
    const joined = Buffer.concat(data);
    return new Uint8Array(joined.buffer, joined.byteOffset, joined.byteLength);
  }
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}
