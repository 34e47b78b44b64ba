/**
 * Section 12 over a real socket: a slow consumer stops the producer instead
 * of growing a buffer, and a slow agent stops the server reading input.
 * Nothing here measures time; the checks wait until activity stops and then
 * compare counts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import Database from "better-sqlite3";
import { RawClient, demoStart, settle, startTestServer, v, type TestServer } from "./helpers.js";
import { resetGate, startProbeServer } from "./probe-server.js";


describe("output backpressure", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server.dispose();
  });

  it("a client that stops reading stops the producer well before the end; reading again delivers everything", async () => {
    const total = 3000;
    const client = await RawClient.connect(server.url);
    client.send(demoStart("blobs", v.record(v.u32(total), v.u32(8192))));
    await client.nextOf("invocationResult");
    client.socket.pause();

    const db = new Database(join(server.dataDir, "sessions.db"), { readonly: true });
    try {
      const count = db.prepare("SELECT COUNT(*) AS n FROM output_events WHERE event = 'item'");
      const produced = await settle(() => Number((count.get() as { n: number }).n));
      // Bounded by the 256-entry window plus what the socket buffers took.
      expect(produced).toBeGreaterThan(256);
      expect(produced).toBeLessThan(total / 2);
    } finally {
      db.close();
    }
    client.socket.resume();
    const { messages } = await client.all();
    expect(messages.filter((m) => m.type === "output-binary")).toHaveLength(total);
    expect(messages.at(-1)?.type).toBe("invocationFinished");
  });
});

describe("input backpressure", () => {
  let probe: Awaited<ReturnType<typeof startProbeServer>>;
  beforeAll(async () => {
    probe = await startProbeServer();
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
    expect(await settle(acceptedItems)).toBe(256);
    open();
    const { messages } = await client.all();
    const last = messages.filter((m) => m.type === "inputStreamAck").at(-1);
    expect(last).toMatchObject({ highestContiguousSequence: BigInt(items), terminal: true });
    expect(messages.at(-1)?.type).toBe("invocationFinished");
  });
});
