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

  /**
   * Every message once the socket has closed. With `idleMs`, gives up when
   * no message has arrived for that many milliseconds (the deadline moves
   * with every message, so a long stream on a loaded machine is never cut
   * off while it still makes progress), with an error that lists what did
   * arrive (type, channel, sequence), so a hang names the stream that stopped.
   */
  async all(options: { readonly idleMs?: number } = {}): Promise<{ messages: ServerMessage[]; closed: Closed }> {
    const idleMs = options.idleMs;
    if (idleMs === undefined) {
      const closed = await this.closed;
      this.#checkDecodable();
      return { messages: this.received, closed };
    }
    let timer: NodeJS.Timeout | undefined;
    let onMessage: (() => void) | undefined;
    const stalled = new Promise<never>((_, reject) => {
      const arm = (): void => {
        clearTimeout(timer);
        timer = setTimeout(
          () =>
            reject(new Error(`the socket stayed silent for ${idleMs} ms without closing; received: ${describeReceived(this.received)}`)),
          idleMs,
        );
      };
      onMessage = arm;
      arm();
    });
    this.socket.on("message", onMessage!);
    try {
      const closed = await Promise.race([this.closed, stalled]);
      this.#checkDecodable();
      return { messages: this.received, closed };
    } finally {
      clearTimeout(timer);
      this.socket.off("message", onMessage!);
    }
  }

  close(): void {
    this.socket.close();
  }

  terminate(): void {
    this.socket.terminate();
  }
}

/** One line per run of messages of the same type and channel, with their sequences' range. */
function describeReceived(messages: readonly ServerMessage[]): string {
  const runs: string[] = [];
  let last = "";
  let first: string | undefined;
  let latest: string | undefined;
  let count = 0;
  const flush = (): void => {
    if (count > 0) runs.push(`${last} ×${count}${first === undefined ? "" : ` (sequence ${first}..${latest})`}`);
  };
  for (const message of messages) {
    const channel = "channel" in message ? ` channel ${message.channel}` : "";
    const key = `${message.type}${channel}`;
    const sequence = "sequence" in message ? String(message.sequence) : undefined;
    if (key !== last) {
      flush();
      last = key;
      first = sequence;
      count = 0;
    }
    latest = sequence;
    count++;
  }
  flush();
  return runs.length === 0 ? "nothing" : runs.join("; ");
}
