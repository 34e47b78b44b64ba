/**
 * A server restart fails every invocation it was running that is not replayable (the server's
 * docs/durable-execution.md), and says no more than `invocation-failed`: the streams end
 * cancelled with that reason, the invocation fails with the generic `invocation failed`. Only
 * this process knows it was away from the server meanwhile, so its errors say that a restart may
 * be why, as the CLI does (docs/protocol/client.md §3); kinds, codes and reasons stay the
 * server's. Before, a `for await` ended with a bare `stream cancelled: invocation-failed`. A
 * failure the server gives a reason for (limit-exceeded) after a cut says that reason instead.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defineCatalogue, implement, startEmbeddedServer, type EmbeddedServer } from "@golem-stream/server";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ClientError, createClient, defineAgentType, t } from "../src/index.js";
import { TOKEN } from "./support/embedded.js";
import { startTcpProxy } from "@golem-stream/test-support";

const ticker = defineAgentType({
  name: "ticker",
  constructor: t.record({}),
  methods: {
    // Not replayable: a restart fails it.
    slow: { params: t.record({}), result: t.stream(t.u32()), durability: "none" },
    slowValue: { params: t.record({}), result: t.u32(), durability: "none" },
    boom: { params: t.record({}), result: t.u32(), durability: "none" },
    fill: { params: t.record({}), result: t.stream(t.string()), durability: "none" },
  },
});

const never = new Promise<never>(() => undefined);
let started: () => void = () => undefined;
let go: () => void = () => undefined;

const TICKER = implement(ticker, {
  async slow() {
    return async (writer) => {
      await writer.write(0);
      started();
      await never;
    };
  },
  async slowValue() {
    started();
    return never;
  },
  async boom() {
    throw new Error("the agent's own failure, which the server does not pass on");
  },
  async fill() {
    return async (writer) => {
      await writer.write("first");
      started();
      await new Promise<void>((resolve) => (go = resolve));
      // More than the principal may keep stored (the second server's bound): limit-exceeded.
      for (let i = 0; i < 100; i++) await writer.write("x".repeat(10_000));
    };
  },
});

const agents = defineCatalogue({ applications: { app: { prod: [TICKER] } } });
const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-restart-failure-"));
let server: EmbeddedServer;
let port = 0;
const listen = async (): Promise<EmbeddedServer> =>
  (server = await startEmbeddedServer({ port, host: "127.0.0.1", dataDir, tokens: [TOKEN], synchronous: "normal", agents }));

beforeAll(async () => {
  await listen();
  port = Number(new URL(server.url).port);
});
afterAll(async () => {
  await server.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const connect = () =>
  createClient({ url: server.url, token: TOKEN, reconnect: { initialDelayMs: 20, maxDelayMs: 100, maxAttempts: 100 } }).connect(ticker, {
    application: "app",
    environment: "prod",
    constructorArgs: {},
  });

const RESTART =
  /while this process was away from it, .*it may have been a server restart, which fails every invocation it was running that is not replayable/;

it("a for await over the output of an invocation a restart failed: stream-cancelled, its reason, and a word of the restart", async () => {
  const agent = await connect();
  const running = new Promise<void>((resolve) => (started = resolve));
  const call = agent.slow({});
  const reconnected = new Promise<void>((resolve) => call.invocation.on("reconnecting", () => resolve()));
  const seen: number[] = [];
  const reading = (async () => {
    for await (const item of await call) {
      seen.push(item);
      if (seen.length === 1) await running.then(restart);
    }
  })();
  async function restart(): Promise<void> {
    await server.close();
    await reconnected;
    await listen();
  }
  const error = await reading.catch((e: unknown) => e);
  expect(error).toBeInstanceOf(ClientError);
  expect(error).toMatchObject({ kind: "stream-cancelled", reason: "invocation-failed", code: undefined });
  expect((error as Error).message).toMatch(/^stream cancelled: invocation-failed: the invocation failed on the server /);
  expect((error as Error).message).toMatch(RESTART);
  expect(seen).toEqual([0]);
  const failed = await call.invocation.finished.catch((e: unknown) => e);
  expect(failed).toMatchObject({ kind: "invocation-failed", code: "invocation-failed" });
  expect((failed as Error).message).toMatch(/^invocation failed \(/);
  expect((failed as Error).message).toMatch(RESTART);
});

it("a call without a stream says it in the invocation's failure", async () => {
  const agent = await connect();
  const running = new Promise<void>((resolve) => (started = resolve));
  const call = agent.slowValue({});
  const reconnected = new Promise<void>((resolve) => call.invocation.on("reconnecting", () => resolve()));
  await running;
  await server.close();
  await reconnected;
  await listen();
  const error = await call.catch((e: unknown) => e);
  expect(error).toMatchObject({ kind: "invocation-failed", code: "invocation-failed" });
  expect((error as Error).message).toMatch(RESTART);
});

it("a failure without a reason while this process was never away says nothing of a restart", async () => {
  const agent = await connect();
  const error = await agent.boom({}).catch((e: unknown) => e);
  expect(error).toMatchObject({ kind: "invocation-failed", code: "invocation-failed", message: "invocation failed" });
});

it("a failure with a reason after this process was away names the reason on the stream, not a restart", async () => {
  const limitedDir = mkdtempSync(join(tmpdir(), "golem-stream-limited-"));
  const limited = await startEmbeddedServer({
    port: 0,
    host: "127.0.0.1",
    dataDir: limitedDir,
    tokens: [TOKEN],
    synchronous: "normal",
    agents,
    limits: { maxStoredBytesPerPrincipal: 200_000 },
  });
  const proxy = await startTcpProxy({ upstream: limited.url });
  try {
    const client = createClient({ url: proxy.url, token: TOKEN, reconnect: { initialDelayMs: 5, maxDelayMs: 40, maxAttempts: 30 } });
    const agent = await client.connect(ticker, { application: "app", environment: "prod", constructorArgs: {} });
    const running = new Promise<void>((resolve) => (started = resolve));
    const call = agent.fill({});
    let accepted = 0;
    const reaccepted = new Promise<void>((resolve) => call.invocation.on("accepted", () => ++accepted === 2 && resolve()));
    const reading = (async () => {
      for await (const item of await call) if (item === "first") await running.then(() => proxy.cutOpen());
    })();
    await reaccepted;
    go();
    const error = await reading.catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: "stream-cancelled", reason: "invocation-failed" });
    expect((error as Error).message).toMatch(/^stream cancelled: invocation-failed: limit-exceeded: /);
    expect((error as Error).message).not.toMatch(RESTART);
    await expect(call.invocation.finished).rejects.toMatchObject({ kind: "invocation-failed", code: "limit-exceeded" });
  } finally {
    await proxy.close();
    await limited.close();
    rmSync(limitedDir, { recursive: true, force: true });
  }
});

it("a first connection refused before anything was accepted is no time away: a failure without a reason stays the server's word", async () => {
  // The network is down for the first WebSocket connection: the start is sent on the second.
  const proxy = await startTcpProxy({
    upstream: server.url,
    plan: ({ webSocket }) => (webSocket && refusedOnce() ? { refuse: true } : undefined),
  });
  let refusals = 0;
  function refusedOnce(): boolean {
    return refusals++ === 0;
  }
  try {
    const client = createClient({ url: proxy.url, token: TOKEN, reconnect: { initialDelayMs: 5, maxDelayMs: 40, maxAttempts: 30 } });
    const agent = await client.connect(ticker, { application: "app", environment: "prod", constructorArgs: {} });
    const error = await agent.boom({}).catch((e: unknown) => e);
    expect(proxy.refused).toBe(1);
    expect(error).toMatchObject({ kind: "invocation-failed", code: "invocation-failed", message: "invocation failed" });
  } finally {
    await proxy.close();
  }
});
