/**
 * What a check leaves behind when it ends while something is still under way — above all when its
 * deadline fires mid-handshake, where a socket that opened after the cleanup stayed open for good
 * and kept the command from exiting. Each test fails if the resource outlives the check.
 */
import { createServer, type Server } from "node:http";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WebSocketServer } from "ws";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { SUBPROTOCOL } from "@golem-stream/wire";
import { ClientContext, runServerSuite, SuiteContext } from "../src/index.js";
import { CheckEnded } from "../src/lifetime.js";
import { startServerUnderTest, TOKEN, type ServerUnderTest } from "./support/server.js";

/** Long enough never to end a wait in these tests: whatever ends one here is the check's end. */
const NEVER_MS = 120_000;
/** How long a released socket or process may take to be gone on a loaded machine (a bound on the wait, not a measurement). */
const GONE_WITHIN_MS = 20_000;

function tcpConnections(server: Server): Promise<number> {
  return new Promise((resolve, reject) => server.getConnections((error, count) => (error ? reject(error) : resolve(count))));
}

/** A session endpoint that accepts TCP connections and holds every upgrade until told to answer. */
async function startHoldingServer(): Promise<{ url: string; http: Server; held: ((accept: boolean) => void)[]; close(): Promise<void> }> {
  const held: ((accept: boolean) => void)[] = [];
  const http = createServer();
  const wss = new WebSocketServer({
    server: http,
    handleProtocols: () => SUBPROTOCOL,
    verifyClient: (_info, callback) => void held.push((accept) => callback(accept)),
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const { port } = http.address() as { port: number };
  return {
    url: `ws://127.0.0.1:${port}`,
    http,
    held,
    async close() {
      for (const client of wss.clients) client.terminate();
      http.closeAllConnections();
      await new Promise((resolve) => wss.close(resolve));
      await new Promise((resolve) => http.close(resolve));
    },
  };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("a server check's end", () => {
  let holding: Awaited<ReturnType<typeof startHoldingServer>>;
  beforeAll(async () => {
    holding = await startHoldingServer();
  });
  afterAll(async () => {
    await holding?.close();
  });
  afterEach(() => {
    holding.held.splice(0);
  });

  const pending: [string, (ctx: SuiteContext) => Promise<unknown>][] = [
    ["terminates a connection still in its handshake: it never opens", (ctx) => ctx.connect()],
    ["abandons an upgrade probe still waiting for its answer", (ctx) => ctx.probe({ token: TOKEN, protocols: [SUBPROTOCOL] })],
  ];
  it.each(pending)("%s, even if the server answers afterwards", async (_name, start) => {
    const ctx = new SuiteContext({ url: holding.url, token: TOKEN, timeoutMs: NEVER_MS });
    const started = start(ctx);
    await vi.waitFor(() => expect(holding.held.length).toBe(1), { timeout: GONE_WITHIN_MS });
    ctx.cleanup();
    // The server learns that a peer left only when it writes to it: it answers now.
    holding.held[0]!(true);
    await expect(started).rejects.toBeInstanceOf(CheckEnded);
    await vi.waitFor(async () => expect(await tcpConnections(holding.http)).toBe(0), { timeout: GONE_WITHIN_MS, interval: 20 });
  });

  it("starts nothing once the check has ended", async () => {
    const ctx = new SuiteContext({ url: holding.url, token: TOKEN, timeoutMs: NEVER_MS });
    ctx.cleanup();
    await expect(ctx.connect()).rejects.toBeInstanceOf(CheckEnded);
    await expect(ctx.probe({ token: TOKEN })).rejects.toBeInstanceOf(CheckEnded);
    await expect(ctx.sleep(NEVER_MS)).rejects.toThrow();
    expect(holding.held.length).toBe(0);
  });
});

describe("the server suite with deadlines that fire at once", () => {
  let server: ServerUnderTest;
  beforeAll(async () => {
    server = await startServerUnderTest();
  });
  afterAll(async () => {
    await server?.dispose();
  });

  it("leaves no session WebSocket open on the server (golem_stream_connections_open back to 0)", async () => {
    // Deadlines of 1 and 20 ms: the first cuts most checks off while they connect, the second while they wait for the server.
    for (const checkTimeoutMs of [1, 20]) {
      const report = await runServerSuite({ url: server.url, token: TOKEN, checkTimeoutMs, concurrency: 4 });
      expect(report.failed).toBeGreaterThan(0);
      await vi.waitFor(async () => expect(await server.connectionsOpen()).toBe(0), { timeout: GONE_WITHIN_MS, interval: 50 });
    }
  }, 120_000);
});

describe("a client scenario's end", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "golem-stream-conformance-lifetime-"));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it("kills an adapter that has not said ready yet, and closes the scripted server", async () => {
    const pidFile = join(dir, "adapter.pid");
    const adapter = join(dir, "slow-adapter.mjs");
    // An adapter that starts but never gets ready: the scenario ends while `begin` waits for it.
    writeFileSync(
      adapter,
      `import { writeFileSync } from "node:fs";\nwriteFileSync(${JSON.stringify(pidFile)}, String(process.pid));\nsetInterval(() => {}, 1000);\n`,
    );
    const ctx = new ClientContext({ adapter: `node "${adapter}"`, timeoutMs: NEVER_MS });
    const beginning = ctx.begin(() => undefined, { method: "count", methodParameters: {} });
    const pid = await vi.waitFor(
      () => {
        const written = Number(readFileSync(pidFile, "utf8"));
        if (!(written > 0)) throw new Error("no pid yet");
        return written;
      },
      { timeout: GONE_WITHIN_MS, interval: 20 },
    );
    const serverUrl = ctx.server.url;
    await ctx.dispose();
    await expect(beginning).rejects.toBeInstanceOf(CheckEnded);
    await vi.waitFor(() => expect(isAlive(pid)).toBe(false), { timeout: GONE_WITHIN_MS, interval: 20 });
    await expect(fetch(serverUrl.replace(/^ws/, "http"))).rejects.toThrow();
  });
});
