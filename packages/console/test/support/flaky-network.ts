/**
 * The network between the browser and the server, on loopback, made to fail
 * on purpose: a TCP proxy whose WebSocket connections (told apart by their
 * upgrade request) are reset after a byte budget each, and which can go
 * offline (every new connection reset at once) for a while. Plain HTTP
 * (the page, its assets, the catalogue) passes untouched.
 */
import net from "node:net";

export interface FlakyNetwork {
  /** `http://127.0.0.1:<port>`: the origin the page is loaded from. */
  readonly origin: string;
  /** WebSocket connections cut so far. */
  readonly cuts: number;
  /** New connections reset while offline. */
  readonly refused: number;
  setUpstream(port: number): void;
  /** Bytes (both directions) after which WebSocket connection `index` is reset; undefined: never. */
  setBudgets(budget: (index: number) => number | undefined): void;
  /** Offline: every new connection is reset at once; after `ms`, online again. `onCut` runs on each cut. */
  offlineFor(ms: number): void;
  onCut(listener: () => void): void;
  close(): Promise<void>;
}

export async function startFlakyNetwork(): Promise<FlakyNetwork> {
  let upstreamPort = 0;
  let budgetOf: (index: number) => number | undefined = () => undefined;
  let webSockets = 0;
  let cuts = 0;
  let refused = 0;
  let offlineUntil = 0;
  const cutListeners: (() => void)[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    sockets.add(client);
    client.on("close", () => sockets.delete(client));
    client.on("error", () => undefined);
    if (Date.now() < offlineUntil) {
      refused++;
      client.resetAndDestroy();
      return;
    }
    client.once("data", (first: Buffer) => {
      const isWebSocket = /^upgrade:\s*websocket/im.test(first.toString("latin1"));
      const budget = isWebSocket ? budgetOf(webSockets++) : undefined;
      const target = net.connect(upstreamPort, "127.0.0.1");
      sockets.add(target);
      target.on("close", () => sockets.delete(target));
      target.on("error", () => client.destroy());
      client.on("error", () => target.destroy());
      let seen = 0;
      let cut = false;
      const relay = (chunk: Buffer, to: net.Socket): void => {
        if (cut) return;
        seen += chunk.length;
        if (budget !== undefined && seen >= budget) {
          cut = true;
          cuts++;
          client.resetAndDestroy();
          target.resetAndDestroy();
          cutListeners.forEach((listener) => listener());
          return;
        }
        to.write(chunk);
      };
      relay(first, target);
      client.on("data", (chunk: Buffer) => relay(chunk, target));
      target.on("data", (chunk: Buffer) => relay(chunk, client));
      client.on("end", () => target.end());
      target.on("end", () => client.end());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    get cuts() {
      return cuts;
    },
    get refused() {
      return refused;
    },
    setUpstream: (next) => (upstreamPort = next),
    setBudgets: (next) => (budgetOf = next),
    offlineFor: (ms) => (offlineUntil = Date.now() + ms),
    onCut: (listener) => void cutListeners.push(listener),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
