/**
 * `limits.maxHttpConnections`: the listener `listen` opens holds at most that
 * many connections that are not session sockets (requests, idle keep-alive
 * connections, upgrades being authenticated); one more is answered
 * `overloaded` (503) in the error envelope and closed, and counted in
 * `attachment_rejections_total{operation="connection"}`. A session socket
 * leaves the count once it is one, and a closed connection frees its place.
 */
import { connect, type AddressInfo, type Socket } from "node:net";
import { afterEach, expect, it } from "vitest";
import { RawClient } from "./helpers.js";
import { ALICE, startMemoryServer, type MemoryServer } from "./support/memory-server.js";
import { sample } from "./support/operations.js";
import type { Duplex } from "node:stream";
import { ProtocolError } from "@golem-stream/wire";
import { createHttpListener } from "../src/transport/http-listener.js";
import { rejectUpgrade } from "../src/transport/http-handshake.js";

let running: MemoryServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

const CATALOGUE = "/v1/agents/types?application=demo&environment=default";

interface Answer {
  readonly status: number;
  readonly body: string;
}

/** A client's side of one TCP connection, reading HTTP answers one at a time (Content-Length bodies). */
class RawHttp {
  readonly socket: Socket;
  readonly closed: Promise<void>;
  #received = Buffer.alloc(0);
  #waiting: (() => void) | undefined;

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.on("error", () => undefined);
    socket.on("data", (chunk: Buffer) => {
      this.#received = Buffer.concat([this.#received, chunk]);
      this.#waiting?.();
    });
    this.closed = new Promise((resolve) => socket.once("close", () => resolve()));
    void this.closed.then(() => this.#waiting?.());
  }

  static async open(httpUrl: string): Promise<RawHttp> {
    const { hostname, port } = new URL(httpUrl);
    const socket = connect(Number(port), hostname);
    await new Promise<void>((resolve) => socket.once("connect", resolve));
    return new RawHttp(socket);
  }

