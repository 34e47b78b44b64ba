/**
 * A protocol connection on a bare `ws` socket: records every frame the server
 * under test sends, decoded strictly, and never waits without a deadline (a
 * black-box suite must report a silent server, not hang on it).
 */
import WebSocket from "ws";
import { decodeServerMessage, encodeMessage, SUBPROTOCOL, type ClientMessage, type ServerMessage } from "@golem-stream/wire";
import { sessionEndpoint } from "./endpoint.js";
import { releaseOnAbort } from "./lifetime.js";

export interface Closed {
  readonly code: number;
  readonly reason: string;
}

export interface ConnectOptions {
  readonly token?: string | undefined;
  readonly protocols?: readonly string[];
  readonly timeoutMs: number;
  /**
   * Ends the connection when it aborts, whatever state it is in: still connecting, open or closing.
   * The socket is terminated, not closed, so nothing waits on a server that may never answer.
   */
  readonly signal?: AbortSignal | undefined;
  /** Answer the server's pings (default true, as every WebSocket endpoint must); false: a peer that never does. */
  readonly autoPong?: boolean;
}

/** "silence": a wait ends after the server has sent nothing for the timeout; "total": after the timeout, whatever arrives. */
export type WaitBound = "silence" | "total";

/** Thrown when a wait outlives its deadline; its message says what was awaited. */
export class WaitTimeout extends Error {}

export class Connection {
  readonly socket: WebSocket;
  readonly received: ServerMessage[] = [];
  /** Frames the strict decoder refused, with the reason: a server that sends one is non-conforming. */
  readonly undecodable: string[] = [];
  readonly closed: Promise<Closed>;
  closeInfo: Closed | undefined;
  readonly timeoutMs: number;
  /** WebSocket pings the server has sent. */
  pings = 0;
  #cursor = 0;
  #waiters: (() => void)[] = [];
  /** When the server last sent something (or closed): waits are bounded by silence, not by total time. */
  #lastActivity = Date.now();

