/**
 * A TCP proxy for loopback tests in which the server's answers get lost: on
 * a muted connection the client's bytes reach the server and the server's
 * `101` reaches the client, but nothing after it — no message, no close
 * frame, no FIN — so the client holds a sent start whose outcome it cannot
 * know. The server's side goes on as if the client heard it (the proxy reads
 * everything it sends). A muted connection stays open until `cutMuted()`
 * resets it; unmuted connections are relayed untouched.
 *
 * Both directions of every connection are decoded, so a test can read what
 * the client sent (was a retry the exact start?) and what the server
 * answered, including answers the client never got (its session token).
 * `startCuttingProxy` (tcp-proxy.ts) cuts by byte count instead.
 */
import net from "node:net";
import { decodeClientMessage, decodeServerMessage, type ClientMessage, type ServerMessage } from "@golem-stream/wire";
import { WsFrameReader, type WsMessage } from "./ws-frames.js";

export interface ProxiedConnection {
  readonly muted: boolean;
  /** What the client sent, decoded, in order. */
  readonly sent: readonly ClientMessage[];
  /** What the server sent, decoded, in order — relayed or, when muted, kept from the client. */
  readonly answered: readonly ServerMessage[];
  /** Both sides of the connection are closed. */
  readonly closed: boolean;
}

export interface MutingProxy {
  /** `ws://127.0.0.1:<port>` pointing at the upstream. */
  readonly url: string;
  /** Every connection accepted so far, in order. */
  readonly connections: readonly ProxiedConnection[];
  /** Resolves once `predicate()` holds, re-checked whenever the proxy sees traffic. */
  until(predicate: () => boolean): Promise<void>;
  /** Resets both sides of every muted connection still open: the client's request was lost in flight. */
  cutMuted(): void;
  /** Resolves once no relayed socket is open (every connection ended on both sides). */
  idle(): Promise<void>;
  /** Closes everything; rejects if some bytes could not be decoded as protocol messages. */
  close(): Promise<void>;
}

/** `mute(index)` decides, when connection `index` (0-based) is accepted, whether it is muted. */
export async function startMutingProxy(upstreamUrl: string, mute: (index: number) => boolean): Promise<MutingProxy> {
  const upstream = new URL(upstreamUrl);
  const sockets = new Set<net.Socket>();
  const connections: ProxiedConnection[] = [];
  const cuts = new Set<() => void>();
  const undecodable: unknown[] = [];
  let waiters: (() => void)[] = [];
  let idleWaiters: (() => void)[] = [];
  const changed = (): void => {
    for (const check of [...waiters]) check();
  };

  const server = net.createServer((client) => {
    const connection = { muted: mute(connections.length), sent: [] as ClientMessage[], answered: [] as ServerMessage[], closed: false };
    const { muted, sent, answered } = connection;
    connections.push(connection);
    const target = net.connect(Number(upstream.port), upstream.hostname);
    let open = 2;
    for (const socket of [client, target]) {
      sockets.add(socket);
      socket.on("error", () => undefined); // a reset is how these connections end
      socket.on("close", () => {
        sockets.delete(socket);
        connection.closed = --open === 0;
        if (sockets.size === 0) {
          const wake = idleWaiters;
          idleWaiters = [];
          for (const resolve of wake) resolve();
        }
        changed();
      });
    }

    const cut = (): void => {
      client.resetAndDestroy();
      target.resetAndDestroy();
    };
    if (muted) {
      cuts.add(cut);
      client.on("close", () => cuts.delete(cut));
    }

    // Client → server: always relayed. Closing the client side closes the server side.
    const fromClient = new UpgradedReader((message) => sent.push(decodeClientMessage(message.data, message.binary)), undecodable);
    client.on("data", (chunk: Buffer) => {
      fromClient.push(chunk);
      target.write(chunk);
      changed();
    });
    client.on("end", () => target.end());
    client.on("close", () => target.destroy());

    // Server → client: the upgrade response always; what follows only when not muted.
    const fromServer = new UpgradedReader((message) => answered.push(decodeServerMessage(message.data, message.binary)), undecodable);
    target.on("data", (chunk: Buffer) => {
      const { head } = fromServer.push(chunk);
      const relay = muted ? head : chunk;
      if (relay.length > 0) client.write(relay);
      changed();
    });
    // A muted path does not carry the server's close either: the client must not learn anything.
    if (!muted) {
      target.on("end", () => client.end());
      target.on("close", () => client.destroy());
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `ws://127.0.0.1:${port}`,
    connections,
    until: (predicate) =>
      new Promise<void>((resolve) => {
        const check = (): void => {
          if (!predicate()) return;
          waiters = waiters.filter((waiter) => waiter !== check);
          resolve();
        };
        waiters.push(check);
        check();
      }),
    cutMuted: () => {
      for (const cut of [...cuts]) cut();
    },
    idle: () => (sockets.size === 0 ? Promise.resolve() : new Promise<void>((resolve) => idleWaiters.push(resolve))),
    close: () =>
      new Promise<void>((resolve, reject) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => (undecodable.length === 0 ? resolve() : reject(new AggregateError(undecodable, "the proxy saw undecodable messages"))));
      }),
  };
}

/**
 * One direction of a connection: the HTTP upgrade head up to its blank line,
 * then WebSocket messages, each handed to `onMessage`. A decoding failure is
 * recorded, not thrown: it belongs to the test, not to a socket callback.
 */
class UpgradedReader {
  readonly #onMessage: (message: WsMessage) => void;
  readonly #failures: unknown[];
  readonly #frames = new WsFrameReader();
  #head: Buffer | undefined = Buffer.alloc(0);
  /** False after a refused upgrade: what follows the head is an HTTP body, not frames. */
  #framesFollow = true;

  constructor(onMessage: (message: WsMessage) => void, failures: unknown[]) {
    this.#onMessage = onMessage;
    this.#failures = failures;
  }

  /** Returns the part of `chunk` that belongs to the HTTP head (relayed even on a muted path). */
  push(chunk: Buffer): { head: Buffer } {
    let head: Buffer = Buffer.alloc(0);
    let rest: Buffer = chunk;
    if (this.#head !== undefined) {
      const seen = Buffer.concat([this.#head, chunk]);
      const end = seen.indexOf("\r\n\r\n");
      if (end < 0) {
        this.#head = seen;
        return { head: chunk };
      }
      const headLength = end + 4 - this.#head.length;
      const firstLine = seen.subarray(0, seen.indexOf("\r\n")).toString("latin1");
      this.#framesFollow = firstLine.startsWith("GET ") || / 101 /.test(firstLine);
      this.#head = undefined;
      head = chunk.subarray(0, headLength);
      rest = chunk.subarray(headLength);
    }
    if (!this.#framesFollow) return { head };
    try {
      for (const message of this.#frames.push(rest)) this.#onMessage(message);
    } catch (error) {
      this.#failures.push(error);
    }
    return { head };
  }
}
