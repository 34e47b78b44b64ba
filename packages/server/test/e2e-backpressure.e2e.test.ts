/**
 * Section 12 over a real socket: a slow consumer stops the producer instead
 * of growing a buffer, and a slow agent stops the server reading input.
 * Nothing here measures time: the checks wait for the server's own pause
 * events (`observers`, backpressure reasons) and then compare counts.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { randomUUID } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SqliteSessionStore } from "../src/index.js";
import { type NewStream, type OutputEvent } from "../src/store/index.js";
import { PUMP_BATCH_BYTES } from "../src/attachment/output-pumps.js";
import { Pauses, RawClient, demoServerOn, demoStart, v } from "./helpers.js";
import { resetGate, startProbeServer } from "./probe-server.js";

/** The embedded store, counting the output items the producers handed it and the payload bytes of the largest read. */
class CountingStore extends SqliteSessionStore {
  outputItems = 0;
  largestRead = 0;
  override appendOutput(event: OutputEvent, introduced: readonly NewStream[]): Promise<void> {
    if (event.event === "item") this.outputItems++;
    return super.appendOutput(event, introduced);
  }
  override async readOutput(streamId: string, from: bigint, limit: number, maxBytes?: number): Promise<OutputEvent[]> {
    const events = await super.readOutput(streamId, from, limit, maxBytes);
    const bytes = events.reduce((sum, e) => sum + (e.event === "item" ? e.data.length : 0), 0);
    this.largestRead = Math.max(this.largestRead, bytes);
    return events;
  }
}

describe("output backpressure", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-backpressure-"));
  const store = new CountingStore({ dataDir, synchronous: "normal" });
  const pauses = new Pauses();
  const server = demoServerOn(store, dataDir, undefined, [pauses.observer]);

  it("a client that stops reading stops the producer well before the end; reading again delivers everything", async () => {
    const total = 3000;
    pauses.reset();
    const client = await RawClient.connect(server.url());
    client.send(demoStart("blobs", v.record(v.u32(total), v.u32(8192))));
    await client.nextOf("invocationResult");
    client.socket.pause();

    // The socket stopped taking more, then the producer stopped a window ahead of what was sent:
    // every item it made is in the store's count by now.
    await pauses.reachedAfter("socket-buffer", "output-window");
    const produced = store.outputItems;
    // Bounded by the 256-entry window plus what the socket buffers took.
    expect(produced).toBeGreaterThan(256);
    expect(produced).toBeLessThan(total / 2);
    client.socket.resume();
    const { messages } = await client.all();
    expect(messages.filter((m) => m.type === "output-binary")).toHaveLength(total);
    expect(messages.at(-1)?.type).toBe("invocationFinished");
  });

  it("the server reads a paused client's backlog from the store by bytes, not 64 large items at a time", async () => {
    // 100 items of 256 KiB: far more than the socket holds while paused, all
    // in the store before reading resumes. Without a byte bound a pump read
    // took every committed event up to 64 (16 MiB here, 1 GiB with 16 MiB
    // items), outside the session's byte permits.
    const total = 100;
    const size = 256 * 1024;
    store.largestRead = 0;
    const before = store.outputItems;
    const client = await RawClient.connect(server.url());
    client.send(demoStart("blobs", v.record(v.u32(total), v.u32(size))));
    await client.nextOf("invocationResult");
    client.socket.pause();
    // Every item reaches the store while the client reads nothing (a count to reach, not a plateau to time).
    await vi.waitFor(() => expect(store.outputItems - before).toBe(total), { timeout: 60_000, interval: 10 });
    client.socket.resume();
    const { messages } = await client.all();
    const blobs = messages.filter((m) => m.type === "output-binary");
    expect(blobs).toHaveLength(total);
    expect(blobs.every((m) => m.type === "output-binary" && m.payload.length === size)).toBe(true);
    expect(store.largestRead).toBeGreaterThanOrEqual(size);
    expect(store.largestRead).toBeLessThan(PUMP_BATCH_BYTES + size);
  });
});

describe("input backpressure", () => {
  let probe: Awaited<ReturnType<typeof startProbeServer>>;
  const pauses = new Pauses();
  beforeAll(async () => {
    probe = await startProbeServer({}, undefined, undefined, [pauses.observer]);
  });
  afterAll(async () => {
    await probe.dispose();
  });

  it("an agent that does not read holds at most 256 accepted items; the rest waits in the socket", async () => {
    const open = resetGate();
    const client = await RawClient.connect(probe.url);
    const base = demoStart("gate", v.record(v.stream(randomUUID())));
    client.send({ ...base, selector: { ...base.selector, application: "test", agentType: "probe" } });
    const accepted = await client.nextOf("invocationAccepted");
    const channel = accepted.mappings[0]!.channel;
    const items = 300;
    for (let i = 0; i < items; i++) client.send({ type: "inputStreamItem", channel, sequence: BigInt(i), value: v.str(`item ${i}`) });
    client.send({ type: "inputStreamEnd", channel, sequence: BigInt(items) });

    // ACKs are cumulative and grouped per commit: the high-water counts the accepted items.
    const acceptedItems = () => {
      const last = client.received.filter((m) => m.type === "inputStreamAck").at(-1);
      return last?.type === "inputStreamAck" ? Number(last.highestContiguousSequence) : 0;
    };
    // The 257th item waits for room the agent never makes: the 256 before it are accepted and acknowledged.
    await pauses.reached("input-queue");
    await client.waitFor((m) => m.type === "inputStreamAck" && m.highestContiguousSequence === 256n);
    expect(acceptedItems()).toBe(256);
    open();
    const { messages } = await client.all();
    const last = messages.filter((m) => m.type === "inputStreamAck").at(-1);
    expect(last).toMatchObject({ highestContiguousSequence: BigInt(items), terminal: true });
    expect(messages.at(-1)?.type).toBe("invocationFinished");
  });
});
