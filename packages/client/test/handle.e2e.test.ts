/**
 * The invocation handle against the real server on loopback: its events,
 * the caller's AbortSignal, the Web ReadableStream view of many MiB of
 * `stream<u8>`, and the cursor rule for packed bytes when the process dies
 * while the consumer holds a batch.
 */
import { getEventListeners } from "node:events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, inputStream, type AcceptedEvent, type Client, type OutputStream, type ResumeState } from "../src/index.js";
import { collect, demo, fieldsOf, firstStream, record, sha256, u32 } from "./support/demo.js";
import { startDemoAndProbe, type DemoAndProbe } from "./support/demo-and-probe.js";
import { TOKEN } from "./support/embedded.js";
import { PROBE, patternBytes } from "./support/probe-server.js";

let servers: DemoAndProbe;
let server: DemoAndProbe["server"];
let probe: DemoAndProbe["probe"];
let client: Client;
let probeClient: Client;

beforeAll(async () => {
  servers = await startDemoAndProbe();
  ({ server, probe, client, probeClient } = servers);
});
afterAll(async () => servers.dispose());

describe("events", () => {
  it("accepted fires once; every stream, nested ones included, is announced before the item that exposes it is handed out", async () => {
    const call = client.invoke({ ...demo, method: "groups", methodParameters: record(u32(5), u32(20)) });
    const accepted: AcceptedEvent[] = [];
    const announced: string[] = [];
    call.on("accepted", (event) => accepted.push(event));
    call.on("stream", (stream) => announced.push(stream.streamToken));
    const outer = await firstStream(call);
    expect(announced).toEqual([outer.streamToken]);
    const reads: Promise<unknown[]>[] = [];
    for await (const group of outer.values()) {
      const [, items] = fieldsOf(group);
      const token = (items!.value as { streamToken: string }).streamToken;
      // Announced already, and the same object the handle finds for the item's stream node.
      expect(announced).toContain(token);
      expect(call.stream(items!)).toBe(call.streams.find((stream) => stream.streamToken === token));
      reads.push(collect(call.stream(token)!.values()).then((values) => values.map((value) => value.value)));
    }
    for (const values of await Promise.all(reads)) expect(values).toEqual(Array.from({ length: 20 }, (_, i) => i));
    await call.finished;
    expect(announced).toHaveLength(6);
    expect(new Set(announced).size).toBe(6);
    expect(accepted).toEqual([
      {
        operation: "start",
        attemptId: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
        replayed: false,
      },
    ]);
    expect(await call.accepted).toEqual(accepted[0]);
    expect(call.signal.aborted).toBe(false);
  });
});

