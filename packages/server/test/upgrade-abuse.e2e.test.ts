/**
 * Hostile upgrades cannot hold the server's slots: a socket refused by a
 * close (the browser extension's refusal of a bad bearer entry) is dropped
 * soon after its close frame even when the peer never answers it, only
 * authenticated sockets count against `limits.maxConnections`, and an
 * address that fails to authenticate too often is refused before the
 * authenticator runs, for its window only (the table's bound and keys:
 * auth-throttle.test.ts).
 */
import { afterEach, describe, expect, it } from "vitest";
import { encodeBearerSubprotocol, SUBPROTOCOL } from "@golem-stream/wire";
import { demoStart, RawClient, v } from "./helpers.js";
import { rawUpgrade } from "./support/raw-upgrade.js";
import { ALICE, startMemoryServer, type MemoryServer } from "./support/memory-server.js";
import { ManualTimers } from "../src/testing/index.js";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createSessionServer, Keyring, MemorySessionStore } from "../src/index.js";
import { createDemoHost } from "../src/demo/index.js";

const APP = "http://app.example:5173";
const CLOSE = 0x8;

let running: MemoryServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

/** A start that is accepted at once and runs until the client goes. */
const countStart = () => demoStart("count", v.record(v.u32(1000), v.u32(1000)));

describe("refused upgrades hold no slot", () => {
  it("with maxConnections 3, upgrades refused by a close that never answer it lock nobody out, and are dropped", async () => {
    // Time moves only when the test says: the attackers' sockets stay open until it does.
    const timers = new ManualTimers();
    running = await startMemoryServer({ browsers: { allowedOrigins: [APP] }, limits: { maxConnections: 3 }, timers });
    const url = running.url;
    // The attack: a bearer subprotocol entry with a wrong token and no Origin; the close frame is never answered.
    const attackers = Array.from({ length: 6 }, () => rawUpgrade(url, [SUBPROTOCOL, encodeBearerSubprotocol("wrong-token")!]));
    for (const attacker of attackers) {
      const close = await attacker.frame(CLOSE);
      expect(close.payload.readUInt16BE(0)).toBe(4401);
    }
    // A valid client still connects and is served, while the six attackers' sockets are open.
    const client = await RawClient.connect(url, ALICE);
    client.send(countStart());
    expect((await client.next()).type).toBe("invocationAccepted");
    // A second after its close frame, the server drops every attacker (not after ws's 30 seconds).
    timers.advance(1000);
    await Promise.all(attackers.map((attacker) => attacker.ended));
    client.socket.close();
  });

  it("authenticated sockets still count: the fourth of three is refused with 503 overloaded", async () => {
    running = await startMemoryServer({ limits: { maxConnections: 3 } });
    const clients = await Promise.all([1, 2, 3].map(() => RawClient.connect(running!.url, ALICE)));
    const fourth = rawUpgrade(running.url, [SUBPROTOCOL], { Authorization: `Bearer ${ALICE}` });
    expect(await fourth.status).toMatch(/^HTTP\/1\.1 503 /);
    clients[0]!.socket.close();
    await clients[0]!.closed;
    // A slot freed by a session's close is free again (the count follows closes).
    const again = await RawClient.connect(running.url, ALICE);
    again.socket.close();
    for (const client of clients) client.socket.close();
  });
});

