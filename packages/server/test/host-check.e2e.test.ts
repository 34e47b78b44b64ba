/**
 * The Host check of the plain HTTP endpoints against DNS rebinding:
 * `/metrics`, `/healthz`, `/readyz`, the catalogue and the pages answer a
 * Host of `localhost`, an IP address, or one of `publicHosts`, and refuse
 * any other name with 403 `forbidden`; the session endpoint and a host
 * server's own paths (`attach`) are not affected.
 */
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SUBPROTOCOL } from "@golem-stream/wire";
import { createSessionServer, Keyring, MemorySessionStore, type SessionServer } from "../src/index.js";
import { createDemoHost } from "../src/demo/index.js";
import { rawUpgrade } from "./support/raw-upgrade.js";
import { ALICE, startMemoryServer, type MemoryServer } from "./support/memory-server.js";

/** GET `path` with this Host header; the status. */
function statusWithHost(httpUrl: string, path: string, host: string): Promise<number> {
  const { hostname, port } = new URL(httpUrl);
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port, path, headers: { host, authorization: `Bearer ${ALICE}` } }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end();
  });
}

const PATHS = ["/metrics", "/healthz", "/readyz", "/v1/agents/types?application=demo&environment=default", "/"];

let running: MemoryServer;
beforeAll(async () => {
  running = await startMemoryServer({
    metrics: true,
    healthEndpoints: true,
    publicHosts: ["golem.example.com", ".corp.example"],
    pages: (_request, response) => {
      response.end("console");
      return true;
    },
  });
});
afterAll(() => running.close());

describe("the Host check", () => {
  it("refuses every plain HTTP endpoint for a name the server is not reached by", async () => {
    for (const path of PATHS) expect(await statusWithHost(running.httpUrl, path, "evil.example:8080"), path).toBe(403);
  });

  it("answers localhost, IP addresses and the public hosts", async () => {
    const port = new URL(running.httpUrl).port;
    for (const host of [
      `localhost:${port}`,
      `127.0.0.1:${port}`,
      `[::1]:${port}`,
      "golem.example.com",
      "GOLEM.example.com.",
      `build.corp.example:${port}`,
      "app.localhost",
    ]) {
      for (const path of PATHS) expect(await statusWithHost(running.httpUrl, path, host), `${host} ${path}`).toBe(200);
    }
  });

  it("does not apply to the session endpoint (browsers are checked by Origin there)", async () => {
    const upgrade = rawUpgrade(running.url, [SUBPROTOCOL], { Authorization: `Bearer ${ALICE}`, Host: "evil.example" });
    expect(await upgrade.status).toMatch(/ 101 /);
    upgrade.socket.destroy();
  });
});

describe("attached to an application's server", () => {
  let http: Server;
  let server: SessionServer;
  let store: MemorySessionStore;
  beforeAll(async () => {
    store = new MemorySessionStore();
    server = createSessionServer({
      store,
      host: createDemoHost(),
      keyring: Keyring.generate("k1"),
      authenticator: () => undefined,
      healthEndpoints: true,
    });
    http = createServer((req, res) => {
      if (req.url === "/app") res.end("app");
    });
    server.attach(http);
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  });
  afterAll(async () => {
    await server.close();
    await new Promise((resolve) => http.close(resolve));
    await store.close();
  });

  it("checks its own endpoints and leaves the application's paths alone", async () => {
    const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    expect(await statusWithHost(url, "/healthz", "evil.example")).toBe(403);
    expect(await statusWithHost(url, "/app", "evil.example")).toBe(200);
  });
});