  /** Sends `GET path` and reads its answer (with a Content-Length); the connection stays open. */
  async get(path: string): Promise<Answer> {
    this.socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${ALICE}\r\n\r\n`);
    return this.answer();
  }

  /** Sends `GET path` asking for the connection to close after it: everything received until then. */
  async getAndClose(path: string): Promise<string> {
    this.socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
    await this.closed;
    return this.#received.toString("latin1");
  }

  /** The next whole answer, waiting for its bytes (or the close that ends them). */
  async answer(): Promise<Answer> {
    for (;;) {
      const text = this.#received.toString("latin1");
      const headEnd = text.indexOf("\r\n\r\n");
      const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, headEnd));
      if (headEnd >= 0 && length !== null && text.length >= headEnd + 4 + Number(length[1])) {
        const end = headEnd + 4 + Number(length[1]);
        this.#received = this.#received.subarray(end);
        return { status: Number(text.slice(9, 12)), body: text.slice(headEnd + 4, end) };
      }
      if (this.socket.destroyed) throw new Error(`the connection closed before a whole answer: ${JSON.stringify(text)}`);
      await new Promise<void>((resolve) => (this.#waiting = resolve));
    }
  }
}

it("one connection over maxHttpConnections is answered 503 overloaded in the envelope and closed; a closed connection frees its place", async () => {
  let refused = 0;
  const { server } = createHttpListener(
    (_request, response) => response.end("ok"),
    { httpRequestTimeoutMs: 60_000, maxHttpConnections: 2 },
    () => refused++,
  );
  const serverSides: Promise<void>[] = [];
  server.on("connection", (side: Socket) => serverSides.push(new Promise((resolve) => side.once("close", () => resolve()))));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const httpUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    // Two connections that send nothing, as a client that only opens them would.
    const idle = [await RawHttp.open(httpUrl), await RawHttp.open(httpUrl)];
    const third = await RawHttp.open(httpUrl);
    const answer = await third.answer();
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.body)).toEqual({ code: "overloaded", error: expect.any(String) });
    await third.closed;
    expect(refused).toBe(1);

    idle[0]!.socket.destroy();
    await serverSides[0];
    const fourth = await RawHttp.open(httpUrl);
    expect(await fourth.get("/")).toEqual({ status: 200, body: "ok" });
    fourth.socket.destroy();
    expect(refused).toBe(1);
    idle[1]!.socket.destroy();
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

it("a session socket does not count in maxHttpConnections, and a refused connection is counted in the metrics", async () => {
  running = await startMemoryServer({ limits: { maxHttpConnections: 1 }, metrics: true });
  // Counted while its upgrade was authenticated, then a session socket.
  const session = await RawClient.connect(running.url, ALICE);
  const held = await RawHttp.open(running.httpUrl);
  expect((await held.get(CATALOGUE)).status).toBe(200);

  const over = await RawHttp.open(running.httpUrl);
  const refused = await over.answer();
  expect(refused.status).toBe(503);
  expect(JSON.parse(refused.body)).toMatchObject({ code: "overloaded" });

  const metrics = await held.getAndClose("/metrics");
  expect(metrics).toMatch(/^HTTP\/1\.1 200 /);
  expect(sample(metrics, "golem_stream_attachment_rejections_total", { code: "overloaded", operation: "connection" })).toBe(1);
  session.close();
});

it("a refused upgrade whose client keeps its side of the connection open leaves its place: the server's side closes", async () => {
  const { server } = createHttpListener((_request, response) => response.end("ok"), {
    httpRequestTimeoutMs: 60_000,
    maxHttpConnections: 1,
  });
  server.on("upgrade", (_request, socket: Duplex) => rejectUpgrade(socket, new ProtocolError("not-found", "no such endpoint")));
  const serverSides: Promise<void>[] = [];
  server.on("connection", (side: Socket) => serverSides.push(new Promise((resolve) => side.once("close", () => resolve()))));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  try {
    // A client that does not end its side when the server ends its own.
    const socket = connect({ port, host: "127.0.0.1", allowHalfOpen: true });
    socket.on("error", () => undefined);
    const answered = new Promise<string>((resolve) => socket.once("data", (chunk: Buffer) => resolve(chunk.toString("latin1"))));
    socket.write("GET /nope HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
    expect(await answered).toMatch(/^HTTP\/1\.1 404 /);
    await serverSides[0];
    const next = await RawHttp.open(`http://127.0.0.1:${port}`);
    expect(await next.get("/")).toEqual({ status: 200, body: "ok" });
    next.socket.destroy();
    socket.destroy();
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

it("over maxHttpConnections, /healthz and /metrics are still answered and their connection closed; /readyz, the catalogue and upgrades are refused", async () => {
  running = await startMemoryServer({ limits: { maxHttpConnections: 1 }, metrics: true, healthEndpoints: true });
  const held = await RawHttp.open(running.httpUrl);
  expect((await held.get(CATALOGUE)).status).toBe(200);

  const health = await RawHttp.open(running.httpUrl);
  const healthz = await health.getAndClose("/healthz");
  expect(healthz).toMatch(/^HTTP\/1\.1 200 /);
  expect(healthz).toContain('{"status":"ok"}');
  const scrape = await RawHttp.open(running.httpUrl);
  const metrics = await scrape.getAndClose("/metrics");
  expect(metrics).toMatch(/^HTTP\/1\.1 200 /);

  // A probe connection carries one request: it cannot serve as a way around the budget.
  for (const path of ["/readyz", CATALOGUE]) {
    const over = await RawHttp.open(running.httpUrl);
    const answer = await over.get(path);
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.body)).toMatchObject({ code: "overloaded" });
    await over.closed;
  }
  const upgrade = await RawHttp.open(running.httpUrl);
  upgrade.socket.write(
    "GET /v1/session HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
      `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nAuthorization: Bearer ${ALICE}\r\n\r\n`,
  );
  expect((await upgrade.answer()).status).toBe(503);
  await upgrade.closed;
  // A connection over the budget that sends nothing is refused once its short grace is over.
  const silent = await RawHttp.open(running.httpUrl);
  expect((await silent.answer()).status).toBe(503);

  const final = await held.getAndClose("/metrics");
  expect(sample(final, "golem_stream_attachment_rejections_total", { code: "overloaded", operation: "connection" })).toBe(4);
});
