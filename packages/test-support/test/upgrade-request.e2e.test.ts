/**
 * The hand-written upgrade request, read by Node's own HTTP parser on loopback: it arrives as a
 * WebSocket upgrade of the session path, with a fresh 16-byte key each time, the caller's header
 * lines after the handshake's own, and one Host line, the caller's when it brings one.
 */
import { createServer, type IncomingMessage } from "node:http";
import { connect, type AddressInfo } from "node:net";
import { SESSION_PATH } from "@golem-stream/wire";
import { afterEach, expect, it } from "vitest";
import { upgradeRequest } from "../src/upgrade-request.js";

const servers: ReturnType<typeof createServer>[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

/** Sends `text` on a bare socket to a Node HTTP server; resolves with the upgrade request it parsed. */
async function parsedUpgrade(text: (port: number) => string): Promise<IncomingMessage> {
  const server = createServer();
  servers.push(server);
  const upgrade = new Promise<IncomingMessage>((resolve) =>
    server.on("upgrade", (request: IncomingMessage, socket) => {
      socket.destroy();
      resolve(request);
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const client = connect(port, "127.0.0.1");
  client.on("error", () => undefined);
  client.write(text(port));
  return upgrade;
}

it("is a WebSocket upgrade of the session path with a fresh key and the caller's lines after the handshake's own", async () => {
  const request = await parsedUpgrade((port) => upgradeRequest(`127.0.0.1:${port}`, ["Sec-WebSocket-Protocol: a, b", "X-Extra: 1"]));
  expect(request.method).toBe("GET");
  expect(request.url).toBe(SESSION_PATH);
  expect(request.headers.upgrade).toBe("websocket");
  expect(request.headers.connection).toBe("Upgrade");
  expect(request.headers["sec-websocket-version"]).toBe("13");
  expect(Buffer.from(request.headers["sec-websocket-key"] ?? "", "base64")).toHaveLength(16);
  expect(request.headers["sec-websocket-protocol"]).toBe("a, b");
  expect(request.rawHeaders.filter((_, i) => i % 2 === 0).slice(-2)).toEqual(["Sec-WebSocket-Protocol", "X-Extra"]);
  expect(request.headers.host).toMatch(/^127\.0\.0\.1:\d+$/);

  const keyOf = (text: string) => /Sec-WebSocket-Key: (.*)\r\n/.exec(text)?.[1];
  expect(keyOf(upgradeRequest("h"))).not.toBe(keyOf(upgradeRequest("h")));
});

it("has one Host line: the caller's when the caller brings one", async () => {
  const request = await parsedUpgrade(() => upgradeRequest("ignored", ["host: evil.example"]));
  expect(request.rawHeaders.filter((name) => name.toLowerCase() === "host")).toHaveLength(1);
  expect(request.headers.host).toBe("evil.example");
});
