/**
 * The listener `listen` opens, against clients that never finish a request
 * or send one Node cannot read: a request must arrive whole within
 * `limits.httpRequestTimeoutMs` (then 408 and the connection closes), a body
 * no route reads does not keep its connection, a head up to 64 KiB reaches
 * the routes (whose own 16 KiB bounds answer in the error envelope), and a
 * larger or malformed one is answered in the envelope too, not with Node's
 * bare status line.
 */
import { connect, type AddressInfo, type Socket } from "node:net";
import { afterEach, expect, it } from "vitest";
import { ALICE, startMemoryServer, type MemoryServer } from "./support/memory-server.js";
import { createHttpListener } from "../src/transport/http-listener.js";

let running: MemoryServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

/** Opens a TCP connection to the server, writes `text`, and collects what comes back until the server closes. */
async function exchange(text: string): Promise<{ socket: Socket; answer: Promise<string> }> {
  const { hostname, port } = new URL(running!.httpUrl);
  const socket = connect(Number(port), hostname);
  await new Promise<void>((resolve) => socket.once("connect", resolve));
  const chunks: Buffer[] = [];
  socket.on("data", (chunk: Buffer) => chunks.push(chunk));
  socket.on("error", () => undefined);
  const answer = new Promise<string>((resolve) => socket.once("close", () => resolve(Buffer.concat(chunks).toString("latin1"))));
  socket.write(text);
  return { socket, answer };
}

/** The JSON body of an HTTP answer. */
const bodyOf = (answer: string): unknown => JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4));

it("a request head that never ends is answered 408 once httpRequestTimeoutMs has passed, and its connection closes", async () => {
  running = await startMemoryServer({ limits: { httpRequestTimeoutMs: 200 } });
  const { answer } = await exchange("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  expect(await answer).toMatch(/^HTTP\/1\.1 408 /);
});

it("after its 408 a client that keeps its side of the connection open holds nothing: the server's side of it closes", async () => {
  const listener = createHttpListener((_request, response) => response.end(), {
    httpRequestTimeoutMs: 200,
    maxHttpConnections: 1024,
  }).server;
  const serverSides: Promise<void>[] = [];
  listener.on("connection", (side: Socket) => serverSides.push(new Promise((resolve) => side.once("close", () => resolve()))));
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  try {
    // A client that does not end its side when the server ends its own.
    const socket = connect({ port: (listener.address() as AddressInfo).port, host: "127.0.0.1", allowHalfOpen: true });
    socket.on("error", () => undefined);
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    await new Promise<void>((resolve) => socket.once("end", resolve));
    expect(Buffer.concat(chunks).toString("latin1")).toMatch(/^HTTP\/1\.1 408 /);
    await serverSides[0];
    socket.destroy();
  } finally {
    await new Promise((resolve) => listener.close(resolve));
  }
});

it("a request with a body no route reads is answered, then its connection closes, however slowly the body comes", async () => {
  running = await startMemoryServer();
  const { socket, answer } = await exchange("POST /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\nx");
  const text = await answer;
  expect(text).toMatch(/^HTTP\/1\.1 \d{3} /);
  expect(text).toMatch(/\r\nConnection: close\r\n/i);
  expect(socket.destroyed).toBe(true);
});

it("a 20 KiB bearer reaches the server's own check (401 in the envelope); a head over 64 KiB, or a malformed request, is answered in the envelope as well", async () => {
  running = await startMemoryServer();
  const catalogue = "GET /v1/agents/types?application=demo&environment=default HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  const long = await (await exchange(`${catalogue}Authorization: Bearer ${"a".repeat(20 * 1024)}\r\n\r\n`)).answer;
  expect(long).toMatch(/^HTTP\/1\.1 401 /);
  expect(bodyOf(long)).toMatchObject({ code: "unauthenticated" });

  const huge = await (await exchange(`${catalogue}X-Filler: ${"b".repeat(70 * 1024)}\r\nAuthorization: Bearer ${ALICE}\r\n\r\n`)).answer;
  expect(huge).toMatch(/^HTTP\/1\.1 400 /);
  expect(bodyOf(huge)).toEqual({ code: "limit-exceeded", errors: ["the request's head is larger than 65536 bytes"] });

  const garbage = await (await exchange("NOT HTTP AT ALL\r\n\r\n")).answer;
  expect(garbage).toMatch(/^HTTP\/1\.1 400 /);
  expect(bodyOf(garbage)).toEqual({ code: "invalid-message", errors: ["the request is not well-formed HTTP/1.1"] });
});
