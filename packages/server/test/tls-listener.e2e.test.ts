/**
 * `listen` with TLS, over real loopback TLS sessions with a CA of the test's
 * own: the addresses say `wss://` and `https://`; a streaming invocation
 * runs end to end, its input's small text frames read by the server's own
 * frame reader off the TLS socket; the listener's bounds hold over TLS (a
 * connection over `maxHttpConnections` is answered `overloaded` in the
 * envelope, a probe over it is still answered, a session socket leaves the
 * count, a handshake must come within the request timeout); `close()`
 * closes the connections still in their handshake and serves no handshake
 * completing after it began; `setTlsCertificate` serves
 * new connections the new certificate, a session made before it resuming
 * with its ticket, and credentials that cannot be used
 * fail with `TlsCertificateError`, the certificate in use staying; the
 * listening address's origins allowed for browsers are its `https` ones.
 */
import { randomUUID } from "node:crypto";
import { request } from "node:https";
import { createConnection, type Socket } from "node:net";
import { connect } from "node:tls";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import WebSocket from "ws";
import { SESSION_PATH, SUBPROTOCOL } from "@golem-stream/wire";
import { TlsCertificateError, type TlsCredentials } from "../src/index.js";
import { RawClient, demoStart, outputValues, startTestServer, v, type TestServer } from "./helpers.js";
import { makeTestCertificates, servedCertificateName, type TestCertificates } from "@golem-stream/test-support";

/** What the server's frame reader answered for each session socket: true when it reads the small text frames itself. */
const fastPaths = vi.hoisted((): boolean[] => []);
vi.mock("@golem-stream/wire/internal", async (original) => {
  const actual = await original<typeof import("@golem-stream/wire/internal")>();
  return {
    ...actual,
    readWsTextFramesFirst: (...args: Parameters<typeof actual.readWsTextFramesFirst>) => {
      const used = actual.readWsTextFramesFirst(...args);
      fastPaths.push(used);
      return used;
    },
  };
});

let certificates: TestCertificates;
let first: TlsCredentials;
let second: TlsCredentials;
const servers: TestServer[] = [];

beforeAll(() => {
  certificates = makeTestCertificates();
  first = certificates.issue("first");
  second = certificates.issue("second");
});

afterAll(async () => {
  for (const server of servers.splice(0)) await server.dispose();
  certificates.remove();
});

async function start(options: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  const server = await startTestServer({ tls: first, ...options });
  servers.push(server);
  return server;
}