describe("failed authentications are throttled per address", () => {
  it("after the limit an address is refused (even with a valid token) until its window ends", async () => {
    let now = 1_000_000;
    running = await startMemoryServer({ now: () => now, limits: { authFailuresPerAddress: 3, authFailureWindowMs: 60_000 } });
    const upgrade = (token: string) => rawUpgrade(running!.url, [SUBPROTOCOL], { Authorization: `Bearer ${token}` }).status;
    for (let i = 0; i < 3; i++) expect(await upgrade("wrong")).toMatch(/^HTTP\/1\.1 401 /);
    expect(await upgrade(ALICE)).toMatch(/^HTTP\/1\.1 503 /);
    // The catalogue authenticates too, and is throttled the same way.
    const catalogue = await fetch(`${running.httpUrl}/v1/agents/types?application=demo&environment=default`, {
      headers: { authorization: `Bearer ${ALICE}` },
    });
    expect(catalogue.status).toBe(503);
    expect(await catalogue.json()).toMatchObject({ code: "overloaded" });
    now += 60_000;
    expect(await upgrade(ALICE)).toMatch(/^HTTP\/1\.1 101 /);
  });

  it("guesses sent at once reach an authenticator that takes its time at most as often as the limit allows; the rest are refused", async () => {
    const GUESSES = 60;
    let calls = 0;
    let upgrades = 0;
    /** Every authentication is held until the server has read every guess: all are under way at once. */
    let allRead!: () => void;
    const everyGuessRead = new Promise<void>((resolve) => (allRead = resolve));
    const http = createServer();
    // Before the session server's own listener: counts each upgrade as the server reads it.
    http.on("upgrade", () => {
      if (++upgrades === GUESSES) allRead();
    });
    const server = createSessionServer({
      store: new MemorySessionStore(),
      host: createDemoHost(),
      keyring: Keyring.generate("k1"),
      limits: { authFailuresPerAddress: 5, authFailureWindowMs: 60_000 },
      authenticator: async () => {
        calls++;
        await everyGuessRead;
        return undefined;
      },
    });
    server.attach(http);
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = http.address() as AddressInfo;
      const statuses = await Promise.all(
        Array.from(
          { length: GUESSES },
          () => rawUpgrade(`ws://127.0.0.1:${port}`, [SUBPROTOCOL], { Authorization: "Bearer wrong" }).status,
        ),
      );
      expect(calls).toBe(5);
      expect(statuses.filter((status) => / 401 /.test(status))).toHaveLength(5);
      expect(statuses.filter((status) => / 503 /.test(status))).toHaveLength(GUESSES - 5);
    } finally {
      await server.close();
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    }
  });

  it("requests with no credential at all are not failures: as many as a page on another site can send lock nobody out", async () => {
    running = await startMemoryServer({ limits: { authFailuresPerAddress: 3, authFailureWindowMs: 60_000 } });
    const catalogueUrl = `${running.httpUrl}/v1/agents/types?application=demo&environment=default`;
    // What a cross-site page's no-cors fetch sends: no Authorization (it cannot set one), no Origin.
    for (let i = 0; i < 10; i++) {
      const blind = await fetch(catalogueUrl, { headers: { "sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors" } });
      expect(blind.status).toBe(401);
      expect(await rawUpgrade(running.url, [SUBPROTOCOL]).status).toMatch(/^HTTP\/1\.1 401 /);
    }
    expect((await fetch(catalogueUrl, { headers: { authorization: `Bearer ${ALICE}` } })).status).toBe(200);
    expect(await rawUpgrade(running.url, [SUBPROTOCOL], { Authorization: `Bearer ${ALICE}` }).status).toMatch(/^HTTP\/1\.1 101 /);
    // A wrong credential still counts.
    for (let i = 0; i < 3; i++)
      expect(await rawUpgrade(running.url, [SUBPROTOCOL], { Authorization: "Bearer wrong" }).status).toMatch(/ 401 /);
    expect(await rawUpgrade(running.url, [SUBPROTOCOL], { Authorization: `Bearer ${ALICE}` }).status).toMatch(/ 503 /);
  });

  it("0 turns the throttle off", async () => {
    running = await startMemoryServer({ limits: { authFailuresPerAddress: 0 } });
    for (let i = 0; i < 25; i++)
      expect(await rawUpgrade(running.url, [SUBPROTOCOL], { Authorization: "Bearer wrong" }).status).toMatch(/ 401 /);
  });
});
