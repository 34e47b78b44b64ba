/**
 * The conformance audit's hostile client: a bare `ws` socket that records
 * every frame the server sends and decodes it with the strict client-side
 * decoder, keeping decode failures instead of throwing them (a server that
 * sends something a strict client cannot decode is itself a finding).
 * Also a raw HTTP exchange for handshake checks that `ws` would refuse to
 * make (wrong method, broken key, wrong version).
 */
import { connect } from "node:net";
import WebSocket from "ws";
import {
  decodeServerMessage,
  encodeMessage,
  SESSION_PATH,
  SUBPROTOCOL,
  type ClientMessage,
  type ServerMessage,
} from "@golem-stream/wire";

export const AUDIT_TOKEN = "test-token";

export interface Closed {
  readonly code: number;
  readonly reason: string;
}

export class AuditClient {
  readonly socket: WebSocket;
  readonly received: ServerMessage[] = [];
  /** Frames the strict decoder refused: must stay empty. */
  readonly undecodable: string[] = [];
  readonly closed: Promise<Closed>;
  #cursor = 0;
  #waiters: (() => void)[] = [];

  private constructor(socket: WebSocket) {
    this.socket = socket;
    socket.on("message", (data: Buffer, isBinary: boolean) => {
      try {
        this.received.push(decodeServerMessage(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), isBinary));
      } catch (error) {
        this.undecodable.push(String(error));
      }
      this.#wake();
    });
    // A server that closes abruptly must not crash the test process.
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

  static async connect(url: string, token = AUDIT_TOKEN): Promise<AuditClient> {
    const socket = new WebSocket(`${url}${SESSION_PATH}`, [SUBPROTOCOL], { headers: { authorization: `Bearer ${token}` } });
    await new Promise<void>((resolve, reject) => {
      socket.once("open", () => resolve());
      socket.once("error", reject);
    });
    return new AuditClient(socket);
  }

  send(message: ClientMessage): void {
    const data = encodeMessage(message);
    this.socket.send(data, { binary: typeof data !== "string" });
  }

  sendRaw(data: string | Uint8Array, binary = typeof data !== "string"): void {
    this.socket.send(data, { binary });
  }

  async next(): Promise<ServerMessage> {
    for (;;) {
      const message = this.received[this.#cursor];
      if (message !== undefined) {
        this.#cursor++;
        return message;
      }
      if (this.socket.readyState === WebSocket.CLOSED) throw new Error("socket closed while waiting for a message");
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }

  async nextOf<T extends ServerMessage["type"]>(type: T): Promise<Extract<ServerMessage, { type: T }>> {
    for (;;) {
      const message = await this.next();
      if (message.type === type) return message as Extract<ServerMessage, { type: T }>;
    }
  }

  /** Waits until `predicate` holds for some received message (without consuming). */
  async waitFor(predicate: (message: ServerMessage) => boolean): Promise<ServerMessage> {
    for (;;) {
      const found = this.received.find(predicate);
      if (found !== undefined) return found;
      if (this.socket.readyState === WebSocket.CLOSED) throw new Error("socket closed while waiting for a message");
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }

  async all(): Promise<{ messages: ServerMessage[]; closed: Closed }> {
    const closed = await this.closed;
    return { messages: this.received, closed };
  }

  terminate(): void {
    this.socket.terminate();
  }
}

export interface RawHttpAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/**
 * Sends `head` (request line and headers, without the final blank line) on
 * a fresh TCP connection and reads the answer until the server closes or a
 * complete Content-Length body arrived. A 101 answer is reported with an
 * empty body and the socket is destroyed.
 */
export function rawHttp(httpUrl: string, head: string): Promise<RawHttpAnswer> {
  const { hostname, port } = new URL(httpUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let text = "";
    const finish = (): void => {
      const split = text.indexOf("\r\n\r\n");
      const headText = split < 0 ? text : text.slice(0, split);
      const [statusLine = "", ...lines] = headText.split("\r\n");
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(":");
        if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve({ status: Number(statusLine.split(" ")[1] ?? 0), headers, body: split < 0 ? "" : text.slice(split + 4) });
      socket.destroy();
    };
    socket.on("data", (chunk: Buffer) => {
      text += chunk.toString("latin1");
      const split = text.indexOf("\r\n\r\n");
      if (split < 0) return;
      if (/^HTTP\/1\.1 101/.test(text)) return finish();
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(text.slice(0, split));
      if (length !== null && text.length - split - 4 >= Number(length[1])) finish();
    });
    socket.on("end", finish);
    socket.on("error", reject);
    socket.write(`${head}\r\n\r\n`);
  });
}

/** The request head of an upgrade to the session endpoint, with `overrides` applied (null removes a header). */
export function upgradeHead(httpUrl: string, overrides: Record<string, string | null> = {}, method = "GET", path = SESSION_PATH): string {
  const { host } = new URL(httpUrl);
  const headers: Record<string, string | null> = {
    host,
    connection: "Upgrade",
    upgrade: "websocket",
    "sec-websocket-version": "13",
    "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
    "sec-websocket-protocol": SUBPROTOCOL,
    authorization: `Bearer ${AUDIT_TOKEN}`,
    ...overrides,
  };
  const lines = Object.entries(headers).flatMap(([name, value]) => (value === null ? [] : [`${name}: ${value}`]));
  return [`${method} ${path} HTTP/1.1`, ...lines].join("\r\n");
}