async function connectSession(url: string): Promise<RawClient> {
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

/** GET `path` on a connection of its own: the status and body. */
function get(httpUrl: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, httpUrl), { ca: certificates.ca, agent: false, headers }, (response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (body += chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

async function health(httpUrl: string): Promise<{ status: number; body: unknown }> {
  const { status, body } = await get(httpUrl, "/healthz");
  return { status, body: JSON.parse(body) };
}

it("serves wss:// and https://: a streaming invocation runs end to end, its input read by the server's own frame reader off the TLS socket", async () => {
  const server = await start({ healthEndpoints: true });
  expect(server.url).toMatch(/^wss:\/\/127\.0\.0\.1:\d+$/);
  expect(server.httpUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
  expect(await health(server.httpUrl)).toEqual({ status: 200, body: { status: "ok" } });

  fastPaths.length = 0;
  const client = await connectSession(server.url);
  const ref = randomUUID();
  client.send(demoStart("reverse", v.record(v.stream(ref))));
  const accepted = await client.nextOf("invocationAccepted");
  const input = accepted.mappings[0]!;
  const words = Array.from({ length: 200 }, (_, index) => `word-${index}-${"x".repeat(index % 50)}`);
  words.forEach((word, index) =>
    client.send({ type: "inputStreamItem", channel: input.channel, sequence: BigInt(index), value: v.str(word) }),
  );
  client.send({ type: "inputStreamEnd", channel: input.channel, sequence: BigInt(words.length) });
  const { messages, closed } = await client.all();
  expect(closed.code).toBe(1000);
  const result = messages.find((m) => m.type === "invocationResult");
  if (result?.type !== "invocationResult") throw new Error("no result");
  const reversed = words.map((word) => v.str([...word].reverse().join("")));
  expect(outputValues(messages, result.mappings[0]!.channel)).toEqual(reversed);
  expect(messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
  expect(fastPaths).toEqual([true]);

  const count = await connectSession(server.url);
  count.send(demoStart("count", v.record(v.u32(50), v.u32(0))));
  const counted = await count.all();
  const countResult = counted.messages.find((m) => m.type === "invocationResult");
  if (countResult?.type !== "invocationResult") throw new Error("no result");
  expect(outputValues(counted.messages, countResult.mappings[0]!.channel)).toEqual(Array.from({ length: 50 }, (_, i) => v.u32(i)));
});

it("over TLS a connection past maxHttpConnections is answered overloaded in the envelope, and a probe past it is still answered", async () => {
  const server = await start({ healthEndpoints: true, limits: { maxHttpConnections: 1 } });
  const { hostname, port } = new URL(server.httpUrl);
  // Holds the one connection the budget allows: a TLS session that sends no request.
  const holder = connect({ host: hostname, port: Number(port), ca: certificates.ca });
  await new Promise<void>((resolve) => holder.once("secureConnect", () => resolve()));
  try {
    const refused = await get(server.httpUrl, "/v1/agents/types?application=demo&environment=default");
    expect(refused.status).toBe(503);
    expect(JSON.parse(refused.body)).toMatchObject({ code: "overloaded" });
    expect(await health(server.httpUrl)).toEqual({ status: 200, body: { status: "ok" } });
  } finally {
    holder.destroy();
  }
});

it("over TLS a session socket leaves the maxHttpConnections count, and a connection that never handshakes is closed within httpRequestTimeoutMs", async () => {
  const server = await start({ limits: { maxHttpConnections: 1, httpRequestTimeoutMs: 300 } });
  const sessions = [await connectSession(server.url), await connectSession(server.url)];
  const catalogue = await get(server.httpUrl, "/v1/agents/types?application=demo&environment=default", {
    authorization: "Bearer test-token",
  });
  expect(catalogue.status).toBe(200);
  for (const session of sessions) session.socket.close();

  const { hostname, port } = new URL(server.httpUrl);
  const silent = createConnection({ host: hostname, port: Number(port) });
  silent.on("error", () => undefined);
  await new Promise<void>((resolve) => silent.once("close", () => resolve()));
});

/**
 * A TCP connection to `httpUrl` that sends nothing, once the server has accepted it: a request
 * answered on a connection opened after it means the server took it from the backlog first.
 */
async function acceptedSilentConnection(httpUrl: string): Promise<Socket> {
  const { hostname, port } = new URL(httpUrl);
  const silent = createConnection({ host: hostname, port: Number(port) });
  silent.on("error", () => undefined);
  await new Promise<void>((resolve) => silent.once("connect", () => resolve()));
  expect((await health(httpUrl)).status).toBe(200);
  return silent;
}

it("close() closes a connection still in its TLS handshake instead of waiting out httpRequestTimeoutMs for it", async () => {
  // Ten minutes: were close() to wait for the handshake, the test would time out.
  const server = await start({ healthEndpoints: true, limits: { httpRequestTimeoutMs: 600_000 } });
  const silent = await acceptedSilentConnection(server.httpUrl);
  const events: string[] = [];
  const socketClosed = new Promise<void>((resolve) => silent.once("close", () => resolve()));
  void socketClosed.then(() => events.push("socket closed"));
  events.push("close() called");
  await Promise.all([server.server.close().then(() => events.push("close() resolved")), socketClosed]);
  expect(events[0]).toBe("close() called");
  expect([...events].sort()).toEqual(["close() called", "close() resolved", "socket closed"]);
});

it("a TLS handshake begun as close() begins is not completed, nor served", async () => {
  const server = await start({ healthEndpoints: true, limits: { httpRequestTimeoutMs: 600_000 } });
  const raw = await acceptedSilentConnection(server.httpUrl);
  const closed = server.server.close();
  const secure = connect({ socket: raw, ca: certificates.ca, servername: "localhost" });
  secure.on("error", () => undefined);
  const answered = await new Promise<string>((resolve) => {
    secure.once("secureConnect", () => {
      secure.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
      secure.once("data", (chunk: Buffer) => resolve(chunk.toString("latin1").split("\r\n")[0]!));
    });
    raw.once("close", () => resolve("closed"));
  });
  expect(answered).toBe("closed");
  await closed;
});

it("setTlsCertificate serves new connections the new certificate; credentials that cannot be used fail typed and change nothing", async () => {
  const server = await start();
  expect(await servedCertificateName(server.httpUrl, certificates.ca)).toBe("first");
  const open = await connectSession(server.url);

  server.server.setTlsCertificate(second);
  expect(await servedCertificateName(server.httpUrl, certificates.ca)).toBe("second");

  const refusals = [
    { cert: "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n", key: second.key },
    { cert: second.cert, key: first.key },
    { cert: second.cert, key: "" },
  ];
  for (const credentials of refusals) {
    let thrown: unknown;
    try {
      server.server.setTlsCertificate(credentials);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(TlsCertificateError);
    expect(thrown).toMatchObject({
      code: "tls-certificate-invalid",
      message: expect.stringMatching(/^(the TLS certificate and key cannot be used: |tls\.key )/),
    });
  }
  expect(await servedCertificateName(server.httpUrl, certificates.ca)).toBe("second");

  // The connection opened before the change runs a session as ever.
  open.send(demoStart("count", v.record(v.u32(3), v.u32(0))));
  expect((await open.all()).closed.code).toBe(1000);
});

/** A new TLS connection to `httpUrl` resuming `session`: whether it did. */
async function resumes(httpUrl: string, session: Buffer): Promise<boolean> {
  const { hostname, port } = new URL(httpUrl);
  const socket = connect({ host: hostname, port: Number(port), ca: certificates.ca, session });
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once("secureConnect", () => resolve());
      socket.once("error", reject);
    });
    return socket.isSessionReused();
  } finally {
    socket.destroy();
  }
}

it("a TLS session made before setTlsCertificate resumes with its ticket after it", async () => {
  const server = await start();
  const { hostname, port } = new URL(server.httpUrl);
  const first = connect({ host: hostname, port: Number(port), ca: certificates.ca });
  const ticket = new Promise<Buffer>((resolve) => first.once("session", resolve));
  first.on("error", () => undefined);
  const session = await ticket;
  first.destroy();
  expect(await resumes(server.httpUrl, session)).toBe(true);

  server.server.setTlsCertificate(second);
  expect(await servedCertificateName(server.httpUrl, certificates.ca)).toBe("second");
  expect(await resumes(server.httpUrl, session)).toBe(true);
});

it("credentials that cannot be used reject listen before anything listens; a plain listener refuses setTlsCertificate", async () => {
  await expect(startTestServer({ tls: { cert: first.cert, key: second.key } })).rejects.toMatchObject({
    name: "TlsCertificateError",
    code: "tls-certificate-invalid",
  });
  const plain = await startTestServer();
  servers.push(plain);
  expect(plain.url).toMatch(/^ws:\/\//);
  expect(() => plain.server.setTlsCertificate(first)).toThrow(expect.objectContaining({ code: "tls-not-enabled" }));
});

it("the listening address's origins allowed for browser pages are https ones", async () => {
  const server = await start({ browsers: { allowedOrigins: [], allowListeningOrigins: true } });
  const port = new URL(server.httpUrl).port;
  const catalogue = "/v1/agents/types?application=demo&environment=default";
  const from = async (origin: string): Promise<number> =>
    (await get(server.httpUrl, catalogue, { origin, authorization: "Bearer test-token" })).status;
  expect(await from(`https://127.0.0.1:${port}`)).toBe(200);
  expect(await from(`https://localhost:${port}`)).toBe(200);
  expect(await from(`http://127.0.0.1:${port}`)).toBe(403);
});
