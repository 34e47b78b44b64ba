/**
 * The browser build (src/browser.ts) under Node, with `ws` standing in for a
 * browser's global WebSocket: its default transport puts the bearer in a
 * subprotocol entry, which a server with the browser extension accepts and a
 * server without it refuses; the refusal close is read as a refusal. Without
 * a global WebSocket it says so at createClient.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import WsWebSocket from "ws";
import { createClient, inputStream, wsTransport, ClientError } from "../src/browser.js";
import { collect, demo, firstStream, record } from "./support/demo.js";
import { startServer, TOKEN } from "./support/embedded.js";

let withBrowsers: Awaited<ReturnType<typeof startServer>>;
let without: Awaited<ReturnType<typeof startServer>>;
beforeAll(async () => {
  withBrowsers = await startServer({ browsers: { allowedOrigins: ["http://app.example"] } });
  without = await startServer();
});
afterAll(async () => {
  await withBrowsers.dispose();
  await without.dispose();
});

const globals = globalThis as { WebSocket?: unknown };
const original = globals.WebSocket;
afterEach(() => {
  globals.WebSocket = original;
});
const fast = { initialDelayMs: 5, maxDelayMs: 20, maxAttempts: 3 };

describe("the browser build's default transport", () => {
  it("authenticates with the bearer subprotocol entry at a server with the browser extension", async () => {
    globals.WebSocket = WsWebSocket;
    const client = createClient({ url: withBrowsers.httpUrl, token: TOKEN, reconnect: fast });
    const call = client.invoke({ ...demo, method: "reverse", methodParameters: record(inputStream.strings(["abc", "héllo"])) });
    expect((await collect((await firstStream(call)).values())).map((item) => item.value)).toEqual(["cba", "olléh"]);
    await call.finished;
  });

  it("a wrong token is rejected at once (the refusal close), with no reconnect", async () => {
    globals.WebSocket = WsWebSocket;
    const client = createClient({ url: withBrowsers.httpUrl, token: "wrong", reconnect: fast });
    const call = client.invoke({ ...demo, method: "reverse", methodParameters: record(inputStream.strings(["x"])) });
    let reconnects = 0;
    call.on("reconnecting", () => reconnects++);
    const error = await call.result.then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(ClientError);
    expect(error).toMatchObject({ kind: "rejected", code: "unauthenticated" });
    expect(reconnects).toBe(0);
  });

  it("a server without the extension refuses the entry over HTTP, which a WebSocket cannot read: retried, then connection-lost", async () => {
    globals.WebSocket = WsWebSocket;
    const client = createClient({ url: without.httpUrl, token: TOKEN, reconnect: fast });
    const call = client.invoke({ ...demo, method: "reverse", methodParameters: record(inputStream.strings(["x"])) });
    await expect(call.result).rejects.toMatchObject({ kind: "connection-lost" });
  });
});

describe("outside a runtime with a WebSocket", () => {
  it("createClient without a transport says what to do, at once", () => {
    delete globals.WebSocket;
    expect(() => createClient({ url: withBrowsers.httpUrl, token: TOKEN })).toThrow(/no global WebSocket: pass options.transport/);
  });

  it("wsTransport is not in the browser build and says so", () => {
    expect(() => wsTransport()).toThrow(/browser build/);
  });
});
