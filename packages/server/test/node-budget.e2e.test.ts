/**
 * The node's byte budget (`limits.maxQueuedBytesPerNode`) over real
 * sockets: several sessions whose commits are held together hand the store
 * no more than the node's budget allows, where each session's own budget
 * would allow several times that; once commits go on, every socket is read
 * again and everything arrives. Counts only, no timing: the checks wait for
 * the server's pauses (an observer's events).
 */
import { afterEach, describe, expect, it } from "vitest";
import { Keyring } from "@golem-stream/tokens";
import { createSessionServer, type SessionServer } from "../src/index.js";
import { createDemoHost } from "../src/demo/index.js";
import { Pauses, RawClient, TOKEN, demoStart, v } from "./helpers.js";
import { CountingStore, ITEM, expectAllReversed, reverse, sendAll } from "./support/counting-store.js";

const SESSION_BUDGET = 2 * 1024 * 1024;
const SESSIONS = 4;

/** The server's backpressure pauses, for the test running now. */
let pauses = new Pauses();

/** The demo server with a node budget as small as one session's. */
function budgetServer(store: CountingStore): SessionServer {
  pauses = new Pauses();
  return createSessionServer({
    store,
    host: createDemoHost(),
    keyring: Keyring.generate("k1"),
    authenticator: (token) => (token === TOKEN ? { account: "acme", principal: "alice" } : undefined),
    limits: { maxQueuedBytesPerSession: SESSION_BUDGET, maxQueuedBytesPerNode: SESSION_BUDGET },
    observers: [pauses.observer],
  });
}

describe("node byte budget", () => {
  let server: SessionServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it("with commits held, all sessions together hand the store at most the node's budget; then every session completes", async () => {
    // `reverse` takes each item at once, so what the store is handed is what the permits still
    // hold: up to a session's budget each (8 MiB for the four, without the node's budget), up to
    // the node's budget (2 MiB) for all of them together with it.
    const store = new CountingStore();
    server = budgetServer(store);
    const { url } = await server.listen();
    let open!: () => void;
    store.gate = new Promise((resolve) => (open = resolve));
    const items = 200; // 6.25 MiB per session
    const sessions = await Promise.all(Array.from({ length: SESSIONS }, () => reverse(url)));
    for (const { client, input } of sessions) sendAll(client, input, items);

    // The node's budget is spent and nothing commits: connections stop reading.
    await pauses.reached("node-budget");
    const handed = store.maxInputUncommittedBytes;
    expect(store.inputCommitted).toBe(0);
    // Slack: messages a connection had already read when the budget ran out (a few per socket).
    expect(handed).toBeLessThanOrEqual(SESSION_BUDGET + SESSIONS * 4 * ITEM);
    // The budget's own count: its highest value includes what the sockets had read when it ran out.
    expect(server.bufferedBytes().peak).toBeLessThanOrEqual(SESSION_BUDGET + SESSIONS * 4 * 2 * ITEM);

    open();
    store.gate = undefined;
    for (const { client, output } of sessions) {
      const { messages } = await client.all();
      expect(messages.filter((m) => m.type === "inputStreamAck").at(-1)).toMatchObject({
        highestContiguousSequence: BigInt(items),
        terminal: true,
      });
      expectAllReversed(messages, output, items);
    }
    // Everything it counted was given back: nothing leaks out of the budget.
    expect(server.bufferedBytes().held).toBe(0);
  });

  it("clients that stop reading their output do not stop the node: another client's invocation still runs to the end", async () => {
    // Unsent output is counted in its session's permits (it keeps that session's input out), and
    // used to be counted in the node's budget too: two stalled readers spent it, and then no
    // connection's socket was read, a new client's start included.
    server = budgetServer(new CountingStore());
    const { url } = await server.listen();
    const stalled: RawClient[] = [];
    for (let i = 0; i < 2; i++) {
      const client = await RawClient.connect(url);
      client.socket.pause();
      client.send(demoStart("blobs", v.record(v.u32(64), v.u32(256 * 1024))));
      stalled.push(client);
    }
    // Until both stalled sessions' producers have filled their windows.
    await pauses.reachedTimes("output-window", 2);
    const other = await RawClient.connect(url);
    other.send(demoStart("count", v.record(v.u32(3), v.u32(0))));
    const { messages } = await other.all();
    expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
    for (const client of stalled) client.terminate();
  });

  it("sessions stuck holding the budget stop only themselves: a new client's invocation runs to the end (its start and its close handshake are read); the stuck uploads complete once the store goes on", async () => {
    // Uploads whose commits are held keep the node's budget spent for as long as the store waits.
    // A connection whose session holds nothing of it is not paused (a start, a close handshake, a
    // cancel get through), so no stuck session stops the rest of the node.
    const store = new CountingStore();
    server = budgetServer(store);
    const { url } = await server.listen();
    let open!: () => void;
    const held = new Promise<void>((resolve) => (open = resolve));
    store.gate = held;
    const stuck = await Promise.all(Array.from({ length: 2 }, () => reverse(url)));
    for (const { client, input } of stuck) sendAll(client, input, 200);
    await pauses.reached("node-budget");
    expect(server.bufferedBytes().held).toBeGreaterThanOrEqual(SESSION_BUDGET);

    const other = await RawClient.connect(url);
    other.send(demoStart("count", v.record(v.u32(3), v.u32(0))));
    const { messages, closed } = await other.all();
    expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
    expect(closed.code).toBe(1000);

    open();
    store.gate = undefined;
    for (const { client, output } of stuck) expectAllReversed((await client.all()).messages, output, 200);
  });
});
