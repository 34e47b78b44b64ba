/**
 * Pages the server's own listener serves beside the protocol (`pages`, how
 * the CLI serves the web console) and `browsers.allowListeningOrigins`: the
 * origins of the listening address become allowed once the port is known,
 * and no other origin is (no Host-header matching, so a DNS-rebinding page
 * stays refused).
 */
import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { SESSION_PATH, SUBPROTOCOL, encodeBearerSubprotocol } from "@golem-stream/wire";
import { listeningOrigins } from "../src/transport/browser-access.js";
import { startTestServer, TOKEN, type TestServer } from "./helpers.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    browsers: { allowedOrigins: [], allowListeningOrigins: true },
    pages: (request, response) => {
      if (request.url === "/boom") throw new Error("page failed");
      if (request.url !== "/") return false;
      response.writeHead(200, { "content-type": "text/plain" }).end("console");
      return true;
    },
  });
});
afterAll(() => server.dispose());

function get(path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${server.httpUrl}${path}`, { headers });
    req.on("response", (res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => (body += chunk.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** The Sec-WebSocket-Protocol answer, or the refusal's HTTP status. */
function open(origin: string): Promise<string | number> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(`${server.url}${SESSION_PATH}`, [SUBPROTOCOL, encodeBearerSubprotocol(TOKEN)!], { headers: { origin } });
    socket.on("upgrade", (response) => {
      resolve(String(response.headers["sec-websocket-protocol"]));
      socket.terminate();
    });
    socket.on("unexpected-response", (_request, response) => {
      resolve(response.statusCode ?? 0);
      response.resume();
    });
    socket.on("error", (error) => {
      if (!/Unexpected server response|closed before/.test(String(error))) reject(error);
    });
  });
}

describe("pages", () => {
  it("answers what it knows; the rest stays the server's 404; protocol endpoints never reach it", async () => {
    expect(await get("/")).toEqual({ status: 200, body: "console" });
    expect((await get("/nothing")).status).toBe(404);
    expect((await get("/v1/agents/types?application=demo&environment=default")).status).toBe(401);
  });

  it("a handler that throws is a 500, not a crash", async () => {
    expect((await get("/boom")).status).toBe(500);
    expect((await get("/")).status).toBe(200);
  });
});

describe("allowListeningOrigins", () => {
  it("allows the listening address's origins, with localhost for loopback, and nothing else", async () => {
    const port = new URL(server.httpUrl).port;
    expect(await open(`http://127.0.0.1:${port}`)).toBe(SUBPROTOCOL);
    expect(await open(`http://localhost:${port}`)).toBe(SUBPROTOCOL);
    expect(await open(`http://127.0.0.1:${Number(port) + 1}`)).toBe(403);
    // A DNS-rebinding page: its Host header names this server, its origin is foreign.
    expect(await open(`http://rebound.example:${port}`)).toBe(403);
  });

  it("listeningOrigins: specific, loopback and wildcard binds", () => {
    expect(listeningOrigins("192.0.2.7", 80, ["10.0.0.1"])).toEqual(["http://192.0.2.7"]);
    expect(listeningOrigins("::1", 8080, [])).toEqual(["http://[::1]:8080", "http://localhost:8080"]);
    expect(listeningOrigins("0.0.0.0", 8080, ["127.0.0.1", "10.0.0.5", "fe80::1", "::1"])).toEqual([
      "http://localhost:8080",
      "http://127.0.0.1:8080",
      "http://10.0.0.5:8080",
      "http://[::1]:8080",
    ]);
  });
});
