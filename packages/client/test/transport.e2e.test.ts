/**
 * The runtime over a transport that is not `wsTransport()`: the shipped
 * transport for WHATWG-style WebSockets, against the real server on
 * loopback — plain calls, many MiB each way, backpressure without a socket
 * that can pause, and TCP cuts. It runs over `ws` used only through its
 * WHATWG surface, and over the `WebSocket` global where the runtime has one
 * (Node ≥ 22, or Node 20 with `--experimental-websocket`).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WsWebSocket from "ws";
import { createClient, inputStream, webSocketTransport, type Client, type Transport, type WebSocketLike } from "../src/index.js";
import { collect, demo, fieldsOf, firstStream, randomChunks, record, sha256, u32 } from "./support/demo.js";
import { startServer, TOKEN } from "./support/embedded.js";
import { startTcpProxy } from "@golem-stream/test-support";

let server: Awaited<ReturnType<typeof startServer>>;
beforeAll(async () => void (server = await startServer()));
afterAll(async () => server.dispose());

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const GlobalWebSocket = (globalThis as { WebSocket?: new (url: string, init: object) => WebSocketLike }).WebSocket;

type MakeTransport = (options?: { maxHeldBytes?: number }) => Transport;
const implementations: [string, MakeTransport | undefined][] = [
  [
    "ws through its WHATWG surface",
    (options) =>
      webSocketTransport({
        open: (url, protocol, token) => new WsWebSocket(url, protocol, { headers: bearer(token) }) as unknown as WebSocketLike,
        ...options,
      }),
  ],
  // undici (the global of Node ≥ 22) takes headers in its init object.
  [
    "the WebSocket global",
    GlobalWebSocket &&
      ((options) =>
        webSocketTransport({
          open: (url, protocol, token) => new GlobalWebSocket(url, { protocols: [protocol], headers: bearer(token) }),
          ...options,
        })),
  ],
];

describe.each(implementations)("%s", (_label, make) => {
  const clientFor = (url: string, options: object = {}): Client =>
    createClient({ url, token: TOKEN, transport: make!(), reconnect: { initialDelayMs: 5, maxDelayMs: 40, maxAttempts: 20 }, ...options });

  it.skipIf(make === undefined)("reverse, digest of 8 MiB and blobs of 8 MiB: every item once, SHA-256 equal", async () => {
    const client = clientFor(server.url);
    const reverse = client.invoke({ ...demo, method: "reverse", methodParameters: record(inputStream.strings(["abc", "héllo"])) });
    expect((await collect((await firstStream(reverse)).values())).map((item) => item.value)).toEqual(["cba", "olléh"]);
    await reverse.finished;

    const { chunks, all } = randomChunks(8 * 1024 * 1024, 1024 * 1024);
    const digest = client.invoke({ ...demo, method: "digest", methodParameters: record(inputStream.bytes(chunks)) });
    const result = await digest.result;
    expect(result.kind === "value" ? fieldsOf(result.value).map((field) => field.value) : []).toEqual([String(all.length), sha256(all)]);
    await digest.finished;

    const blobs = client.invoke({ ...demo, method: "blobs", methodParameters: record(u32(8), u32(1024 * 1024)) });
    const items = await collect((await firstStream(blobs)).blobs());
    expect(items.map((item) => item.bytes[0])).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    await blobs.finished;
  });

  it.skipIf(make === undefined)(
    "a socket that cannot pause holds messages up to a bound, then drops the connection and resumes; every item arrives once",
    async () => {
      const client = createClient({
        url: server.url,
        token: TOKEN,
        transport: make!({ maxHeldBytes: 32 * 1024 }),
        maxQueuedEntriesPerStream: 8,
        reconnect: { initialDelayMs: 5, maxDelayMs: 40, maxAttempts: 20 },
      });
      const call = client.invoke({ ...demo, method: "count", methodParameters: record(u32(3000), u32(0)) });
      const reconnected = new Promise((resolve) => call.on("reconnecting", resolve));
      const values: unknown[] = [];
      for await (const item of (await firstStream(call)).values()) {
        values.push(item.value);
        // Stop reading until the held messages passed the bound and the connection was dropped.
        if (values.length === 10) await reconnected;
      }
      expect(values).toEqual(Array.from({ length: 3000 }, (_, i) => i));
      await call.finished;
    },
  );

  it.skipIf(make === undefined)("survives TCP cuts: resumes and delivers each item once", async () => {
    const budgets = [3000, 9000, 20_000];
    const proxy = await startTcpProxy({ upstream: server.url, plan: ({ index }) => ({ cutAfter: budgets[index] }) });
    try {
      const client = clientFor(proxy.url);
      const input = Array.from({ length: 200 }, (_, i) => `item-${i}-${"x".repeat(i % 50)}`);
      const call = client.invoke({ ...demo, method: "reverse", methodParameters: record(inputStream.strings(input)) });
      const items = await collect((await firstStream(call)).values());
      await call.finished;
      expect(items.map((item) => item.value)).toEqual(input.map((s) => Array.from(s).reverse().join("")));
      expect(proxy.cuts).toBeGreaterThanOrEqual(2);
    } finally {
      await proxy.close();
    }
  });
});
