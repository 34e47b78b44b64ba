/**
 * A protocol client on a bare `ws` socket that records every message the
 * server sends, decoded strictly: for tests of servers (this package's, a
 * cluster's, another implementation's) message by message.
 */
import WebSocket from "ws";
import { decodeServerMessage, encodeMessage, SESSION_PATH, SUBPROTOCOL, type ClientMessage, type ServerMessage } from "@golem-stream/wire";

/** The bearer token the test servers of this package accept. */
export const TEST_TOKEN = "test-token";

export interface Closed {
  readonly code: number;
  readonly reason: string;
}

/**
 * A protocol client on a bare `ws` socket that records every message the
 * server sends, decoded strictly as a real client would. A frame the strict
 * decoder refuses is kept in `undecodable` (a server that sends one is
 * itself a finding) and makes `next`, `nextOf`, `waitFor` and `all` throw.
 */
export class RawClient {
  readonly socket: WebSocket;
  readonly received: ServerMessage[] = [];
  /** Frames the strict decoder refused: must stay empty. */
  readonly undecodable: string[] = [];
  readonly closed: Promise<Closed>;
  #cursor = 0;
  #waiters: (() => void)[] = [];

  constructor(socket: WebSocket) {
    this.socket = socket;
    socket.on("message", (data: Buffer, isBinary: boolean) => {
      try {
        this.received.push(decodeServerMessage(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), isBinary));
      } catch (error) {
        this.undecodable.push(String(error));
      }
      this.#wake();
    });
    // A server that closes abruptly must not crash the test process; `closed` reports it.
    socket.on("error", () => undefined);
    this.closed = new Promise((resolve) => {
      socket.on("close", (code, reason) => {
        resolve({ code, reason: reason.toString() });
        this.#wake();
      });
    });
  }

  #wake(): void {
    for (const waiter of this.#waiters.splice(0)) waiter();
  }

  #checkDecodable(): void {
    if (this.undecodable.length > 0) throw new Error(`the server sent an undecodable frame: ${this.undecodable[0]}`);
  }

  static async connect(url: string, token = TEST_TOKEN): Promise<RawClient> {
    const socket = new WebSocket(`${url}${SESSION_PATH}`, [SUBPROTOCOL], { headers: { authorization: `Bearer ${token}` } });
    await new Promise<void>((resolve, reject) => {
      socket.once("open", () => resolve());
      socket.once("error", reject);
    });
    return new RawClient(socket);
  }

  send(message: ClientMessage): void {
    const data = encodeMessage(message);
    this.socket.send(data, { binary: typeof data !== "string" });
  }

  sendRaw(data: string | Uint8Array, binary = typeof data !== "string"): void {
    this.socket.send(data, { binary });
  }

  /** The next message not yet returned by `next`. */
  async next(): Promise<ServerMessage> {
    for (;;) {
      this.#checkDecodable();
      const message = this.received[this.#cursor];
      if (message !== undefined) {
        this.#cursor++;
        return message;
      }
      if (this.socket.readyState === WebSocket.CLOSED) throw new Error("socket closed while waiting for a message");
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }

  /** Skips messages until one of `type` arrives. */
  async nextOf<T extends ServerMessage["type"]>(type: T): Promise<Extract<ServerMessage, { type: T }>> {
    for (;;) {
      const message = await this.next();
      if (message.type === type) return message as Extract<ServerMessage, { type: T }>;
    }
  }

  /** Waits until `predicate` holds for some received message (without consuming). */
  async waitFor(predicate: (message: ServerMessage) => boolean): Promise<ServerMessage> {
    for (;;) {
      this.#checkDecodable();
      const found = this.received.find(predicate);
      if (found !== undefined) return found;
      if (this.socket.readyState === WebSocket.CLOSED) throw new Error("socket closed while waiting for a message");
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }

  /** Waits for the socket to close and returns every message received. */
  async all(): Promise<{ messages: ServerMessage[]; closed: Closed }> {
    const closed = await this.closed;
    this.#checkDecodable();
    return { messages: this.received, closed };
  }

  close(): void {
    this.socket.close();
  }

  terminate(): void {
    this.socket.terminate();
  }
}
