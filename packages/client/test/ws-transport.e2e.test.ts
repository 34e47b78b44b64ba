/**
 * The `ws` transport against hand-written hostile or refusing peers: what
 * crosses the handshake, and how bad bytes become typed, non-retried errors.
 */
import { createServer, type IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocketServer, type WebSocket } from "ws";
import { SUBPROTOCOL } from "@golem-stream/wire";
import { createClient, wsTransport } from "../src/index.js";
import { echo } from "./support/fixtures.js";

let peer: WebSocketServer | undefined;
afterEach(async () => {
  for (const client of peer?.clients ?? []) client.terminate();
  await new Promise((resolve) => (peer ? peer.close(resolve) : resolve(undefined)));
  peer = undefined;
});

async function startPeer(
  onConnection: (socket: WebSocket, request: IncomingMessage) => void,
  options: Partial<ConstructorParameters<typeof WebSocketServer>[0]> = {},
) {
  peer = new WebSocketServer({
    port: 0,
    host: "127.0.0.1",
    handleProtocols: (set) => (set.has(SUBPROTOCOL) ? SUBPROTOCOL : false),
    ...options,
  });
  await new Promise((resolve) => peer!.once("listening", resolve));
  peer.on("connection", onConnection);
  return `ws://127.0.0.1:${(peer.address() as { port: number }).port}`;
}

const params = { kind: "record", value: { fields: [] } };

