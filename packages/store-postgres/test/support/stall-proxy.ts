/**
 * A TCP proxy in front of the test database that can stall, as a frozen
 * server or a cut network would: while stalled, bytes in both directions are
 * held (not lost) and new connections are accepted but not passed on; on
 * `resume` everything held is delivered. Also a listener that accepts and
 * never answers, for connect timeouts.
 */
import { createServer, connect as connectTcp, type AddressInfo, type Server, type Socket } from "node:net";

export interface StallProxy {
  /** The database URL with the proxy's host and port. */
  readonly url: string;
  stall(): void;
  /** Resolves once, while stalled, bytes a client sent (a query) are held. */
  clientBytesHeld(): Promise<void>;
  resume(): void;
  close(): Promise<void>;
}

export async function stallProxy(databaseUrl: string): Promise<StallProxy> {
  const target = new URL(databaseUrl);
  let stalled = false;
  const flushes = new Set<() => void>();
  const sockets = new Set<Socket>();
  const heldWaiters: (() => void)[] = [];

  /** Forwards `from` to `to`, holding bytes while stalled. */
  const forward = (from: Socket, to: Socket, fromClient: boolean) => {
    const held: Buffer[] = [];
    const flush = () => {
      for (const chunk of held.splice(0)) to.write(chunk);
    };
    flushes.add(flush);
    from.on("data", (chunk: Buffer) => {
      if (!stalled) return void to.write(chunk);
      held.push(chunk);
      if (fromClient) for (const wake of heldWaiters.splice(0)) wake();
    });
    from.on("close", () => {
      flushes.delete(flush);
      to.destroy();
    });
    from.on("error", () => from.destroy());
  };

  const link = (client: Socket) => {
    const upstream = connectTcp(Number(target.port), target.hostname);
    sockets.add(upstream);
    upstream.on("close", () => sockets.delete(upstream));
    forward(client, upstream, true);
    forward(upstream, client, false);
  };

  const waiting: Socket[] = [];
  const server = createServer((client) => {
    sockets.add(client);
    client.on("close", () => sockets.delete(client));
    if (stalled) {
      client.pause();
      waiting.push(client);
    } else link(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = new URL(databaseUrl);
  url.hostname = "127.0.0.1";
  url.port = String((server.address() as AddressInfo).port);
  return {
    url: url.toString(),
    stall: () => {
      stalled = true;
    },
    clientBytesHeld: () => new Promise<void>((resolve) => heldWaiters.push(resolve)),
    resume: () => {
      stalled = false;
      for (const flush of flushes) flush();
      for (const client of waiting.splice(0)) {
        if (client.destroyed) continue;
        link(client);
        client.resume();
      }
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await closeServer(server);
    },
  };
}

/** A TCP listener that accepts connections and never says a word: a server that hangs before the startup reply. */
export async function silentListener(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await closeServer(server);
    },
  };
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}
