/**
 * A plain HTTP request sent to a TLS listener (`listen` with `tls`, on
 * loopback): it is answered 400 in the error envelope (`protocol-error`,
 * saying to use https:// or wss://) and its connection closes, instead of
 * being dropped by the TLS handshake; the same listener still serves TLS,
 * sends bytes that are neither to TLS (which drops them), closes a
 * connection that sent part of a method at the request timeout, and
 * `close()` closes one still undecided. A connection that sends nothing is
 * closed at the request timeout by tls-listener.e2e.test.ts, which runs with
 * the sniff in place too.
 */
import { createConnection, type Socket } from "node:net";
import { connect } from "node:tls";
import { afterAll, beforeAll, expect, it } from "vitest";
import WebSocket from "ws";
import { SESSION_PATH, SUBPROTOCOL } from "@golem-stream/wire";
import type { TlsCredentials } from "../src/index.js";
import { RawClient, demoStart, startTestServer, v, type TestServer } from "./helpers.js";
import { makeTestCertificates, type TestCertificates } from "@golem-stream/test-support";

let certificates: TestCertificates;
let credentials: TlsCredentials;
const servers: TestServer[] = [];

beforeAll(() => {
  certificates = makeTestCertificates();
  credentials = certificates.issue("served");
});

afterAll(async () => {
  for (const server of servers.splice(0)) await server.dispose();
  certificates.remove();
});

async function start(limits: { httpRequestTimeoutMs?: number } = {}): Promise<TestServer> {
  const server = await startTestServer({ tls: credentials, healthEndpoints: true, limits });
  servers.push(server);
  return server;
}

/** A plain TCP connection to the listener of `httpUrl`, open. */
async function plainConnection(httpUrl: string): Promise<Socket> {
  const { hostname, port } = new URL(httpUrl);
  const socket = createConnection({ host: hostname, port: Number(port) });
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", () => resolve());
    socket.once("error", reject);
  });
  return socket;
}

/** Everything the server sends on `socket` until it closes the connection. */
function readUntilClosed(socket: Socket): Promise<string> {
  return new Promise((resolve) => {
    let text = "";
    socket.on("data", (chunk: Buffer) => (text += chunk.toString("latin1")));
    socket.on("error", () => undefined);
    socket.once("close", () => resolve(text));
  });
}

function upgradeRequest(host: string): string {
  return [
    `GET ${SESSION_PATH} HTTP/1.1`,
    `Host: ${host}`,
    "Connection: Upgrade",
    "Upgrade: websocket",
    "Sec-WebSocket-Version: 13",
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
    `Sec-WebSocket-Protocol: ${SUBPROTOCOL}`,
    "Authorization: Bearer test-token",
    "",
    "",
  ].join("\r\n");
}

/** The status line, headers (lower-cased names) and body of one HTTP/1.1 response. */
function parseResponse(text: string): { status: string; headers: Map<string, string>; body: string } {
  const [head = "", body = ""] = text.split("\r\n\r\n");
  const [status = "", ...lines] = head.split("\r\n");
  const headers = new Map(
    lines.map((line) => [line.slice(0, line.indexOf(":")).toLowerCase(), line.slice(line.indexOf(":") + 1).trim()] as const),
  );
  return { status, headers, body };
}

async function tlsSession(url: string): Promise<RawClient> {
  const socket = new WebSocket(`${url}${SESSION_PATH}`, [SUBPROTOCOL], {
    headers: { authorization: "Bearer test-token" },
    ca: certificates.ca,
  });
  await new Promise<void>((resolve, reject) => {
    socket.once("open", () => resolve());
    socket.once("error", reject);
  });
  return new RawClient(socket);
}

it("a plain HTTP upgrade sent to the TLS port is answered 400 protocol-error in the envelope, saying to use wss://, and closed; TLS still works there", async () => {
  const server = await start();
  const plain = await plainConnection(server.httpUrl);
  const answered = readUntilClosed(plain);
  plain.write(upgradeRequest(new URL(server.httpUrl).host));
  const { status, headers, body } = parseResponse(await answered);
  expect(status).toBe("HTTP/1.1 400 Bad Request");
  expect(headers.get("connection")).toBe("close");
  expect(headers.get("content-type")).toBe("application/json");
  expect(Number(headers.get("content-length"))).toBe(Buffer.byteLength(body));
  expect(JSON.parse(body)).toEqual({
    code: "protocol-error",
    errors: ["this port speaks TLS and a plain HTTP request was sent to it: use https:// (wss:// for sessions) instead of http:// (ws://)"],
  });

  const session = await tlsSession(server.url);
  session.send(demoStart("count", v.record(v.u32(3), v.u32(0))));
  expect((await session.all()).closed.code).toBe(1000);
});

it("a plain request whose method arrives a byte at a time is answered the same", async () => {
  const server = await start();
  const plain = await plainConnection(server.httpUrl);
  const answered = readUntilClosed(plain);
  const request = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  for (const byte of request.slice(0, 4)) {
    plain.write(byte);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  plain.write(request.slice(4));
  expect(parseResponse(await answered).status).toBe("HTTP/1.1 400 Bad Request");
});

it("bytes that are neither TLS nor plain HTTP go to TLS, which drops them unanswered", async () => {
  const server = await start();
  const plain = await plainConnection(server.httpUrl);
  const answered = readUntilClosed(plain);
  plain.write("get / HTTP/1.1\r\n\r\n");
  expect(await answered).toBe("");
});

it("a connection that sent part of a method and no more is closed at httpRequestTimeoutMs", async () => {
  const server = await start({ httpRequestTimeoutMs: 300 });
  const plain = await plainConnection(server.httpUrl);
  const answered = readUntilClosed(plain);
  plain.write("GE");
  expect(await answered).toBe("");
  // The listener serves TLS as ever.
  const secure = connect({ host: "127.0.0.1", port: Number(new URL(server.httpUrl).port), ca: certificates.ca });
  await new Promise<void>((resolve, reject) => {
    secure.once("secureConnect", () => resolve());
    secure.once("error", reject);
  });
  secure.destroy();
});

it("close() closes a connection whose first bytes are still undecided instead of waiting out httpRequestTimeoutMs", async () => {
  // Ten minutes: were close() to wait for it, the test would time out.
  const server = await start({ httpRequestTimeoutMs: 600_000 });
  const plain = await plainConnection(server.httpUrl);
  const closed = readUntilClosed(plain);
  plain.write("GE");
  // The listener has read it once a request on a connection opened after it is answered.
  const later = await plainConnection(server.httpUrl);
  const laterAnswered = readUntilClosed(later);
  later.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  expect(parseResponse(await laterAnswered).status).toBe("HTTP/1.1 400 Bad Request");
  await Promise.all([server.server.close(), closed]);
});
