/**
 * A TCP proxy for loopback tests that breaks the network on purpose: one
 * implementation for the cutting proxies, holding proxies, flaky networks,
 * stalling database links and load balancers that several packages' tests
 * need.
 *
 * Each accepted connection reads the client's first chunk (so it can tell a
 * WebSocket upgrade from plain HTTP), asks the plan what to do with it, then
 * connects to the next upstream (round-robin; an upstream that refuses the
 * TCP connection is skipped, as a balancer's health check would) and relays.
 * A plan can refuse the connection, hold the request, cut after a byte budget
 * (reset or silent stall) or hold the upstream's answers after its HTTP head.
 * `pause()` holds every byte and every new connection until `resume()`.
 *
 * Every change (a connection, bytes, a cut, a close) wakes `until()`, so
 * tests wait on what happened, never on a clock.
 *
 * Why one file: the plans, pauses and balancer all act on the same relayed connections; one
 * implementation is what replaced the copies each package's tests had.
 */
import net from "node:net";

/** One node behind the proxy. */
export interface Upstream {
  /** Names the node in `ProxiedConnection.upstreamId`; defaults to the port. */
  readonly id?: string;
  /** Defaults to 127.0.0.1. */
  readonly host?: string;
  readonly port: number;
}

/** What the plan knows when it decides about a connection. */
export interface ConnectionInfo {
  /** 0-based, in accept order. */
  readonly index: number;
  /** The client's first bytes ask for a WebSocket upgrade. */
  readonly webSocket: boolean;
}

/** What the proxy does with one connection; the empty plan relays it untouched. */
export interface ConnectionPlan {
  /** Reset the client at once, reaching no upstream: a network that is down. */
  readonly refuse?: boolean;
  /** Accept the request and never pass it on: it is lost before it reaches the server. */
  readonly holdRequest?: boolean;
  /**
   * Bytes (both directions together) after which the connection is cut; the
   * part of a chunk before the cut point is still delivered, so the cut lands
   * inside a message.
   */
  readonly cutAfter?: number;
  /** `reset` (default): both sides get a RST. `stall`: both stay open and nothing more passes, a silently dead path. */
  readonly cutMode?: "reset" | "stall";
  /**
   * After the upstream's HTTP response head (a `101` for an upgrade), nothing
   * it sends reaches the client, not even its close: answers lost in flight.
   */
  readonly holdAnswers?: boolean;
}

export interface ProxiedConnection extends ConnectionInfo {
  readonly plan: ConnectionPlan;
  /** The upstream it was relayed to; undefined while held, refused, or if no upstream took it. */
  readonly upstreamId: string | undefined;
  /** Bytes relayed, both directions. */
  readonly bytes: number;
  /** Bytes kept from their destination by `holdRequest` or `holdAnswers`. */
  readonly heldBytes: number;
  readonly cut: boolean;
  readonly refused: boolean;
  /** The upstream's socket closed (false while none was opened). */
  readonly upstreamClosed: boolean;
  /** Every socket of the connection is closed. */
  readonly closed: boolean;
}

/** Which side a chunk came from. */
export type Side = "client" | "upstream";

export interface TcpProxy {
  /** `ws://127.0.0.1:<port>`. */
  readonly url: string;
  /** `http://127.0.0.1:<port>`: an origin to load pages from or a base URL for HTTP. */
  readonly origin: string;
  readonly port: number;
  /** Every connection accepted since the start (or the last `forget()`), in order. */
  readonly connections: readonly ProxiedConnection[];
  /** Connections cut so far. */
  readonly cuts: number;
  /** Connections refused so far. */
  readonly refused: number;
  /** Bytes relayed so far, all connections, both directions. */
  readonly bytes: number;
  /** Replaces the rotation (a node leaving or joining); open connections stay. */
  setUpstreams(upstreams: readonly Upstream[]): void;
  /** Decides about connections accepted from now on. */
  setPlan(plan: (connection: ConnectionInfo) => ConnectionPlan | undefined): void;
  /** Cuts every open connection (those `which` selects), as the connection's plan says (reset by default). */
  cutOpen(which?: (connection: ProxiedConnection) => boolean): void;
  /** Holds every byte in both directions and every new connection, as a frozen peer would; nothing is lost. */
  pause(): void;
  /** Delivers what `pause()` held and relays again. */
  resume(): void;
  /** Calls `listener` with every chunk read from either side, relayed or not. */
  tap(listener: (connection: ProxiedConnection, from: Side, chunk: Buffer) => void): void;
  /** Resolves once `predicate()` holds, re-checked on every change the proxy sees. */
  until(predicate: () => boolean): Promise<void>;
  /** Resolves once no socket through the proxy is open. */
  idle(): Promise<void>;
  /** Forgets the connection log and the counters (they start again at 0); open connections stay. */
  forget(): void;
  close(): Promise<void>;
}

