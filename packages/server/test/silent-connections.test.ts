/**
 * Connections that say nothing do not hold the server: a socket that
 * completes the upgrade and sends no first message is closed after
 * `limits.firstMessageTimeoutMs`; one that stops answering pings is dropped
 * after two `limits.pingIntervalMs` and its attachment detaches, so the
 * session's detached timeout starts. A client that answers pings stays, and
 * accepted sockets get TCP keepalive. Short option values; every wait is for
 * an event (a frame, a close, a log line).
 */
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
import { createDemoHost, createSessionServer, Keyring, MemorySessionStore } from "../src/index.js";

const CLOSE = 0x8;

let running: MemoryServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

async function silentCount(server: MemoryServer, reason: string): Promise<number> {
  return sample(await server.server.metrics!.metrics(), "golem_stream_connections_silent_total", { reason });
}

describe("a socket that sends no first message", () => {
  it("is closed with 1002 after firstMessageTimeoutMs, and dropped when it does not answer the close", async () => {
    running = await startMemoryServer({ metrics: true, limits: { firstMessageTimeoutMs: 100 } });
    const quiet = rawUpgrade(running.url, [SUBPROTOCOL], { Authorization: `Bearer ${ALICE}` });
    expect(await quiet.status).toMatch(/^HTTP\/1\.1 101 /);
    const close = await quiet.frame(CLOSE);
    expect(close.payload.readUInt16BE(0)).toBe(1002);
    await quiet.ended;
    expect(await silentCount(running, "first-message")).toBe(1);
  });

  it("a first message in time stops the deadline", async () => {
    running = await startMemoryServer({ limits: { firstMessageTimeoutMs: 100, pingIntervalMs: 20 } });
    const client = await RawClient.connect(running.url, ALICE);
    client.send(demoStart("count", v.record(v.u32(1000), v.u32(1000))));
    await client.nextOf("invocationAccepted");
    // Pings go on past the deadline (10 of them: 200 ms), and the socket stays open.
    await pings(client.socket, 10);
    expect(client.socket.readyState).toBe(WebSocket.OPEN);
    client.socket.close();
  });
});

describe("a peer that stops answering pings", () => {
  it("is dropped after two missed pings; its attachment detaches and the detached timeout starts", async () => {
    const log = recordingLogger();
    running = await startMemoryServer({ metrics: true, logger: log.logger, limits: { pingIntervalMs: 50, detachedSessionTimeoutMs: 100 } });
    const socket = new WebSocket(`${running.url}${SESSION_PATH}`, [SUBPROTOCOL], { headers: { authorization: `Bearer ${ALICE}` }, autoPong: false });
    await new Promise((resolve, reject) => socket.once("open", resolve).once("error", reject));
    const client = new RawClient(socket);
    client.send(demoStart("count", v.record(v.u32(1000), v.u32(1000))));
    await client.nextOf("invocationAccepted");
    const givenUp = log.next("session.given-up");
    expect((await client.closed).code).toBe(1006);
    await givenUp;
    expect(await silentCount(running, "ping")).toBe(1);
  });
});

describe("TCP keepalive", () => {
  it("is turned on for every accepted session socket", async () => {
    const store = new MemorySessionStore();
    const server = createSessionServer({ store, host: createDemoHost(), keyring: Keyring.generate("k1"), authenticator: (t) => (t === ALICE ? { account: "a", principal: "p" } : undefined) });
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
