/** Loopback test helpers: a temporary embedded server and a raw `ws` protocol client. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import WebSocket from "ws";
import {
  decodeServerMessage,
  encodeMessage,
  SESSION_PATH,
  SUBPROTOCOL,
  type ClientMessage,
  type InvocationStart,
  type ServerMessage,
  type SchemaValueJson,
} from "@golem-stream/wire";
import { startEmbeddedServer, type EmbeddedServer, type EmbeddedServerOptions } from "../src/index.js";

export const TOKEN = "test-token";

export interface TestServer extends EmbeddedServer {
  readonly dataDir: string;
  /** Closes the server and deletes its data directory. */
  dispose(): Promise<void>;
}

export async function startTestServer(options: Partial<EmbeddedServerOptions> = {}): Promise<TestServer> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "golem-stream-server-"));
  const server = await startEmbeddedServer({ tokens: [TOKEN, "other-token"], synchronous: "normal", ...options, dataDir });
  return {
    ...server,
    dataDir,
    dispose: async () => {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

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

  static async connect(url: string, token = TOKEN): Promise<RawClient> {
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

export const v = {
  str: (value: string): SchemaValueJson => ({ kind: "string", value }),
  u32: (value: number): SchemaValueJson => ({ kind: "u32", value }),
  record: (...fields: SchemaValueJson[]): SchemaValueJson => ({ kind: "record", value: { fields: fields as never } }),
  stream: (provisionalRef: string): SchemaValueJson => ({ kind: "stream", value: { provisionalRef } }),
};

export function demoStart(method: string, methodParameters: SchemaValueJson, overrides: Partial<InvocationStart> = {}): InvocationStart {
  return {
    type: "invocationStart",
    attemptId: randomUUID(),
    config: [],
    idempotencyKey: randomUUID(),
    methodParameters,
    selector: {
      agentType: "echo",
      application: "demo",
      constructorParameters: v.record(v.str("test")),
      environment: "default",
      method,
    },
    ...overrides,
  };
}

/** Items of a value output stream, in order, from a message log. */
export function outputValues(messages: readonly ServerMessage[], channel: number): SchemaValueJson[] {
  return messages.flatMap((m) => (m.type === "outputStreamItem" && m.channel === channel ? [m.value] : []));
}

/**
 * Polls `read` every 10 ms until it returns the same value `stableRounds`
 * times in a row, and returns it: how a test waits for a bound (a queue
 * that stopped growing) without asserting any timing.
 */
export async function settle(read: () => number, stableRounds = 15): Promise<number> {
  let last = -1;
  let stable = 0;
  while (stable < stableRounds) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    const value = read();
    stable = value === last ? stable + 1 : 0;
    last = value;
  }
  return last;
}