describe("the caller's AbortSignal", () => {
  it("aborting cancels every open stream on the server, rejects the handle with aborted and aborts call.signal", async () => {
    const controller = new AbortController();
    const call = client.invoke({ ...demo, method: "count", methodParameters: record(u32(100_000), u32(1)), signal: controller.signal });
    const stream = await firstStream(call);
    const iterator = stream.values()[Symbol.asyncIterator]();
    const seen: unknown[] = [];
    for (let i = 0; i < 5; i++) seen.push(((await iterator.next()).value as { value: unknown }).value);
    const reason = new Error("the user pressed stop");
    controller.abort(reason);
    // The signal's reason is the error's cause, as for client.agent's signal.
    await expect(call.finished).rejects.toMatchObject({ kind: "aborted", cause: reason });
    await expect(call.result).resolves.toMatchObject({ kind: "value" });
    expect(call.signal.aborted).toBe(true);
    expect(await stream.ended).toMatchObject({ kind: "detached", error: { kind: "aborted" } });
    await expect(iterator.next()).rejects.toMatchObject({ kind: "aborted" });

    // The server recorded the cancellation: a takeover of the saved state replays what was not
    // delivered and then the stream's terminal, `cancelled` with the client's reason.
    const state = call.state!;
    const second = createClient({ url: server.url, token: TOKEN }).takeover(state);
    const replayed: unknown[] = [];
    const error = await (async () => {
      try {
        for await (const item of (await firstStream(second)).values()) replayed.push(item.value);
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toMatchObject({ kind: "stream-cancelled", reason: "cancelled" });
    expect([...seen, ...replayed].slice(0, 5)).toEqual([0, 1, 2, 3, 4]);
    expect(await second.finished).toEqual({ kind: "success" });
  });

  it("an already aborted signal cancels before anything is delivered", async () => {
    const call = client.invoke({ ...demo, method: "count", methodParameters: record(u32(10), u32(0)), signal: AbortSignal.abort() });
    await expect(call.finished).rejects.toMatchObject({ kind: "aborted", cause: expect.objectContaining({ name: "AbortError" }) });
    expect(call.signal.aborted).toBe(true);
  });

  it("is let go once the invocation is over: no listener stays on a long-lived signal", async () => {
    const controller = new AbortController();
    for (let i = 0; i < 3; i++) {
      const call = client.invoke({ ...demo, method: "count", methodParameters: record(u32(3), u32(0)), signal: controller.signal });
      await collect(await firstStream(call));
      await call.finished;
    }
    const failing = client.invoke({ ...demo, method: "nope", methodParameters: record(), signal: controller.signal });
    await failing.finished.catch(() => undefined);
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });
});

describe("many MiB of stream<u8> output", () => {
  it("split: 16 MiB read through the Web ReadableStream view, SHA-256 equal to the server's transformation", async () => {
    const size = 16 * 1024 * 1024;
    // Few newlines (one per 100 000 bytes), so the time goes into the bytes, not into line items.
    const data = patternBytes(0, size).map((byte, i) => (i % 100_000 === 99_999 ? 0x0a : byte === 0x0a ? 0x0b : byte));
    const chunks: Uint8Array[] = [];
    for (let at = 0; at < size; at += 700_000) chunks.push(data.subarray(at, at + 700_000));
    const call = client.invoke({ ...demo, method: "split", methodParameters: record(inputStream.bytes(chunks)) });
    const result = await call.result;
    if (result.kind !== "value") throw new Error("expected a value");
    const [upper, lines] = result.streams as [OutputStream, OutputStream];
    const readAll = async (): Promise<Buffer> => {
      const reader = upper.readable().getReader();
      const parts: Uint8Array[] = [];
      for (let r = await reader.read(); !r.done; r = await reader.read()) parts.push(r.value as Uint8Array);
      return Buffer.concat(parts);
    };
    const [bytes, lineItems] = await Promise.all([readAll(), collect(lines.values())]);
    const expected = data.map((byte) => (byte >= 0x61 && byte <= 0x7a ? byte - 0x20 : byte));
    expect(bytes.length).toBe(size);
    expect(sha256(bytes)).toBe(sha256(expected));
    expect(lineItems.length).toBe(data.filter((byte) => byte === 0x0a).length + 1);
    await call.finished;
    // 16 MiB through a durable server, transformed and hashed in JavaScript: about 6 s alone, and
    // past 30 s when the whole suite shares two cores with other work.
  }, 120_000);
});

describe("packed u8 cursor when the process dies while the consumer holds a batch", () => {
  it("the takeover restarts at the first byte of the held batch: the batch is replayed whole, nothing after it is skipped", async () => {
    const chunks = 48;
    const size = 100 * 1024;
    const all = patternBytes(0, chunks * size);
    let saved: ResumeState | undefined;
    const first = probeClient.invoke({
      ...PROBE,
      method: "pattern",
      methodParameters: record(u32(chunks), u32(size)),
      onCheckpoint: (state) => void (saved = state),
    });
    const iterator = (await firstStream(first)).bytes()[Symbol.asyncIterator]();
    const delivered: Uint8Array[] = [];
    for (let i = 0; i < 3; i++) delivered.push((await iterator.next()).value as Uint8Array);
    // Handed out, not yet delivered: the consumer is still writing it out when the process dies.
    const held = (await iterator.next()).value as Uint8Array;
    const deliveredBytes = Buffer.concat(delivered);
    expect(Buffer.concat([deliveredBytes, held])).toEqual(Buffer.from(all.subarray(0, deliveredBytes.length + held.length)));
    first.detach(); // the process is gone; only its last checkpoint survives

    const second = createClient({ url: probe.url, token: TOKEN }).takeover(saved!);
    const rest = Buffer.concat(await collect((await firstStream(second)).bytes()));
    await second.finished;
    expect(rest.subarray(0, held.length)).toEqual(Buffer.from(held));
    expect(rest.length).toBe(all.length - deliveredBytes.length);
    expect(sha256(Buffer.concat([deliveredBytes, rest]))).toBe(sha256(all));
  });
});
