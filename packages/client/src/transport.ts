/**
 * The seam between the session runtime and the network. The runtime speaks
 * typed protocol messages; a `Transport` turns them into WebSocket messages
 * (`ws-transport.ts` does so with `ws` and the wire codecs) — or, in tests,
 * hands them to an in-memory server without any bytes at all.
 *
 * A transport owns hostile-input handling: it bounds and decodes every
 * inbound message with `@golem-stream/wire` and reports a decoding failure as
 * a close carrying the `ProtocolError`, never as a message.
 */
import type { ClientMessage, ServerMessage, ProtocolError } from "@golem-stream/wire";

/** What `Transport.connect` is asked to open. */
export interface ConnectRequest {
  /** The session endpoint, `ws://host:port/v1/agents/invoke-agent-session`. */
  readonly url: string;
  /** Bearer token for this connection (authentication repeats on every attach). */
  readonly token: string;
  /** Aborted once the invocation is over (finished, failed, detached): abandon the handshake, drop the socket. */
  readonly signal: AbortSignal;
}

/** How a connection ended, as `ConnectionHandlers.onClose` reports it. */
export interface CloseInfo {
  /** WebSocket close status, 1006 when the connection simply vanished. */
  readonly code: number;
  /** The close frame's reason text ("" when none). */
  readonly reason: string;
  /** Set when this side closed because the server's bytes failed decoding. */
  readonly error?: ProtocolError;
  /**
   * Set when the server refused the connection by closing it before any
   * message (the browser extension's `4000 + HTTP status` close, whose reason
   * is the error code): handled like a handshake refusal with that code.
   */
  readonly refusal?: ProtocolError;
}

/** The runtime's side of a connection: what the transport calls as messages arrive and when it ends. */
export interface ConnectionHandlers {
  /** `wireBytes` is the size of the WebSocket message, charged against the session's byte budget. */
  onMessage(message: ServerMessage, wireBytes: number): void;
  /** Called exactly once, after which no message is delivered. */
  onClose(info: CloseInfo): void;
}

/** One open connection, made by `Transport.connect`. */
export interface Connection {
  /** Queues one protocol message. Messages sent after close are dropped silently. */
  send(message: ClientMessage): void;
  /**
   * Stops delivering inbound messages (and, on a real socket, stops reading
   * it, so TCP pushes back on the server) until `resume()`. A few messages
   * already read may still arrive; the runtime accounts for them.
   */
  pause(): void;
  /** Delivers inbound messages again after `pause()` (those held meanwhile first). */
  resume(): void;
  /** Closes the connection (WebSocket close code and reason); `onClose` follows once. */
  close(code?: number, reason?: string): void;
  /**
   * Write backpressure, for a transport that has it: `true` while more than
   * its high-water mark of sent bytes wait in this process for the network
   * (they are queued, never lost), after arranging for `drained` to be called
   * once they have gone or the connection closed. Input feeders stop pulling
   * their sources meanwhile, so that a source faster than the network waits
   * in the source rather than as frames in memory. Without it, a connection
   * is written to as fast as each stream's unacknowledged-input bound allows.
   */
  congested?(drained: () => void): boolean;
}

/**
 * How the client reaches the server: `wsTransport()` (Node), `webSocketTransport()` (browsers), or
 * your own (`ClientOptions.transport`). It carries typed protocol messages, one connection per attempt.
 */
export interface Transport {
  /**
   * Opens one connection. Rejects with a `ProtocolError` carrying the public
   * code when the server refused the handshake (its HTTP error envelope), with
   * a `ClientError` when no new attempt can succeed (`wsTransport`: the server's
   * TLS certificate refused), which fails the call as it is, and with any other
   * error when the outcome is uncertain (network failure), which is retried.
   */
  connect(request: ConnectRequest, handlers: ConnectionHandlers): Promise<Connection>;
  /**
   * Makes the catalogue request (`client.agent`, `client.connect`): a `GET` of `url` with these
   * headers, answered as the global `fetch` answers. Default: the global `fetch`.
   * `wsTransport` has one that trusts what its sockets trust (`tls`). A `ClientError` it rejects
   * with is the request's failure as it is (`wsTransport`: the server's certificate refused).
   */
  fetch?(url: string, init: CatalogueRequestInit): Promise<Response>;
}

/** What a catalogue request carries: its headers (the bearer token), and the caller's signal. */
export interface CatalogueRequestInit {
  readonly headers: Readonly<Record<string, string>>;
  readonly signal?: AbortSignal;
}
