/**
 * Connections that say nothing do not hold the server: a socket that
 * completes the upgrade and sends no first message is closed after
 * `limits.firstMessageTimeoutMs`; one that stops answering pings is dropped
 * after two `limits.pingIntervalMs` and its attachment detaches, so the
 * session's detached timeout starts. A client that answers pings stays, and
 * accepted sockets get TCP keepalive. Time moves through `ManualTimers` (the
 * defaults' 30 s pass at once); a client answering pings is run on real
 * timers with a short interval, waiting for its pings as events.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { SESSION_PATH, SUBPROTOCOL } from "@golem-stream/wire";
import { demoStart, RawClient, v } from "./helpers.js";
import { rawUpgrade } from "./support/raw-upgrade.js";
import { ALICE, startMemoryServer, type MemoryServer } from "./support/memory-server.js";
import { recordingLogger } from "./support/recording-logger.js";
import { sample } from "./support/operations.js";
import { createSessionServer, Keyring, MemorySessionStore } from "../src/index.js";
import { createDemoHost } from "../src/demo/index.js";
import { ManualTimers } from "../src/testing/index.js";

const CLOSE = 0x8;
const DEFAULT_MS = 30_000;

let running: MemoryServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

async function silentCount(server: MemoryServer, reason: string): Promise<number> {
  return sample(await server.server.metrics!.metrics(), "golem_stream_connections_silent_total", { reason });
}

describe("a socket that sends no first message", () => {
  it("is closed with 1002 after firstMessageTimeoutMs (default 30 s), and dropped a second later when it does not answer the close", async () => {
    const timers = new ManualTimers();
    running = await startMemoryServer({ metrics: true, timers });
    const quiet = rawUpgrade(running.url, [SUBPROTOCOL], { Authorization: `Bearer ${ALICE}` });
    // The 101 is written after the server took the socket: its deadline is set.
    expect(await quiet.status).toMatch(/^HTTP\/1\.1 101 /);
    timers.advance(DEFAULT_MS - 1);
    expect(await silentCount(running, "first-message")).toBe(0);
    timers.advance(1);
    expect(await silentCount(running, "first-message")).toBe(1);
    const close = await quiet.frame(CLOSE);
    expect(close.payload.readUInt16BE(0)).toBe(1002);
    timers.advance(1000);
    await quiet.ended;
  });
});

describe("a peer that stops answering pings", () => {
  it("is dropped after two missed pings; its attachment detaches and the detached timeout starts", async () => {
    const log = recordingLogger();
    const timers = new ManualTimers();
    running = await startMemoryServer({ metrics: true, logger: log.logger, timers, limits: { detachedSessionTimeoutMs: 60_000 } });
    const socket = new WebSocket(`${running.url}${SESSION_PATH}`, [SUBPROTOCOL], {
      headers: { authorization: `Bearer ${ALICE}` },
      autoPong: false,
    });
    await new Promise((resolve, reject) => socket.once("open", resolve).once("error", reject));
    const client = new RawClient(socket);
    const pinged = new Promise((resolve) => socket.once("ping", resolve));
    client.send(demoStart("count", v.record(v.u32(1000), v.u32(1000))));
    await client.nextOf("invocationAccepted");
    // First ping: sent, unanswered. Second: the first is missed (one). Third: two missed, dropped.
    timers.advance(DEFAULT_MS);
    await pinged;
    timers.advance(DEFAULT_MS);
    expect(await silentCount(running, "ping")).toBe(0);
    const detached = log.next("attach.end");
    timers.advance(DEFAULT_MS);
    expect((await client.closed).code).toBe(1006);
    await detached;
    expect(await silentCount(running, "ping")).toBe(1);
    // The attachment is gone: the session's detached timeout runs, and gives it up.
    const givenUp = log.next("session.given-up");
    timers.advance(60_000);
    await givenUp;
  });
});

describe("a peer that sends messages but answers no ping", () => {
  it("stays connected: every message counts as an answer", async () => {
    const timers = new ManualTimers();
    running = await startMemoryServer({ metrics: true, timers });
    const socket = new WebSocket(`${running.url}${SESSION_PATH}`, [SUBPROTOCOL], {
      headers: { authorization: `Bearer ${ALICE}` },
      autoPong: false,
    });
    await new Promise((resolve, reject) => socket.once("open", resolve).once("error", reject));
    const client = new RawClient(socket);
    client.send(demoStart("tally", v.record(v.stream(randomUUID()))));
    const channel = (await client.nextOf("invocationAccepted")).mappings[0]!.channel;
    // Five pings, none answered; an item after each (a message the server has read, as its ACK
    // shows) keeps the peer alive where two missed pings in a row would drop it.
    for (let sequence = 0; sequence < 5; sequence++) {
      const pinged = new Promise((resolve) => socket.once("ping", resolve));
      timers.advance(DEFAULT_MS);
      await pinged;
      client.send({ type: "inputStreamItem", channel, sequence: BigInt(sequence), value: v.str("alive") });
      expect(await client.nextOf("inputStreamAck")).toMatchObject({ highestContiguousSequence: BigInt(sequence + 1) });
    }
    timers.advance(DEFAULT_MS);
    expect(await silentCount(running, "ping")).toBe(0);
    expect(socket.readyState).toBe(WebSocket.OPEN);
    socket.close();
    await client.closed;
  });
});

describe("a peer that answers pings", () => {
  it("stays connected past its first-message deadline and many pings", async () => {
    running = await startMemoryServer({ limits: { firstMessageTimeoutMs: 100, pingIntervalMs: 20 } });
    const client = await RawClient.connect(running.url, ALICE);
    client.send(demoStart("count", v.record(v.u32(1000), v.u32(1000))));
    await client.nextOf("invocationAccepted");
    // 10 pings, each answered by ws on its own: at least 200 ms, past the deadline, with two misses allowed.
    await pings(client.socket, 10);
    expect(client.socket.readyState).toBe(WebSocket.OPEN);
    client.socket.close();
  });
});

describe("TCP keepalive", () => {
  it("is turned on for every accepted session socket", async () => {
    const store = new MemorySessionStore();
    const server = createSessionServer({
      store,
      host: createDemoHost(),
      keyring: Keyring.generate("k1"),
      authenticator: (t) => (t === ALICE ? { account: "a", principal: "p" } : undefined),
    });
    const http = createServer();
    const keepAlive: unknown[][] = [];
    // Registered before the session server's listener: sees the socket first.
    http.on("upgrade", (_request: IncomingMessage, socket: Socket) => {
      const original = socket.setKeepAlive.bind(socket);
      socket.setKeepAlive = (...args: Parameters<Socket["setKeepAlive"]>) => {
        keepAlive.push(args);
        return original(...args);
      };
    });
    server.attach(http);
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    try {
      const client = await RawClient.connect(`ws://127.0.0.1:${(http.address() as AddressInfo).port}`, ALICE);
      expect(keepAlive).toEqual([[true, 30_000]]);
      client.socket.close();
      await client.closed;
    } finally {
      await server.close();
      await new Promise((resolve) => http.close(resolve));
      await store.close();
    }
  });
});

/** Resolves once the client has received `count` pings (answering them, as `ws` does). */
function pings(socket: WebSocket, count: number): Promise<void> {
  return new Promise((resolve) => {
    let seen = 0;
    const onPing = (): void => {
      if (++seen < count) return;
      socket.off("ping", onPing);
      resolve();
    };
    socket.on("ping", onPing);
  });
}
