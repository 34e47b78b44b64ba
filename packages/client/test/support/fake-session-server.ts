/**
 * A scripted session server on loopback: real `ws` sockets, real wire
 * codecs, and nothing else — for servers that misbehave in ways the real one
 * never does (accept then reject, never answer, finish too early). Each
 * connection is handed to the test as a `FakePeer`.
 */
import { WebSocketServer, type WebSocket } from "ws";
import { SUBPROTOCOL, decodeClientMessage, encodeServerMessage, type ClientMessage, type ServerMessage } from "@golem-stream/wire";

export interface FakePeer {
  /** 1 for the first connection. */
  readonly index: number;
  /** Every message received so far, in order. */
  readonly received: ClientMessage[];
  /** The next message not yet taken by `next()`. */
  next(): Promise<ClientMessage>;
  send(message: ServerMessage): void;
  /** Resolves when the socket is closed (by either side). */
  readonly closed: Promise<void>;
  /** The close frame's code and reason, once the socket is closed (1005 when the frame had no code). */
  readonly closedWith: Promise<{ readonly code: number; readonly reason: string }>;
  close(code?: number): void;
}

export interface FakeServer {
  readonly url: string;
  readonly peers: FakePeer[];
  close(): Promise<void>;
}

export async function startFakeServer(onPeer: (peer: FakePeer) => void | Promise<void>): Promise<FakeServer> {
  const server = new WebSocketServer({
    port: 0,
    host: "127.0.0.1",
    handleProtocols: (set) => (set.has(SUBPROTOCOL) ? SUBPROTOCOL : false),
  });
  await new Promise((resolve) => server.once("listening", resolve));
  const peers: FakePeer[] = [];
  server.on("connection", (socket: WebSocket) => {
    const peer = peerOf(socket, peers.length + 1);
    peers.push(peer);
    void Promise.resolve(onPeer(peer)).catch((error: unknown) => {
      // A script that throws is a broken test: make it loud, and end the connection.
      console.error("fake server script failed", error);
      socket.terminate();
    });
  });
  return {
    url: `ws://127.0.0.1:${(server.address() as { port: number }).port}`,
    peers,
    close: async () => {
      for (const client of server.clients) client.terminate();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

function peerOf(socket: WebSocket, index: number): FakePeer {
  const received: ClientMessage[] = [];
  let taken = 0;
  let waiter: (() => void) | undefined;
  socket.on("message", (data, isBinary) => {
    const bytes = Array.isArray(data) ? Buffer.concat(data) : data instanceof ArrayBuffer ? new Uint8Array(data) : data;
    received.push(decodeClientMessage(isBinary ? bytes : bytes.toString("utf8"), isBinary));
    waiter?.();
  });
  const closedWith = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.once("close", (code, reason) => resolve({ code, reason: reason.toString("utf8") })),
  );
  const closed = closedWith.then(() => undefined);
  return {
    index,
    received,
    async next() {
      while (taken >= received.length) await new Promise<void>((resolve) => (waiter = resolve));
      return received[taken++]!;
    },
    send(message) {
      socket.send(encodeServerMessage(message));
    },
    closed,
    closedWith,
    close(code = 1000) {
      socket.close(code);
    },
  };
}
