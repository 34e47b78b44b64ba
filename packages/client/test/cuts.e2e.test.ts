/**
 * Cuts the TCP connection at many points of real invocations (a proxy resets
 * both sides mid-stream) and checks the protocol's promise end to end: the
 * consumer sees every output item exactly once, in order, with no gap, and the
 * server receives every input item exactly once (its output or digest would
 * differ otherwise).
 *
 * Cut points are spread over the byte volume of an uncut run, so they land in
 * the handshake, before acceptance, in the middle of input, of output, of
 * ACKs and of the final messages. Each run cuts up to three consecutive
 * connections, so retries of retries are exercised too.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, inputStream, wsTransport, type Client } from "../src/index.js";
import { demo, collect, fieldsOf, firstStream, randomChunks, record, sha256, u32 } from "./support/demo.js";
import { startServer, TOKEN } from "./support/embedded.js";
import { startTcpProxy } from "@golem-stream/test-support";

let server: Awaited<ReturnType<typeof startServer>>;
beforeAll(async () => void (server = await startServer()));
afterAll(async () => server.dispose());

const POINTS = 16;

const clientFor = (url: string): Client =>
  createClient({ url, token: TOKEN, reconnect: { initialDelayMs: 5, maxDelayMs: 40, maxAttempts: 30 } });

/** Runs `scenario` once uncut to learn its byte volume, then once per cut point. */
async function acrossCuts<T>(scenario: (client: Client) => Promise<T>, check: (value: T, label: string) => void): Promise<number> {
  const calibration = await startTcpProxy({ upstream: server.url });
  check(await scenario(clientFor(calibration.url)), "uncut");
  const total = calibration.bytes;
  await calibration.close();
  let cutsSeen = 0;
  for (let i = 1; i <= POINTS; i++) {
    const first = Math.max(1, Math.round((total * i) / (POINTS + 1)));
    // The first connection dies at the cut point, the next two die early in their own lives.
    const budgets = [first, Math.round(first / 3) + 600, 900];
    const proxy = await startTcpProxy({ upstream: server.url, plan: ({ index }) => ({ cutAfter: budgets[index] }) });
    try {
      check(await scenario(clientFor(proxy.url)), `cut at ${first} of ${total} bytes`);
      cutsSeen += proxy.cuts;
    } finally {
      await proxy.close();
    }
  }
  return cutsSeen;
}

