/**
 * An invocation-wide cancel issued while the client is cut off from the real
 * server on loopback (a TCP proxy resets the connection and then refuses
 * every new one): the caller's outcome is immediate; once the proxy lets
 * connections through again the runtime resumes and cancels every stream,
 * which another client taking the session over then sees on the server. When
 * the server stays unreachable past the reconnect policy, the cancel is
 * reported undelivered and nothing is left running.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ServerMessage } from "@golem-stream/wire";
import { createClient, inputStream, type CancelOutcome, type Invocation } from "../src/index.js";
import { demo, firstStream, record, u32 } from "./support/demo.js";
import { startServer, TOKEN } from "./support/embedded.js";
import { acceptanceInputs, endOf, openSource, recording } from "./support/recording.js";
import { startTcpProxy, type TcpProxy } from "@golem-stream/test-support";

let server: Awaited<ReturnType<typeof startServer>>;
beforeAll(async () => void (server = await startServer()));
afterAll(async () => server.dispose());

/** A proxy that relays while open and resets every connection at its first byte while blocked. */
async function gate(): Promise<TcpProxy & { block(): void; open(): void }> {
  let blocked = false;
  const proxy = await startTcpProxy({ upstream: server.url, plan: () => (blocked ? { refuse: true } : undefined) });
  return Object.assign(proxy, { block: () => void (blocked = true), open: () => void (blocked = false) });
}

const clientThrough = (proxy: TcpProxy, maxAttempts = 1000) =>
  createClient({ url: proxy.url, token: TOKEN, reconnect: { initialDelayMs: 5, maxDelayMs: 20, maxAttempts } });

/** Cuts the client off, waits until it is between connections, then cancels the invocation. */
async function cancelWhileCut(call: Invocation, proxy: Awaited<ReturnType<typeof gate>>) {
  proxy.block();
  const disconnected = new Promise<void>((resolve) => {
    const off = call.on("reconnecting", () => {
      off();
      resolve();
    });
  });
  proxy.cutOpen();
  await disconnected;
  const outcome = call.cancel();
  const seen = { settled: false, delivered: 0, undelivered: 0 };
  void outcome.then(() => (seen.settled = true));
  call.on("cancelDelivered", () => seen.delivered++);
  call.on("cancelUndelivered", () => seen.undelivered++);
  // The caller learns at once; the server cannot have heard anything yet.
  await expect(call.finished).rejects.toMatchObject({ kind: "aborted" });
  expect(seen.settled).toBe(false);
  return { outcome, seen };
}

/** Another client takes the session over directly (no proxy), recording what the server sends it. */
function takeOver(call: Invocation): { second: Invocation; received: ServerMessage[] } {
  const { transport, received } = recording();
  return { second: createClient({ url: server.url, token: TOKEN, transport }).takeover(call.state!), received };
}

async function delivered(
  outcome: Promise<CancelOutcome>,
  seen: { delivered: number; undelivered: number },
  proxy: TcpProxy,
): Promise<void> {
  expect(await outcome).toEqual({ kind: "delivered" });
  expect(seen).toMatchObject({ delivered: 1, undelivered: 0 });
  // The client closed its connection after the cancellations; the server saw them before the close.
  await proxy.idle();
}