export interface TcpProxyOptions {
  /** Nodes behind the proxy, tried round-robin; a URL's host and port, or a list. Settable later with `setUpstreams`. */
  readonly upstream?: string | readonly Upstream[];
  /** Decides about each connection; default: relay everything untouched. */
  readonly plan?: (connection: ConnectionInfo) => ConnectionPlan | undefined;
}

type Connection = { -readonly [K in keyof ProxiedConnection]: ProxiedConnection[K] };

const UPGRADE = /^upgrade:\s*websocket/im;
const HEAD_END = "\r\n\r\n";

function upstreamsOf(upstream: TcpProxyOptions["upstream"]): Upstream[] {
  if (upstream === undefined) return [];
  if (typeof upstream !== "string") return [...upstream];
  const url = new URL(upstream);
  return [{ host: url.hostname, port: Number(url.port) }];
}

export async function startTcpProxy(options: TcpProxyOptions = {}): Promise<TcpProxy> {
  let upstreams = upstreamsOf(options.upstream);
  let next = 0;
  let plan = options.plan ?? (() => undefined);
  let log: Connection[] = [];
  let cuts = 0;
  let refused = 0;
  let bytes = 0;
  let paused = false;
  const sockets = new Set<net.Socket>();
  const kills = new Map<Connection, () => void>();
  /** Work deferred by `pause()`: held chunks and connections waiting to be relayed. */
  let onResume: (() => void)[] = [];
  const taps: ((connection: ProxiedConnection, from: Side, chunk: Buffer) => void)[] = [];
  let waiters: (() => void)[] = [];
  const changed = (): void => {
    for (const check of [...waiters]) check();
  };
  const until = (predicate: () => boolean): Promise<void> =>
    new Promise<void>((resolve) => {
      const check = (): void => {
        if (!predicate()) return;
        waiters = waiters.filter((waiter) => waiter !== check);
        resolve();
      };
      waiters.push(check);
      check();
    });
  const saw = (connection: Connection, from: Side, chunk: Buffer): void => {
    for (const listener of taps) listener(connection, from, chunk);
    changed();
  };
  const track = (socket: net.Socket, connection: Connection, others: () => number): void => {
    sockets.add(socket);
    socket.on("error", () => undefined); // a reset is how these connections end
    socket.on("close", () => {
      sockets.delete(socket);
      if (others() === 0) connection.closed = true;
      changed();
    });
  };

  const server = net.createServer((client) => {
    const open = new Set<net.Socket>([client]);
    const connection: Connection = {
      index: log.length,
      webSocket: false,
      plan: {},
      upstreamId: undefined,
      bytes: 0,
      heldBytes: 0,
      cut: false,
      refused: false,
      upstreamClosed: false,
      closed: false,
    };
    log.push(connection);
    track(client, connection, () => (open.delete(client), open.size));
    changed();
    client.once("data", (first: Buffer) => {
      client.pause();
      connection.webSocket = UPGRADE.test(first.toString("latin1"));
      connection.plan = plan({ index: connection.index, webSocket: connection.webSocket }) ?? {};
      saw(connection, "client", first);
      if (paused) onResume.push(() => decide(client, first, connection, open));
      else decide(client, first, connection, open);
    });
  });

  function decide(client: net.Socket, first: Buffer, connection: Connection, open: Set<net.Socket>): void {
    const { plan: chosen } = connection;
    if (client.destroyed) return;
    if (chosen.refuse === true) {
      connection.refused = true;
      refused++;
      client.resetAndDestroy();
      changed();
      return;
    }
    if (chosen.holdRequest === true) {
      connection.heldBytes += first.length;
      kills.set(connection, () => {
        if (connection.cut || connection.closed) return;
        connection.cut = true;
        cuts++;
        client.resetAndDestroy();
        changed();
      });
      client.on("close", () => kills.delete(connection));
      client.on("data", (chunk: Buffer) => {
        connection.heldBytes += chunk.length;
        saw(connection, "client", chunk);
      });
      client.resume();
      changed();
      return;
    }
    connectUpstream(client, first, connection, open, Math.max(1, upstreams.length));
  }

  function connectUpstream(client: net.Socket, first: Buffer, connection: Connection, open: Set<net.Socket>, attemptsLeft: number): void {
    if (client.destroyed) return;
    if (attemptsLeft === 0 || upstreams.length === 0) {
      client.destroy();
      return;
    }
    const upstream = upstreams[next++ % upstreams.length]!;
    const target = net.connect(upstream.port, upstream.host ?? "127.0.0.1");
    target.once("error", () => {
      target.destroy();
      connectUpstream(client, first, connection, open, attemptsLeft - 1);
    });
    target.once("connect", () => {
      if (client.destroyed) {
        target.destroy();
        return;
      }
      open.add(target);
      track(target, connection, () => ((connection.upstreamClosed = true), open.delete(target), open.size));
      connection.upstreamId = upstream.id ?? String(upstream.port);
      relay(client, target, first, connection);
      client.resume();
      changed();
    });
  }

  function relay(client: net.Socket, target: net.Socket, first: Buffer, connection: Connection): void {
    const { plan: chosen } = connection;
    const stall = chosen.cutMode === "stall";
    const kill = (): void => {
      if (connection.cut || connection.closed) return;
      connection.cut = true;
      cuts++;
      changed();
      if (stall) return; // both sockets stay open and silent
      client.resetAndDestroy();
      target.resetAndDestroy();
    };
    kills.set(connection, kill);
    client.on("close", () => kills.delete(connection));
    const budget = chosen.cutAfter;
    /** Delivers `chunk` to `to` unless the connection is cut, then cuts it if the budget is spent. */
    const pass = (chunk: Buffer, from: net.Socket, to: net.Socket): void => {
      if (connection.cut) return;
      if (paused) {
        onResume.push(() => pass(chunk, from, to));
        return;
      }
      if (budget !== undefined && connection.bytes + chunk.length >= budget) {
        const keep = Math.max(0, budget - connection.bytes);
        connection.bytes += keep;
        bytes += keep;
        if (keep > 0) to.write(chunk.subarray(0, keep), () => kill());
        else kill();
        return;
      }
      connection.bytes += chunk.length;
      bytes += chunk.length;
      if (!to.write(chunk)) {
        from.pause();
        to.once("drain", () => from.resume());
      }
      changed();
    };
    const hold = (chunk: Buffer): void => {
      connection.heldBytes += chunk.length;
      changed();
    };

    // Client → upstream, beginning with the chunk read to make the plan.
    pass(first, client, target);
    client.on("data", (chunk: Buffer) => {
      saw(connection, "client", chunk);
      pass(chunk, client, target);
    });
    client.on("end", () => target.end());
    client.on("close", () => target.destroy());

    // Upstream → client; with `holdAnswers`, only up to the end of the HTTP head.
    let head: Buffer | undefined = chosen.holdAnswers === true ? Buffer.alloc(0) : undefined;
    target.on("data", (chunk: Buffer) => {
      saw(connection, "upstream", chunk);
      if (chosen.holdAnswers !== true) return pass(chunk, target, client);
      if (head === undefined) return hold(chunk);
      const seen = Buffer.concat([head, chunk]);
      const end = seen.indexOf(HEAD_END);
      if (end < 0) {
        head = seen;
        return pass(chunk, target, client);
      }
      const headPart = end + HEAD_END.length - head.length;
      head = undefined;
      pass(chunk.subarray(0, headPart), target, client);
      if (headPart < chunk.length) hold(chunk.subarray(headPart));
    });
    // Held answers hold the upstream's close too: the client must learn nothing.
    if (chosen.holdAnswers !== true) {
      target.on("end", () => client.end());
      target.on("close", () => client.destroy());
    }
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `ws://127.0.0.1:${port}`,
    origin: `http://127.0.0.1:${port}`,
    port,
    get connections() {
      return log;
    },
    get cuts() {
      return cuts;
    },
    get refused() {
      return refused;
    },
    get bytes() {
      return bytes;
    },
    setUpstreams(list) {
      upstreams = [...list];
    },
    setPlan(chosen) {
      plan = chosen;
    },
    cutOpen(which = () => true) {
      for (const [connection, kill] of [...kills]) if (which(connection)) kill();
    },
    pause() {
      paused = true;
    },
    resume() {
      paused = false;
      const deferred = onResume;
      onResume = [];
      for (const work of deferred) work();
    },
    tap(listener) {
      taps.push(listener);
    },
    until,
    idle: () => until(() => sockets.size === 0),
    forget() {
      log = [];
      cuts = 0;
      refused = 0;
      bytes = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A TCP listener that accepts connections and never says a word: a server that hangs before its first reply. */
export async function startSilentListener(): Promise<{ readonly port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
