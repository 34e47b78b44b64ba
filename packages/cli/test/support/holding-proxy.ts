/**
 * A TCP proxy in front of the server that lets a test crash the CLI inside
 * the window between sending a start and processing its acceptance.
 *
 * Plain HTTP (the discovery request) is relayed untouched. On a WebSocket
 * upgrade the proxy either holds everything (`hold: "all"`: the start never
 * reaches the server) or relays the client's bytes and the server's `101`
 * response but holds the server's messages after it (`hold: "answers"`: the
 * server accepts the start, the client never hears of it).
 */
import net from "node:net";

export interface HoldingProxy {
  /** `http://127.0.0.1:<port>`, for `GOLEM_STREAM_URL`. */
  readonly url: string;
  /** WebSocket upgrade requests seen so far. */
  readonly sessions: number;
  /** Bytes of server messages held back from the client so far. */
  readonly heldBytes: number;
  /** Resolves once `predicate()` holds, re-checked whenever the proxy sees traffic. */
  until(predicate: () => boolean): Promise<void>;
  close(): Promise<void>;
}

export async function startHoldingProxy(upstreamUrl: string, hold: "all" | "answers"): Promise<HoldingProxy> {
  const upstream = new URL(upstreamUrl);
  const sockets = new Set<net.Socket>();
  const waiters = new Set<() => void>();
  const changed = (): void => {
    for (const check of [...waiters]) check();
  };
  let sessions = 0;
  let heldBytes = 0;

  const server = net.createServer((client) => {
    sockets.add(client);
    client.on("error", () => undefined);
    client.once("data", (first: Buffer) => {
      const upgrade = /^upgrade:\s*websocket/im.test(first.toString("latin1"));
      if (upgrade) sessions++;
      changed();
      if (upgrade && hold === "all") return; // the start never leaves this proxy
      const target = net.connect(Number(upstream.port), upstream.hostname);
      sockets.add(target);
      target.on("error", () => client.destroy());
      client.on("close", () => target.destroy());
      target.on("close", () => client.destroy());
      target.write(first);
      client.on("data", (chunk: Buffer) => target.write(chunk));
      let headersDone = !upgrade;
      target.on("data", (chunk: Buffer) => {
        if (headersDone) {
          if (upgrade) {
            heldBytes += chunk.length;
            changed();
          } else client.write(chunk);
          return;
        }
        // Relay the upgrade response up to the end of its headers; hold what follows.
        const end = chunk.indexOf("\r\n\r\n");
        if (end < 0) {
          client.write(chunk);
          return;
        }
        headersDone = true;
        client.write(chunk.subarray(0, end + 4));
        heldBytes += chunk.length - end - 4;
        changed();
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get sessions() {
      return sessions;
    },
    get heldBytes() {
      return heldBytes;
    },
    until: (predicate) =>
      new Promise<void>((resolve) => {
        const check = (): void => {
          if (!predicate()) return;
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
        check();
      }),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