describe("a cancel while the connection is cut reaches the server once it is reachable again", () => {
  it("count: the output stream ends cancelled (reason cancelled) and the invocation finishes", async () => {
    const proxy = await gate();
    try {
      const call = clientThrough(proxy).invoke({ ...demo, method: "count", methodParameters: record(u32(100_000), u32(1)) });
      const iterator = (await firstStream(call)).values()[Symbol.asyncIterator]();
      for (let i = 0; i < 3; i++) await iterator.next();
      const { outcome, seen } = await cancelWhileCut(call, proxy);
      await expect(iterator.next()).rejects.toMatchObject({ kind: "aborted" });
      proxy.open();
      await delivered(outcome, seen, proxy);

      const { second } = takeOver(call);
      expect(await endOf((await firstStream(second)).values())).toMatchObject({ kind: "stream-cancelled", reason: "cancelled" });
      expect(await second.finished).toEqual({ kind: "success" });
    } finally {
      await proxy.close();
    }
  });

  it("reverse: the open input is terminal on the server, its output ends, the invocation finishes", async () => {
    const proxy = await gate();
    try {
      const input = inputStream.strings(openSource(["abc", "def", "ghi"]));
      const call = clientThrough(proxy).invoke({ ...demo, method: "reverse", methodParameters: record(input) });
      const iterator = (await firstStream(call)).values()[Symbol.asyncIterator]();
      for (let i = 0; i < 3; i++) await iterator.next();
      const { outcome, seen } = await cancelWhileCut(call, proxy);
      proxy.open();
      await delivered(outcome, seen, proxy);

      const { second, received } = takeOver(call);
      // The agent's output ends either way: cancelled by us, or failed because its input was.
      const ended = await (await firstStream(second)).ended;
      expect(["cancelled", "error"]).toContain(ended.kind);
      expect(acceptanceInputs(received)).toEqual([expect.objectContaining({ inputHighWater: { sequence: 3n, terminal: true } })]);
      await second.finished.catch(() => undefined);
      expect(received.at(-1)?.type).toBe("invocationFinished");
    } finally {
      await proxy.close();
    }
  });

  it("digest: the u8 input is cancelled; with no result yet the delivery lasts until the invocation finishes", async () => {
    const proxy = await gate();
    try {
      const chunks = Array.from({ length: 4 }, (_, i) => new Uint8Array(1000).fill(i));
      const call = clientThrough(proxy).invoke({
        ...demo,
        method: "digest",
        methodParameters: record(inputStream.bytes(openSource(chunks))),
      });
      await call.accepted;
      const { outcome, seen } = await cancelWhileCut(call, proxy);
      proxy.open();
      await delivered(outcome, seen, proxy);

      const { second, received } = takeOver(call);
      await second.finished.catch(() => undefined);
      expect(acceptanceInputs(received)).toEqual([
        expect.objectContaining({ inputHighWater: expect.objectContaining({ terminal: true }) }),
      ]);
      expect(received.at(-1)?.type).toBe("invocationFinished");
    } finally {
      await proxy.close();
    }
  });
});

describe("a cancel while the server stays unreachable", () => {
  it("is reported undelivered (connection-lost) after the reconnect policy's attempts, with no connection left open", async () => {
    const proxy = await gate();
    try {
      const call = clientThrough(proxy, 3).invoke({ ...demo, method: "count", methodParameters: record(u32(100_000), u32(1)) });
      const iterator = (await firstStream(call)).values()[Symbol.asyncIterator]();
      await iterator.next();
      const errors: unknown[] = [];
      call.on("cancelUndelivered", ({ error }) => errors.push(error));
      const { outcome, seen } = await cancelWhileCut(call, proxy);
      expect(await outcome).toMatchObject({ kind: "undelivered", error: { kind: "connection-lost" } });
      expect(errors).toEqual([expect.objectContaining({ kind: "connection-lost" })]);
      expect(seen.delivered).toBe(0);
      await proxy.idle();
      // The first connection and exactly three attempts: the runtime stopped there.
      expect(proxy.connections).toHaveLength(4);
      await expect(call.finished).rejects.toMatchObject({ kind: "aborted" });

      // The cancellations never arrived: the stream still runs on the server, and a takeover
      // (the saved state stays usable) reads on from the delivered cursor.
      const { second } = takeOver(call);
      const items = (await firstStream(second)).values()[Symbol.asyncIterator]();
      expect((await items.next()).done).toBe(false);
      await second.cancel();
    } finally {
      await proxy.close();
    }
  });
});
