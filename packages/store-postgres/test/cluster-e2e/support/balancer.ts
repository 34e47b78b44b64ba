/**
 * A test load balancer: a TCP proxy that sends each new connection to the
 * next node, round-robin, and can cut any connection (both sides reset
 * mid-stream, like a dying path). A node that refuses the TCP connection
 * is skipped (the next one is tried), as a balancer's health check would.
 */
import net from "node:net";

export interface Target {
  readonly id: string;
  readonly port: number;
}

export interface RoutedConnection {
  /** 0-based, in accept order. */
  readonly index: number;
  /** The node it was sent to (undefined if no node took it). */
  nodeId: string | undefined;
  /** Bytes relayed, both directions. */
  bytes: number;
  cut: boolean;
  closed: boolean;
}

export interface Balancer {
  /** `ws://127.0.0.1:<port>` */
  readonly url: string;
  readonly connections: readonly RoutedConnection[];
  /** Connections cut so far. */
  readonly cuts: number;
  /** Bytes relayed so far, all connections, both directions. */
  readonly bytes: number;
  /** Replaces the rotation (a node leaving or joining); open connections stay. */
  setTargets(targets: readonly Target[]): void;
  /**
   * `cutAfter(index)` → bytes (both directions) after which connection
   * `index` is reset, or undefined to leave it alone. Applies to new connections.
   */
  setCutPlan(cutAfter: (index: number) => number | undefined): void;
  /** Resets every open connection to `nodeId` (every open one without it). */
  cutOpen(nodeId?: string): void;
  /** Forgets the connection log (counters start again at 0). */
  reset(): void;
  close(): Promise<void>;
}

export async function startBalancer(initial: readonly Target[]): Promise<Balancer> {
  let targets = [...initial];
  let next = 0;
  let cutAfter: (index: number) => number | undefined = () => undefined;
  let log: RoutedConnection[] = [];
  let cuts = 0;
  let bytes = 0;
  const open = new Map<RoutedConnection, () => void>();
  const sockets = new Set<net.Socket>();

  const server = net.createServer((client) => {
    const routed: RoutedConnection = { index: log.length, nodeId: undefined, bytes: 0, cut: false, closed: false };
    log.push(routed);
    const budget = cutAfter(routed.index);
    sockets.add(client);
    client.pause();
    client.on("error", () => undefined);
    let upstream: net.Socket | undefined;
    const kill = (): void => {
      if (routed.cut || routed.closed) return;
      routed.cut = true;
      cuts++;
      client.resetAndDestroy();
      upstream?.resetAndDestroy();
    };
    open.set(routed, kill);
    client.on("close", () => {
      routed.closed = true;
      open.delete(routed);
      sockets.delete(client);
      upstream?.destroy();
    });

    // Round-robin from the next slot; a node that refuses the connection is skipped.
    const tryTarget = (attemptsLeft: number): void => {
      if (client.destroyed) return;
      if (attemptsLeft === 0 || targets.length === 0) {
        client.destroy();
        return;
      }
      const target = targets[next++ % targets.length]!;
      const socket = net.connect(target.port, "127.0.0.1");
      socket.once("error", () => {
        socket.destroy();
        if (upstream === socket) return; // an error after connecting ends the relay below
        tryTarget(attemptsLeft - 1);
      });
      socket.once("connect", () => {
        upstream = socket;
        sockets.add(socket);
        routed.nodeId = target.id;
        socket.on("error", () => client.destroy());
        socket.on("close", () => {
          sockets.delete(socket);
          client.destroy();
        });
        relay(client, socket);
        relay(socket, client);
        client.resume();
      });
    };
    const relay = (from: net.Socket, to: net.Socket): void => {
      from.on("data", (chunk: Buffer) => {
        if (routed.cut) return;
        if (budget !== undefined && routed.bytes + chunk.length >= budget) {
          // Forward the part before the cut point, then reset: the cut lands inside a message.
          const keep = Math.max(0, budget - routed.bytes);
          routed.bytes = budget;
          bytes += keep;
          if (keep > 0) to.write(chunk.subarray(0, keep), () => kill());
          else kill();
          return;
        }
        routed.bytes += chunk.length;
        bytes += chunk.length;
        if (!to.write(chunk)) {
          from.pause();
          to.once("drain", () => from.resume());
        }
      });
      from.on("end", () => to.end());
    };
    tryTarget(Math.max(1, targets.length));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `ws://127.0.0.1:${port}`,
    get connections() {
      return log;
    },
    get cuts() {
      return cuts;
    },
    get bytes() {
      return bytes;
    },
    setTargets(list) {
      targets = [...list];
    },
    setCutPlan(plan) {
      cutAfter = plan;
    },
    cutOpen(nodeId) {
      for (const [routed, kill] of [...open]) if (nodeId === undefined || routed.nodeId === nodeId) kill();
    },
    reset() {
      log = [];
      cuts = 0;
      bytes = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
