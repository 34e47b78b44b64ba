/**
 * The TCP proxy against a tiny echo-and-greet upstream on loopback: every cut
 * point, hold and pause does what its doc says, checked from both ends.
 */
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startSilentListener, startTcpProxy, type TcpProxy } from "../src/tcp-proxy.js";

interface Upstream {
  readonly port: number;
  /** Bytes each accepted connection received, in accept order. */
  readonly received: Buffer[][];
  close(): Promise<void>;
}

/** Echoes what it receives; with `answer`, first answers with an HTTP head followed by `answer`. */
async function upstream(answer?: string): Promise<Upstream> {
  const received: Buffer[][] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    const chunks: Buffer[] = [];
    received.push(chunks);
    sockets.add(socket);
    socket.on("error", () => undefined);
    socket.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      if (answer !== undefined && chunks.length === 1) socket.write(`HTTP/1.1 101 Switching Protocols\r\n\r\n${answer}`);
      else socket.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A client connection that records what it reads and how it ended; `until` waits on its events. */
function dial(port: number) {
  const socket = net.connect(port, "127.0.0.1");
  const state = { text: "", ended: false, error: undefined as string | undefined, closed: false };
  let waiters: (() => void)[] = [];
  const changed = (): void => void waiters.forEach((check) => check());
  socket.on("data", (chunk: Buffer) => ((state.text += chunk.toString("latin1")), changed()));
  socket.on("end", () => ((state.ended = true), changed()));
  socket.on("error", (error: NodeJS.ErrnoException) => ((state.error = error.code), changed()));
  socket.on("close", () => ((state.closed = true), changed()));
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
  return { socket, state, until, closed: until(() => state.closed), read: (text: string) => until(() => state.text === text) };
}

const UPGRADE = "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
async function setUp(answer?: string, options: Parameters<typeof startTcpProxy>[0] = {}): Promise<{ proxy: TcpProxy; up: Upstream }> {
  const up = await upstream(answer);
  cleanups.push(() => up.close());
  const proxy = await startTcpProxy({ upstream: `ws://127.0.0.1:${up.port}`, ...options });
  cleanups.push(() => proxy.close());
  return { proxy, up };
}

describe("startTcpProxy", () => {
  it("relays both ways untouched and counts the bytes, telling a WebSocket upgrade from plain HTTP", async () => {
    const { proxy } = await setUp();
    const plain = dial(proxy.port);
    plain.socket.write("GET /x HTTP/1.1\r\n\r\n");
    await plain.read("GET /x HTTP/1.1\r\n\r\n");
    const upgrade = dial(proxy.port);
    upgrade.socket.write(UPGRADE);
    await upgrade.read(UPGRADE);
    expect(proxy.bytes).toBe(2 * 19 + 2 * UPGRADE.length);
    expect(plain.state.text).toBe("GET /x HTTP/1.1\r\n\r\n");
    expect(upgrade.state.text).toBe(UPGRADE);
    expect(proxy.connections.map((c) => c.webSocket)).toEqual([false, true]);
    plain.socket.end();
    upgrade.socket.end();
    await proxy.idle();
    expect(proxy.connections.every((c) => c.closed)).toBe(true);
    expect(proxy.cuts).toBe(0);
  });

  it("cutAfter delivers the bytes before the cut point, then resets both sides", async () => {
    const { proxy, up } = await setUp(undefined, { plan: () => ({ cutAfter: 15 }) });
    const client = dial(proxy.port);
    client.socket.write("0123456789"); // 10 there, 5 of the echo back
    await client.closed;
    expect(client.state.text).toBe("01234");
    // The client may see the reset as an error or as an end, depending on when it reads.
    await proxy.until(() => proxy.connections[0]!.closed);
    expect(Buffer.concat(up.received[0]!).toString()).toBe("0123456789");
    expect(proxy.cuts).toBe(1);
    expect(proxy.connections[0]).toMatchObject({ bytes: 15, cut: true });
  });

  it("a stall cut keeps both sides open and silent", async () => {
    const { proxy, up } = await setUp(undefined, { plan: () => ({ cutAfter: 4, cutMode: "stall" }) });
    const client = dial(proxy.port);
    client.socket.write("ab");
    await proxy.until(() => proxy.cuts === 1);
    client.socket.write("more");
    // The upstream's second chunk would arrive after the first; the proxy sees it and drops it.
    const seen: string[] = [];
    proxy.tap((_c, from, chunk) => void (from === "client" && seen.push(chunk.toString())));
    await proxy.until(() => seen.includes("more"));
    expect(client.state).toMatchObject({ text: "ab", closed: false, error: undefined });
    expect(Buffer.concat(up.received[0]!).toString()).toBe("ab");
    client.socket.destroy();
  });

  it("cutOpen resets the open connections it selects, and only those", async () => {
    const { proxy } = await setUp();
    const first = dial(proxy.port);
    const second = dial(proxy.port);
    first.socket.write("one");
    second.socket.write("two");
    await first.read("one");
    await second.read("two");
    proxy.cutOpen((c) => c.index === 0);
    await first.closed;
    expect(first.state.error).toBe("ECONNRESET");
    expect(second.state.closed).toBe(false);
    expect(proxy.connections.map((c) => c.cut)).toEqual([true, false]);
    second.socket.destroy();
  });

  it("refuse resets the client without reaching an upstream", async () => {
    const { proxy, up } = await setUp(undefined, { plan: () => ({ refuse: true }) });
    const client = dial(proxy.port);
    client.socket.write("hello");
    await client.closed;
    expect(client.state.error).toBe("ECONNRESET");
    expect(proxy.refused).toBe(1);
    expect(up.received).toEqual([]);
  });

  it("holdRequest keeps the client's bytes: no upstream connection is made", async () => {
    const { proxy, up } = await setUp(undefined, { plan: (c) => (c.webSocket ? { holdRequest: true } : undefined) });
    const client = dial(proxy.port);
    client.socket.write(UPGRADE);
    await proxy.until(() => proxy.connections[0]?.heldBytes === UPGRADE.length);
    client.socket.write("xy");
    await proxy.until(() => proxy.connections[0]?.heldBytes === UPGRADE.length + 2);
    expect(up.received).toEqual([]);
    expect(proxy.connections[0]?.upstreamId).toBeUndefined();
    proxy.cutOpen();
    await client.closed;
    expect(client.state).toMatchObject({ text: "", error: "ECONNRESET" });
  });

  it("holdAnswers relays the upstream's HTTP head and holds what follows, and its close", async () => {
    const { proxy, up } = await setUp("answer", { plan: () => ({ holdAnswers: true }) });
    const client = dial(proxy.port);
    client.socket.write(UPGRADE);
    await proxy.until(() => proxy.connections[0]?.heldBytes === "answer".length);
    await client.read("HTTP/1.1 101 Switching Protocols\r\n\r\n");
    expect(client.state.text).toBe("HTTP/1.1 101 Switching Protocols\r\n\r\n");
    expect(Buffer.concat(up.received[0]!).toString()).toBe(UPGRADE);
    await up.close(); // the upstream goes away: the client must not learn it
    await proxy.until(() => proxy.connections[0]!.upstreamClosed);
    // The client's side is still open: what it sends next reaches the proxy (or it learns of a close).
    const seen: string[] = [];
    proxy.tap((_c, from, chunk) => void (from === "client" && seen.push(chunk.toString())));
    client.socket.write("still there?");
    await Promise.race([proxy.until(() => seen.includes("still there?")), client.closed]);
    expect(proxy.connections[0]!.closed).toBe(false);
    expect(client.state).toMatchObject({ ended: false, closed: false });
    client.socket.destroy();
  });

  it("pause holds bytes and new connections; resume delivers everything held, in order", async () => {
    const { proxy, up } = await setUp();
    const early = dial(proxy.port);
    early.socket.write("a");
    await early.read("a");
    const seen: string[] = [];
    proxy.tap((_c, _from, chunk) => void seen.push(chunk.toString()));
    proxy.pause();
    early.socket.write("b");
    const late = dial(proxy.port);
    late.socket.write("late");
    await proxy.until(() => seen.includes("b") && seen.includes("late"));
    early.socket.write("c");
    await proxy.until(() => seen.includes("c"));
    expect(early.state.text).toBe("a");
    expect(up.received).toHaveLength(1);
    proxy.resume();
    await early.read("abc");
    await late.read("late");
    expect(up.received).toHaveLength(2);
    early.socket.destroy();
    late.socket.destroy();
  });

  it("balances across upstreams round-robin, skipping one that refuses the connection", async () => {
    const a = await upstream();
    const b = await upstream();
    const gone = await upstream();
    await gone.close();
    cleanups.push(
      () => a.close(),
      () => b.close(),
    );
    const proxy = await startTcpProxy({
      upstream: [
        { id: "a", port: a.port },
        { id: "gone", port: gone.port },
        { id: "b", port: b.port },
      ],
    });
    cleanups.push(() => proxy.close());
    for (let i = 0; i < 3; i++) {
      const client = dial(proxy.port);
      client.socket.write(`m${i}`);
      await client.read(`m${i}`);
      client.socket.destroy();
    }
    expect(proxy.connections.map((c) => c.upstreamId)).toEqual(["a", "b", "a"]);
    proxy.setUpstreams([{ id: "b", port: b.port }]);
    const last = dial(proxy.port);
    last.socket.write("z");
    await last.read("z");
    expect(proxy.connections.at(-1)?.upstreamId).toBe("b");
    proxy.forget();
    expect([proxy.connections.length, proxy.bytes, proxy.cuts]).toEqual([0, 0, 0]);
    last.socket.destroy();
  });
});

describe("startSilentListener", () => {
  it("accepts connections and never answers", async () => {
    const silent = await startSilentListener();
    const client = dial(silent.port);
    await new Promise<void>((resolve) => client.socket.on("connect", resolve));
    client.socket.write("anyone?");
    await silent.close();
    await client.closed;
    expect(client.state.text).toBe("");
  });
});