describe("TCP cuts at many points", () => {
  it("reverse: every input item reaches the server once, every output item reaches the consumer once, in order", async () => {
    // Some items not ASCII: what the client keeps for a resend is their UTF-8, decoded back for it.
    const input = Array.from({ length: 120 }, (_, i) => `item-${i}-${"ab".repeat(i % 17)}${i % 5 === 0 ? "é€😀" : ""}`);
    const expected = input.map((s) => Array.from(s).reverse().join(""));
    const cuts = await acrossCuts(
      async (client) => {
        const call = client.invoke({ ...demo, method: "reverse", methodParameters: record(inputStream.strings(input)) });
        const items = [];
        for await (const item of (await firstStream(call)).values()) {
          items.push(item);
          if (items.length % 10 === 0) await new Promise((resolve) => setTimeout(resolve, 2));
        }
        await call.finished;
        return items.map((item) => item.value);
      },
      (items, label) => expect(items, label).toEqual(expected),
    );
    expect(cuts).toBeGreaterThanOrEqual(POINTS);
  });

  it("digest: 3 MiB of u8 input arrives exactly once (SHA-256 on both sides)", async () => {
    const { chunks, all } = randomChunks(3 * 1024 * 1024, 200 * 1024);
    const cuts = await acrossCuts(
      async (client) => {
        const call = client.invoke({ ...demo, method: "digest", methodParameters: record(inputStream.bytes(chunks)) });
        const result = await call.result;
        await call.finished;
        return result.kind === "value" ? fieldsOf(result.value).map((field) => field.value) : [];
      },
      (fields, label) => expect(fields, label).toEqual([String(all.length), sha256(all)]),
    );
    expect(cuts).toBeGreaterThanOrEqual(POINTS);
  });

  it("blobs: binary output items arrive once each, in order, to a slow consumer", async () => {
    const cuts = await acrossCuts(
      async (client) => {
        const call = client.invoke({ ...demo, method: "blobs", methodParameters: record(u32(24), u32(64 * 1024)) });
        const blobs = [];
        // A slow consumer keeps received-but-undelivered items queued, so every cut forces replays.
        for await (const blob of (await firstStream(call)).blobs()) {
          blobs.push(blob);
          await new Promise((resolve) => setTimeout(resolve, 3));
        }
        await call.finished;
        return blobs.map((blob) => blob.bytes[0]);
      },
      (firstBytes, label) => expect(firstBytes, label).toEqual(Array.from({ length: 24 }, (_, i) => i)),
    );
    expect(cuts).toBeGreaterThanOrEqual(POINTS);
  });

  it("split: packed u8 output and string output survive cuts together", async () => {
    const lines = Array.from({ length: 400 }, (_, i) => `line ${i} ${"q".repeat(i % 300)}`);
    const text = new TextEncoder().encode(lines.join("\n"));
    const chunks = Array.from({ length: Math.ceil(text.length / 5000) }, (_, i) => text.subarray(i * 5000, (i + 1) * 5000));
    const cuts = await acrossCuts(
      async (client) => {
        const call = client.invoke({ ...demo, method: "split", methodParameters: record(inputStream.bytes(chunks)) });
        const result = await call.result;
        if (result.kind !== "value") throw new Error("expected a value");
        const [upper, lineStream] = result.streams;
        const slowBytes = async (): Promise<Uint8Array[]> => {
          const out: Uint8Array[] = [];
          for await (const batch of upper!.bytes()) {
            out.push(batch);
            await new Promise((resolve) => setTimeout(resolve, 1));
          }
          return out;
        };
        const [batches, items] = await Promise.all([slowBytes(), collect(lineStream!.values())]);
        await call.finished;
        return { upper: sha256(Buffer.concat(batches)), lines: items.map((item) => item.value) };
      },
      (value, label) => expect(value, label).toEqual({ upper: sha256(Buffer.from(lines.join("\n").toUpperCase())), lines }),
    );
    expect(cuts).toBeGreaterThanOrEqual(POINTS);
  });

  it("groups: nested output streams are re-announced after every cut and deliver each item once", async () => {
    const cuts = await acrossCuts(
      async (client) => {
        const call = client.invoke({ ...demo, method: "groups", methodParameters: record(u32(6), u32(40)) });
        const outer = await firstStream(call);
        const reads: Promise<unknown[]>[] = [];
        const names: unknown[] = [];
        for await (const group of outer.values()) {
          const [name, items] = fieldsOf(group);
          names.push(name?.value);
          reads.push(
            (async () => {
              const out: unknown[] = [];
              for await (const item of call.stream(items!)!.values()) {
                out.push(item.value);
                if (out.length % 8 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
              }
              return out;
            })(),
          );
        }
        const groups = await Promise.all(reads);
        await call.finished;
        return { names, groups };
      },
      (value, label) =>
        expect(value, label).toEqual({
          names: Array.from({ length: 6 }, (_, g) => `group-${g}`),
          groups: Array.from({ length: 6 }, () => Array.from({ length: 40 }, (_, i) => i)),
        }),
    );
    expect(cuts).toBeGreaterThanOrEqual(POINTS);
  });
});

describe("a silently dead path", () => {
  it("is detected by the keepalive and resumed, delivering every item once", async () => {
    // The first connection that reaches 4000 bytes stalls, whichever it is: on a loaded machine the
    // 50 ms keepalive can give up on a slow first connection before it gets there.
    const proxy = await startTcpProxy({
      upstream: server.url,
      plan: () => (proxy.cuts === 0 ? { cutAfter: 4000, cutMode: "stall" } : undefined),
    });
    try {
      const client = createClient({
        url: proxy.url,
        token: TOKEN,
        transport: wsTransport({ keepaliveIntervalMs: 50 }),
        reconnect: { initialDelayMs: 5, maxDelayMs: 40 },
      });
      const call = client.invoke({ ...demo, method: "count", methodParameters: record(u32(300), u32(0)) });
      const items = await collect((await firstStream(call)).values());
      await call.finished;
      expect(items.map((item) => item.value)).toEqual(Array.from({ length: 300 }, (_, i) => i));
      expect(proxy.cuts).toBe(1);
      expect(proxy.connections.length).toBeGreaterThanOrEqual(2);
    } finally {
      await proxy.close();
    }
  });
});
