/**
 * An in-memory transport for runtime tests: each connection is a pair of
 * message queues, and every message crosses the real wire codecs
 * (encode, then strict decode), so the runtime is tested against exactly what
 * a socket would carry — without a socket.
 */
import { decodeClientMessage, decodeServerMessage, encodeMessage, type ClientMessage, type ServerMessage } from "@golem-stream/wire";
import type { Connection, ConnectionHandlers, ConnectRequest, Transport } from "../../src/transport.js";

export class MemoryTransport implements Transport {
  readonly connections: ServerSide[] = [];
  /** When set, the next connects fail with this error (one per entry). */
  readonly refusals: Error[] = [];
  #waiters: ((side: ServerSide) => void)[] = [];

  async connect(request: ConnectRequest, handlers: ConnectionHandlers): Promise<Connection> {
    await Promise.resolve();
    const refusal = this.refusals.shift();
    if (refusal !== undefined) throw refusal;
    const side = new ServerSide(request, handlers);
    this.connections.push(side);
    this.#waiters.shift()?.(side);
    return side.connection;
  }

  /** The next connection the client opens (or the latest one not yet taken). */
  nextConnection(): Promise<ServerSide> {
    const taken = this.#taken;
    if (this.connections.length > taken) {
      this.#taken++;
      return Promise.resolve(this.connections[taken]!);
    }
    return new Promise((resolve) => {
      this.#waiters.push((side) => {
        this.#taken++;
        resolve(side);
      });
    });
  }
  #taken = 0;
}

export class ServerSide {
  readonly request: ConnectRequest;
  readonly received: ClientMessage[] = [];
  readonly connection: Connection;
  paused = false;
  closed = false;
  /**
   * When set, the client's close gets no answer (a server that never sends its close frame):
   * the connection stays open until `drop()`.
   */
  unansweredClose = false;
  /** The client asked to close this connection. */
  closeRequested = false;
  /** Messages the server wrote while the client was not reading. */
  readonly #outbox: { message: ServerMessage; bytes: number }[] = [];
  readonly #handlers: ConnectionHandlers;
  #waiter: (() => void) | undefined;
  pauseCount = 0;
  /** While set, the connection reports write backpressure (`Connection.congested`) until `drain()`. */
  congestedNow = false;
  readonly #drainWaiters = new Set<() => void>();

  constructor(request: ConnectRequest, handlers: ConnectionHandlers) {
    this.request = request;
    this.#handlers = handlers;
    this.connection = {
      send: (message) => {
        if (this.closed) return;
        const wire = encodeMessage(message);
        this.received.push(decodeClientMessage(wire, typeof wire !== "string"));
        const wake = this.#waiter;
        this.#waiter = undefined;
        wake?.();
      },
      pause: () => {
        this.paused = true;
        this.pauseCount++;
      },
      resume: () => {
        this.paused = false;
        this.#flush();
      },
      close: () => {
        this.closeRequested = true;
        if (!this.unansweredClose) this.#close(1000);
      },
      congested: (drained) => {
        if (!this.congestedNow) return false;
        this.#drainWaiters.add(drained);
        return true;
      },
    };
  }

  /** The connection's queued writes have gone: what waited on `congested` is called back. */
  drain(): void {
    this.congestedNow = false;
    const waiting = [...this.#drainWaiters];
    this.#drainWaiters.clear();
    for (const wake of waiting) wake();
  }

  /** Sends like a server: through the codec; held while the client has paused reading. */
  send(message: ServerMessage): void {
    if (this.closed) return;
    const wire = encodeMessage(message);
    const decoded = decodeServerMessage(wire, typeof wire !== "string");
    this.#outbox.push({ message: decoded, bytes: typeof wire === "string" ? wire.length : wire.byteLength });
    this.#flush();
  }

  get held(): number {
    return this.#outbox.length;
  }

  /** The server closes with a close frame (or answers the client's). */
  close(code = 1000): void {
    this.#close(code);
  }

  /** The connection vanishes (TCP reset): no close frame, no more messages. */
  drop(): void {
    this.#close(1006);
  }

  /** Waits until the client has sent `count` messages in total on this connection. */
  async waitFor(count: number): Promise<ClientMessage[]> {
    while (this.received.length < count) await new Promise<void>((resolve) => (this.#waiter = resolve));
    return this.received;
  }

  /** Waits for a message matching `predicate` and returns it. */
  async waitUntil<M extends ClientMessage>(predicate: (message: ClientMessage) => message is M): Promise<M>;
  async waitUntil(predicate: (message: ClientMessage) => boolean): Promise<ClientMessage>;
  async waitUntil(predicate: (message: ClientMessage) => boolean): Promise<ClientMessage> {
    for (let seen = 0; ;) {
      while (seen < this.received.length) {
        const message = this.received[seen++]!;
        if (predicate(message)) return message;
      }
      if (this.closed) throw new Error("connection closed while waiting");
      await new Promise<void>((resolve) => (this.#waiter = resolve));
    }
  }

  #flush(): void {
    while (!this.paused && !this.closed && this.#outbox.length > 0) {
      const { message, bytes } = this.#outbox.shift()!;
      this.#handlers.onMessage(message, bytes);
    }
  }

  #close(code: number): void {
    if (this.closed) return;
    this.closed = true;
    const wake = this.#waiter;
    this.#waiter = undefined;
    wake?.();
    this.#handlers.onClose({ code, reason: "" });
  }
}
