/**
 * The browser extension (docs/protocol/browser.md) over loopback: the bearer
 * in a `golem-stream.bearer.<base64url>` subprotocol entry, the Origin
 * allow-list, refusals a page can read, CORS for the catalogue, and no token
 * ever echoed or logged. Clients outside browsers are unaffected.
 */
import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { SESSION_PATH, SUBPROTOCOL, decodeServerMessage, encodeBearerSubprotocol, encodeClientMessage } from "@golem-stream/wire";
import { createSessionServer, type Logger } from "../src/index.js";
import { demoStart, startTestServer, TOKEN, v, type TestServer } from "./helpers.js";

const APP = "http://app.example:5173";
const entry = (token: string): string => encodeBearerSubprotocol(token)!;

const logged: unknown[] = [];
const recordingLogger: Logger = {
  info: (message, fields) => void logged.push([message, fields]),
  warn: (message, fields) => void logged.push([message, fields]),
  error: (message, fields) => void logged.push([message, fields]),
};

let withBrowsers: TestServer;
let without: TestServer;
beforeAll(async () => {
  withBrowsers = await startTestServer({ browsers: { allowedOrigins: [APP, "https://other.example"] }, logger: recordingLogger });
  without = await startTestServer();
});
afterAll(async () => {
  await withBrowsers.dispose();
  await without.dispose();
});

interface Opened {
  readonly kind: "opened";
  /** The Sec-WebSocket-Protocol the server answered. */
  readonly selected: string | undefined;
  readonly close: { code: number; reason: string };
  readonly firstMessage: string | undefined;
}
interface Refused {
  readonly kind: "refused";
  readonly status: number;
  readonly body: unknown;
}

/**
 * Opens a session WebSocket as a browser would (protocols, Origin, no
 * Authorization unless given), sends a `count` start once open, and reports
 * how the handshake and the connection ended.
 */
function attempt(server: TestServer, protocols: string[], headers: Record<string, string> = {}): Promise<Opened | Refused> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(`${server.url}${SESSION_PATH}`, protocols, { headers });
    let selected: string | undefined;
    let firstMessage: string | undefined;
    socket.on("upgrade", (response) => (selected = response.headers["sec-websocket-protocol"] as string | undefined));
    socket.on("unexpected-response", (_request, response) => {
      let text = "";
      response.on("data", (chunk: Buffer) => (text += chunk.toString()));
      response.on("end", () => resolve({ kind: "refused", status: response.statusCode ?? 0, body: JSON.parse(text) }));
    });
    socket.on("open", () => socket.send(encodeClientMessage(demoStart("count", v.record(v.u32(2), v.u32(0))))));
    socket.on("message", (data: Buffer, isBinary) => {
      firstMessage ??= decodeServerMessage(new Uint8Array(data), isBinary).type;
      socket.close(1000);
    });
    socket.on("close", (code, reason) => resolve({ kind: "opened", selected, close: { code, reason: reason.toString() }, firstMessage }));
    socket.on("error", (error) => {
      if (!/Unexpected server response/.test(String(error))) reject(error);
    });
  });
}

