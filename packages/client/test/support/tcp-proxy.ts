/**
 * A TCP proxy for loopback tests that cuts connections on purpose: each
 * connection may be given a byte budget (both directions counted together)
 * after which both sides are reset mid-stream, like a dying network path.
 */
import net from "node:net";

export interface CuttingProxy {
  /** `ws://127.0.0.1:<port>` pointing at the upstream. */
  readonly url: string;
  /** Connections accepted so far. */
  readonly connections: number;
  /** Connections cut so far. */
  readonly cuts: number;
  /** Bytes relayed so far, both directions, all connections. */
  readonly bytes: number;
  /** Resets every connection open now (both sides), as a dying path would. */
  cutOpen(): void;
  /** Resolves once no relayed socket is open (every connection ended on both sides). */
  idle(): Promise<void>;
  close(): Promise<void>;
}

/**
 * `cutAfter(index)` → bytes after which connection `index` (0-based) is cut, or undefined to leave
 * it alone. `mode: "stall"` stops relaying instead of resetting: a silently dead path, no FIN, no RST.
 */
export async function startCuttingProxy(
  upstreamUrl: string,
  cutAfter: (index: number) => number | undefined,
  mode: "reset" | "stall" = "reset",
): Promise<CuttingProxy> {
  const upstream = new URL(upstreamUrl);
  const sockets = new Set<net.Socket>();
  const kills = new Set<() => void>();
  let idleWaiters: (() => void)[] = [];
  let connections = 0;
  let cuts = 0;
  let bytes = 0;
  const server = net.createServer((client) => {
    const index = connections++;
    const budget = cutAfter(index);
    const target = net.connect(Number(upstream.port), upstream.hostname);
    sockets.add(client).add(target);
    let seen = 0;
    let cut = false;
    const kill = (): void => {
      if (cut) return;
      cut = true;
      cuts++;
      if (mode === "stall") return; // keep both sockets open and silent
      client.resetAndDestroy();
      target.resetAndDestroy();
    };
    const relay = (from: net.Socket, to: net.Socket): void => {
      from.on("data", (chunk: Buffer) => {
        if (cut) return;
        if (budget !== undefined && seen + chunk.length >= budget) {
          // Forward the part before the cut point, then reset: the cut lands inside a message.
          const keep = Math.max(0, budget - seen);
          seen = budget;
          if (keep > 0) to.write(chunk.subarray(0, keep), () => kill());
          else kill();
          return;
        }
        seen += chunk.length;
        bytes += chunk.length;
        if (!to.write(chunk)) {
          from.pause();
          to.once("drain", () => from.resume());
        }
      });
      from.on("end", () => to.end());
      from.on("error", () => to.destroy());
      from.on("close", () => {
        sockets.delete(from);
        to.destroy();
        if (sockets.size === 0) {
          const waiters = idleWaiters;
          idleWaiters = [];
          for (const wake of waiters) wake();
        }
      });
    };
    kills.add(kill);
    client.on("close", () => kills.delete(kill));
    relay(client, target);
    relay(target, client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `ws://127.0.0.1:${port}`,
    get connections() {
      return connections;
    },
    get cuts() {
      return cuts;
    },
    get bytes() {
      return bytes;
    },
    cutOpen: () => {
      for (const kill of [...kills]) kill();
    },
    idle: () => (sockets.size === 0 ? Promise.resolve() : new Promise<void>((resolve) => idleWaiters.push(resolve))),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