describe("ws transport", () => {
  it("sends the bearer token and the subprotocol, without compression, to the session path", async () => {
    let seen: IncomingMessage | undefined;
    const url = await startPeer((socket, request) => {
      seen = request;
      socket.close();
    });
    const tokens = ["first", "second"];
    const client = createClient({ url, getToken: () => tokens.shift() ?? "later", reconnect: { maxAttempts: 0 } });
    await client.invoke({ ...echo, method: "m", methodParameters: params }).finished.catch(() => undefined);
    expect(seen?.url).toBe("/v1/agents/invoke-agent-session");
    expect(seen?.headers.authorization).toBe("Bearer first");
    expect(seen?.headers["sec-websocket-protocol"]).toBe(SUBPROTOCOL);
    expect(seen?.headers["sec-websocket-extensions"]).toBeUndefined();
  });

  it("asks getToken again for every connection", async () => {
    const auth: (string | undefined)[] = [];
    const url = await startPeer((socket, request) => {
      auth.push(request.headers.authorization);
      socket.terminate();
    });
    let n = 0;
    const client = createClient({ url, getToken: () => `token-${n++}`, reconnect: { maxAttempts: 2, random: () => 0 } });
    await expect(client.invoke({ ...echo, method: "m", methodParameters: params }).finished).rejects.toMatchObject({
      kind: "connection-lost",
    });
    expect(auth).toEqual(["Bearer token-0", "Bearer token-1", "Bearer token-2"]);
  });

  it("turns an undecodable server message into a non-retried server-violation", async () => {
    let connections = 0;
    const url = await startPeer((socket) => {
      connections++;
      socket.once("message", () => socket.send('{"version":1,"type":"invocationAccepted","extra":1}'));
    });
    const client = createClient({ url, token: "t", reconnect: { maxAttempts: 3, random: () => 0 } });
    await expect(client.invoke({ ...echo, method: "m", methodParameters: params }).finished).rejects.toMatchObject({
      kind: "server-violation",
      code: "invalid-message",
    });
    expect(connections).toBe(1);
  });

  it("refuses an oversized server message before buffering it (limit-exceeded)", async () => {
    const url = await startPeer((socket) => {
      socket.once("message", () => socket.send(new Uint8Array(17 * 1024 * 1024 + 5)));
    });
    const client = createClient({ url, token: "t", reconnect: { maxAttempts: 3, random: () => 0 } });
    await expect(client.invoke({ ...echo, method: "m", methodParameters: params }).finished).rejects.toMatchObject({
      kind: "server-violation",
      code: "limit-exceeded",
    });
  });

  it("reads the public code from a refused handshake; retryable codes are retried", async () => {
    const url = await startPeer(() => undefined, {
      verifyClient: (_info, done) => done(false, 503, "Service Unavailable", { "content-type": "application/json" }),
    });
    // ws writes its own plain-text body for verifyClient refusals: no envelope, a 5xx → retryable.
    const client = createClient({ url, token: "t", reconnect: { maxAttempts: 1, random: () => 0 } });
    const call = client.invoke({ ...echo, method: "m", methodParameters: params });
    const causes: string[] = [];
    call.on("reconnecting", (event) => causes.push(event.cause));
    await expect(call.finished).rejects.toMatchObject({
      kind: "connection-lost",
      message: expect.stringMatching(/^gave up after 1 reconnect attempt without progress \(last: /),
    });
    expect(causes).toHaveLength(1);
  });

  it.each([
    [400, { code: "unsupported-subprotocol", errors: ["pick golem.agent-invocation.v1"] }, "unsupported-subprotocol"],
    [401, { code: "unauthenticated", error: "who are you" }, "unauthenticated"],
    [418, { code: "not-a-real-code", error: "x" }, "protocol-error"],
  ])("HTTP %i envelope → rejected with %j", async (status, body, code) => {
    const http = createServer();
    http.on("upgrade", (_request, socket) => {
      const text = JSON.stringify(body);
      socket.end(
        `HTTP/1.1 ${status} No\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`,
      );
    });
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    try {
      const client = createClient({
        url: `ws://127.0.0.1:${(http.address() as { port: number }).port}`,
        token: "t",
        reconnect: { maxAttempts: 2, random: () => 0 },
      });
      await expect(client.invoke({ ...echo, method: "m", methodParameters: params }).finished).rejects.toMatchObject({
        kind: "rejected",
        code,
      });
    } finally {
      await new Promise((resolve) => http.close(resolve));
    }
  });

  /** A server that answers every upgrade with `head` and then `body`, one byte per 20 ms and never more than that: never idle. */
  async function trickling(head: string, body: string): Promise<{ url: string; stop: () => Promise<void> }> {
    const http = createServer();
    const timers = new Set<NodeJS.Timeout>();
    const sockets = new Set<Duplex>();
    http.on("upgrade", (_request, socket: Duplex) => {
      sockets.add(socket);
      socket.on("error", () => undefined);
      socket.write(head);
      let at = 0;
      const timer = setInterval(() => {
        if (socket.destroyed) return clearInterval(timer);
        socket.write(body[at % body.length]!);
        at++;
      }, 20);
      timers.add(timer);
    });
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    return {
      url: `ws://127.0.0.1:${(http.address() as { port: number }).port}`,
      stop: async () => {
        for (const timer of timers) clearInterval(timer);
        // Upgraded sockets are no longer the HTTP server's to close.
        for (const socket of sockets) socket.destroy();
        await new Promise((resolve) => http.close(resolve));
      },
    };
  }

  it.each([
    ["the head of a 101, a header line at a time", "HTTP/1.1 101 Switching Protocols\r\n", "x-slow: 1\r\n", "connection-lost"],
    [
      "the body of a 503 refusal",
      "HTTP/1.1 503 No\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n",
      " ",
      "connection-lost",
    ],
  ])("a handshake whose server trickles %s, never idle, is abandoned after handshakeTimeoutMs", async (_what, head, body, kind) => {
    const server = await trickling(head, body);
    try {
      const client = createClient({
        url: server.url,
        token: "t",
        transport: wsTransport({ handshakeTimeoutMs: 300 }),
        reconnect: { maxAttempts: 1, random: () => 0 },
      });
      const call = client.invoke({ ...echo, method: "m", methodParameters: params });
      const causes: string[] = [];
      call.on("reconnecting", (event) => causes.push(event.cause));
      await expect(call.finished).rejects.toMatchObject({ kind });
      // Abandoned each time, and retried once as a connection that may come back.
      expect(causes).toHaveLength(1);
    } finally {
      await server.stop();
    }
  });

  it("reports write backpressure once a megabyte waits for a peer that does not read, and calls back when it has gone", async () => {
    let peerSocket: WebSocket | undefined;
    const url = await startPeer((socket) => {
      peerSocket = socket;
      socket.pause(); // reads nothing: the client's writes pile up in the kernel, then in the client
    });
    const connection = await wsTransport({ keepaliveIntervalMs: 0 }).connect(
      { url: `${url}/v1/agents/invoke-agent-session`, token: "t", signal: new AbortController().signal },
      { onMessage: () => undefined, onClose: () => undefined },
    );
    let drained = false;
    const wake = (): void => void (drained = true);
    expect(connection.congested?.(wake)).toBe(false);
    const value = { kind: "string", value: "x".repeat(64 * 1024) } as const;
    let sent = 0;
    // Each send leaves at once until the kernel's buffers are full; from there they wait in the
    // process, and past a megabyte of them the connection says so. Bounded: 64 MiB at most.
    while (connection.congested?.(wake) !== true && sent < 1024) {
      connection.send({ type: "inputStreamItem", channel: 1, sequence: BigInt(sent), value });
      sent++;
      // A turn now and then lets the socket hand what it can to the kernel.
      if (sent % 16 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    expect(sent).toBeLessThan(1024);
    expect(drained).toBe(false);
    const gone = new Promise<void>((resolve) => {
      const check = (): void => (connection.congested?.(resolve) === false ? resolve() : undefined);
      check();
    });
    peerSocket?.resume();
    await gone;
    expect(drained).toBe(true);
    expect(connection.congested?.(wake)).toBe(false);
    connection.close();
  });
});