  private constructor(socket: WebSocket, timeoutMs: number) {
    this.socket = socket;
    this.timeoutMs = timeoutMs;
    socket.on("message", (data: Buffer, isBinary: boolean) => {
      try {
        this.received.push(decodeServerMessage(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), isBinary));
      } catch (error) {
        this.undecodable.push(`${isBinary ? "binary" : "text"} frame refused by the strict decoder: ${String(error)}`);
      }
      this.#lastActivity = Date.now();
      this.#wake();
    });
    socket.on("error", () => undefined);
    socket.on("ping", () => {
      this.pings++;
      this.#wake();
    });
    this.closed = new Promise((resolve) => {
      socket.on("close", (code, reason) => {
        this.closeInfo = { code, reason: reason.toString() };
        resolve(this.closeInfo);
        this.#wake();
      });
    });
  }

  static async open(url: string, options: ConnectOptions): Promise<Connection> {
    options.signal?.throwIfAborted();
    const headers: Record<string, string> = {};
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    const socket = new WebSocket(sessionEndpoint(url), [...(options.protocols ?? [SUBPROTOCOL])], {
      headers,
      perMessageDeflate: false,
      maxPayload: 64 * 1024 * 1024,
      handshakeTimeout: options.timeoutMs,
      autoPong: options.autoPong ?? true,
    });
    // Bound before the handshake: a socket still connecting when the check ends is the one that would outlive it.
    socket.once(
      "close",
      releaseOnAbort(options.signal, () => socket.terminate()),
    );
    await new Promise<void>((resolve, reject) => {
      socket.once("open", () => resolve());
      socket.once("error", (error) => reject(options.signal?.aborted === true ? options.signal.reason : error));
      socket.once("unexpected-response", (_req, res) => {
        // With this listener ws leaves the refused request (and its TCP connection) to us.
        socket.terminate();
        reject(new Error(`upgrade refused with HTTP ${res.statusCode}`));
      });
    });
    if (socket.protocol !== SUBPROTOCOL) {
      socket.terminate();
      throw new Error(`the server selected subprotocol ${JSON.stringify(socket.protocol)}, not ${SUBPROTOCOL}`);
    }
    return new Connection(socket, options.timeoutMs);
  }

  #wake(): void {
    for (const waiter of this.#waiters.splice(0)) waiter();
  }

  #assertDecodable(): void {
    if (this.undecodable.length > 0) throw new Error(this.undecodable[0]);
  }

  /**
   * Waits for the next frame or close. `deadline` is extended while the
   * server keeps sending: a long stream being read is not a silent server.
   */
  async #wait(what: string, deadline: number, timeoutMs: number, bound: WaitBound = "silence"): Promise<void> {
    const remaining = (bound === "total" ? deadline : Math.max(deadline, this.#lastActivity + timeoutMs)) - Date.now();
    if (remaining <= 0) throw new WaitTimeout(`timed out waiting for ${what} (the server sent nothing for ${timeoutMs} ms)`);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, remaining);
      this.#waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  send(message: ClientMessage): void {
    const data = encodeMessage(message);
    this.socket.send(data, { binary: typeof data !== "string" });
  }

  sendRaw(data: string | Uint8Array, binary = typeof data !== "string"): void {
    this.socket.send(data, { binary });
  }

  /** The next message not yet returned by `next`. */
  async next(what = "a message", timeoutMs = this.timeoutMs): Promise<ServerMessage> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      this.#assertDecodable();
      const message = this.received[this.#cursor];
      if (message !== undefined) {
        this.#cursor++;
        return message;
      }
      if (this.closeInfo !== undefined) throw new Error(`connection closed (${this.closeInfo.code}) while waiting for ${what}`);
      await this.#wait(what, deadline, timeoutMs);
    }
  }

  /** Skips messages until one of `type` arrives. */
  async nextOf<T extends ServerMessage["type"]>(type: T, timeoutMs = this.timeoutMs): Promise<Extract<ServerMessage, { type: T }>> {
    for (;;) {
      const message = await this.next(type, timeoutMs);
      if (message.type === type) return message as Extract<ServerMessage, { type: T }>;
      if (message.type === "invocationRejected" && type !== "invocationRejected") {
        throw new Error(`expected ${type}, got invocationRejected ${message.code}: ${message.message}`);
      }
    }
  }

  /**
   * Waits until some received message satisfies `predicate` (without consuming). With `bound`
   * "total" the wait ends after `timeoutMs` even while other messages keep arriving: for a
   * reaction the server owes promptly (a cancel's end) while a stream is still flowing.
   */
  async waitFor(
    what: string,
    predicate: (message: ServerMessage) => boolean,
    timeoutMs = this.timeoutMs,
    bound: WaitBound = "silence",
  ): Promise<ServerMessage> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      this.#assertDecodable();
      const found = this.received.find(predicate);
      if (found !== undefined) return found;
      if (this.closeInfo !== undefined) throw new Error(`connection closed (${this.closeInfo.code}) while waiting for ${what}`);
      await this.#wait(what, deadline, timeoutMs, bound);
    }
  }

  /** Waits for the close and returns every message received. */
  async all(timeoutMs = this.timeoutMs): Promise<{ messages: ServerMessage[]; closed: Closed }> {
    const deadline = Date.now() + timeoutMs;
    while (this.closeInfo === undefined) await this.#wait("the server to close the connection", deadline, timeoutMs);
    this.#assertDecodable();
    return { messages: this.received, closed: this.closeInfo };
  }

  /**
   * Waits until the server has sent `count` pings in all, or has closed the
   * connection, whichever comes first, for at most `timeoutMs` in all (pings
   * are no messages: silence does not extend this wait). Throws `WaitTimeout`
   * when neither happened.
   */
  async pingsOrClose(count: number, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.pings < count && this.closeInfo === undefined)
      await this.#wait(`${count} pings or a close (saw ${this.pings} pings)`, deadline, timeoutMs, "total");
  }

  close(): void {
    if (this.closeInfo === undefined) this.socket.close();
  }

  terminate(): void {
    this.socket.terminate();
  }
}
