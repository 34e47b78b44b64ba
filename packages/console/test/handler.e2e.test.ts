/**
 * The console's request handler on a plain Node HTTP server: the page and
 * its assets with their headers, nothing else (other paths, other methods,
 * paths that climb out of the directory are left to the caller).
 */
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { CONSOLE_ROOT, consoleHandler } from "../dist/node/index.js";

let server: Server;
let base: string;

beforeAll(async () => {
  const handler = consoleHandler();
  server = createServer((req, res) => {
    void handler(req, res).then((answered) => {
      if (!answered) res.writeHead(418).end("left alone");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

function fetchRaw(path: string, method = "GET"): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    // A raw path: URL parsing in fetch would normalize `..` away.
    const req = request(`${base}/`, { method, path });
    req.on("response", (res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => (body += chunk.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

it("serves the page at / with headers that keep it to its own origin", async () => {
  const page = await fetchRaw("/");
  expect(page.status).toBe(200);
  expect(page.body).toContain("<title>golem-stream console</title>");
  expect(page.headers).toMatchObject({
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
  });
  expect(page.headers["content-security-policy"]).toContain("connect-src 'self'");
  expect(page.headers["content-security-policy"]).toContain("frame-ancestors 'none'");
  expect((await fetchRaw("/index.html")).status).toBe(200);
});

it("serves every built asset, hashed and cached for a year; HEAD has no body", async () => {
  const assets = readdirSync(join(CONSOLE_ROOT, "assets"));
  expect(assets.some((name) => name.endsWith(".js"))).toBe(true);
  for (const name of assets) {
    const asset = await fetchRaw(`/assets/${name}`);
    expect(asset.status, name).toBe(200);
    expect(asset.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
  }
  const head = await fetchRaw(`/assets/${assets[0]}`, "HEAD");
  expect(head.status).toBe(200);
  expect(head.body).toBe("");
});

it("leaves everything else alone: other paths, other methods, climbing paths", async () => {
  for (const path of ["/nothing", "/assets/", "/../package.json", "/%2e%2e/package.json", "/assets/..%2F..%2Fpackage.json"]) {
    expect((await fetchRaw(path)).status, path).toBe(418);
  }
  expect((await fetchRaw("/", "POST")).status).toBe(418);
});

it("a root without a built page is refused at once, naming the fix", () => {
  const empty = mkdtempSync(join(tmpdir(), "golem-stream-console-empty-"));
  try {
    expect(() => consoleHandler({ root: empty })).toThrow(/not built.*incomplete; reinstall it/);
    expect(() => consoleHandler({ root: join(empty, "missing") })).toThrow(/not built.*incomplete; reinstall it/);
  } finally {
    rmSync(empty, { recursive: true, force: true });
  }
});