describe("with browsers enabled", () => {
  it("a page of an allowed origin authenticates with the bearer entry; only the protocol's subprotocol is selected", async () => {
    const answer = await attempt(withBrowsers, [SUBPROTOCOL, entry(TOKEN)], { origin: APP });
    expect(answer).toEqual({
      kind: "opened",
      selected: SUBPROTOCOL,
      close: { code: 1000, reason: "" },
      firstMessage: "invocationAccepted",
    });
  });

  it("the entry may come first, and a client without Origin (outside a browser) may use it too", async () => {
    const answer = await attempt(withBrowsers, [entry(TOKEN), SUBPROTOCOL]);
    expect(answer).toMatchObject({ kind: "opened", selected: SUBPROTOCOL, firstMessage: "invocationAccepted" });
  });

  it("Authorization without Origin is unaffected", async () => {
    const answer = await attempt(withBrowsers, [SUBPROTOCOL], { authorization: `Bearer ${TOKEN}` });
    expect(answer).toMatchObject({ kind: "opened", selected: SUBPROTOCOL, firstMessage: "invocationAccepted" });
  });

  it("an origin not in the list is refused before any upgrade (403 forbidden), whatever the credential", async () => {
    for (const attemptArgs of [
      [[SUBPROTOCOL, entry(TOKEN)], { origin: "http://evil.example" }],
      [[SUBPROTOCOL], { origin: "http://evil.example", authorization: `Bearer ${TOKEN}` }],
      [[SUBPROTOCOL, entry(TOKEN)], { origin: "null" }],
      [[SUBPROTOCOL, entry(TOKEN)], { origin: `${APP}/` }],
    ] as const) {
      const answer = await attempt(withBrowsers, [...attemptArgs[0]], attemptArgs[1]);
      expect(answer).toEqual({ kind: "refused", status: 403, body: { code: "forbidden", error: expect.any(String) } });
    }
  });

  it("a refused bearer entry is told by a close a page can read (4401 unauthenticated), after which nothing is processed", async () => {
    const cases = [
      [SUBPROTOCOL, entry("wrong-token")],
      [SUBPROTOCOL, `${entry(TOKEN)}+`], // not base64url
      [SUBPROTOCOL, `${entry(TOKEN).slice(0, -1)}h`], // non-zero trailing bits: not the canonical spelling
      [SUBPROTOCOL, entry(TOKEN), entry("other-token")],
    ];
    for (const protocols of cases) {
      const answer = await attempt(withBrowsers, protocols, { origin: APP });
      expect(answer, protocols.join(",")).toEqual({
        kind: "opened",
        selected: SUBPROTOCOL,
        close: { code: 4401, reason: "unauthenticated" },
        firstMessage: undefined,
      });
    }
    // Two credentials at once are refused too.
    const both = await attempt(withBrowsers, [SUBPROTOCOL, entry(TOKEN)], { origin: APP, authorization: `Bearer ${TOKEN}` });
    expect(both).toMatchObject({ kind: "opened", close: { code: 4401, reason: "unauthenticated" }, firstMessage: undefined });
  });

  it("a refusal of an Authorization request stays an HTTP refusal", async () => {
    const answer = await attempt(withBrowsers, [SUBPROTOCOL], { origin: APP, authorization: "Bearer wrong" });
    expect(answer).toEqual({ kind: "refused", status: 401, body: { code: "unauthenticated", error: expect.any(String) } });
  });

  it("the catalogue answers CORS to allowed origins only", async () => {
    const path = "/v1/agents/types?application=demo&environment=default";
    const preflight = await http(withBrowsers, "OPTIONS", path, {
      origin: APP,
      "access-control-request-method": "GET",
      "access-control-request-headers": "authorization",
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers).toMatchObject({
      "access-control-allow-origin": APP,
      "access-control-allow-headers": "authorization",
      vary: "Origin",
    });
    const get = await http(withBrowsers, "GET", path, { origin: APP, authorization: `Bearer ${TOKEN}` });
    expect(get.status).toBe(200);
    expect(get.headers["access-control-allow-origin"]).toBe(APP);
    const foreign = await http(withBrowsers, "GET", path, { origin: "http://evil.example", authorization: `Bearer ${TOKEN}` });
    expect(foreign.status).toBe(403);
    expect(foreign.headers["access-control-allow-origin"]).toBeUndefined();
    const plain = await http(withBrowsers, "GET", path, { authorization: `Bearer ${TOKEN}` });
    expect(plain.status).toBe(200);
    expect(plain.headers["access-control-allow-origin"]).toBeUndefined();
  });

  it("no token, entry or Authorization value ever reaches the log", async () => {
    await attempt(withBrowsers, [SUBPROTOCOL, entry("wrong-secret-token")], { origin: APP });
    await attempt(withBrowsers, [SUBPROTOCOL, entry("another-secret")], { origin: "http://evil.example" });
    const text = JSON.stringify(logged);
    expect(logged.length).toBeGreaterThan(0); // the refused origin was logged: the logger is wired
    for (const secret of [TOKEN, "wrong-secret-token", "another-secret", "golem-stream.bearer."]) expect(text).not.toContain(secret);
  });
});

describe("without the option (the default)", () => {
  it("a bearer entry is not a credential: 401 over HTTP, nothing upgraded", async () => {
    const answer = await attempt(without, [SUBPROTOCOL, entry(TOKEN)], { origin: APP });
    expect(answer).toEqual({ kind: "refused", status: 401, body: { code: "unauthenticated", error: expect.any(String) } });
  });

  it("Origin is not checked, and Authorization works as before", async () => {
    const answer = await attempt(without, [SUBPROTOCOL], { origin: "http://anywhere.example", authorization: `Bearer ${TOKEN}` });
    expect(answer).toMatchObject({ kind: "opened", selected: SUBPROTOCOL, firstMessage: "invocationAccepted" });
  });
});

it("allowedOrigins must be origins, checked at construction", () => {
  const base = { store: {}, host: {}, keyring: {}, authenticator: () => undefined } as unknown as Parameters<typeof createSessionServer>[0];
  for (const allowedOrigins of [[], ["http://app.example/"], ["app.example"], ["*"], ["ftp://app.example"], [42]]) {
    expect(
      () => createSessionServer({ ...base, browsers: { allowedOrigins: allowedOrigins as string[] } }),
      JSON.stringify(allowedOrigins),
    ).toThrow(TypeError);
  }
});

function http(
  server: TestServer,
  method: string,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${server.httpUrl}${path}`, { method, headers });
    req.on("response", (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
    });
    req.on("error", reject);
    req.end();
  });
}
