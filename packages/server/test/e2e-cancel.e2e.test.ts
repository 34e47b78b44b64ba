/** Cancellation in both directions (sections 5.5, 6.7; decisions section 8) and nested input streams. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { RawClient, demoStart, outputValues, v } from "./helpers.js";
import { startProbeServer } from "./probe-server.js";

let server: Awaited<ReturnType<typeof startProbeServer>>;
beforeAll(async () => {
  server = await startProbeServer();
});
afterAll(async () => {
  await server.dispose();
});

function probeStart(method: string, parameters: ReturnType<typeof v.record>) {
  const base = demoStart(method, parameters);
  return { ...base, selector: { ...base.selector, application: "test", agentType: "probe" } };
}

describe("client cancellation", () => {
  it("streamCancel on an output ends it cancelled with the client's reason; the invocation then succeeds", async () => {
    const client = await RawClient.connect(server.url);
    client.send(demoStart("count", v.record(v.u32(100_000), v.u32(1))));
    const result = await client.nextOf("invocationResult");
    const channel = result.mappings[0]!.channel;
    await client.nextOf("outputStreamItem");
    client.send({ type: "streamCancel", channel, reason: "consumer-drop" });
    const end = await client.nextOf("outputStreamEnd");
    expect(end).toMatchObject({ channel, outcome: { kind: "cancelled", reason: "consumer-drop" } });
    expect(end.cursorToken).toMatch(/^gai1_/);
    // A second cancel that crossed the terminal in flight is accepted once and ignored.
    client.send({ type: "streamCancel", channel, reason: "consumer-drop" });
    const { messages, closed } = await client.all();
    expect(messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
    expect(messages.some((m) => m.type === "invocationRejected")).toBe(false);
    expect(closed.code).toBe(1000);
  });

  it("streamCancel on an input makes it terminal (ACK terminal: true); source-unavailable fails the reader", async () => {
    const client = await RawClient.connect(server.url);
    client.send(demoStart("reverse", v.record(v.stream(randomUUID()))));
    const accepted = await client.nextOf("invocationAccepted");
    const channel = accepted.mappings[0]!.channel;
    client.send({ type: "inputStreamItem", channel, sequence: 0n, value: v.str("ab") });
    await client.nextOf("inputStreamAck");
    client.send({ type: "streamCancel", channel, reason: "source-unavailable" });
    expect(await client.nextOf("inputStreamAck")).toMatchObject({ channel, highestContiguousSequence: 1n, terminal: true });
    const { messages } = await client.all();
    const result = messages.find((m) => m.type === "invocationResult");
    if (result?.type !== "invocationResult") throw new Error("no result");
    const out = result.mappings[0]!.channel;
    expect(outputValues(messages, out)).toEqual([v.str("ba")]);
    // The reader saw its source fail: its output stream ends with producer-error.
    expect(messages.find((m) => m.type === "outputStreamEnd")).toMatchObject({
      channel: out,
      outcome: { kind: "error", code: "producer-error" },
    });
  });
});

describe("server cancellation", () => {
  it("an input the agent never read is cancelled with consumer-drop before invocationFinished", async () => {
    const client = await RawClient.connect(server.url);
    client.send(probeStart("ignore", v.record(v.stream(randomUUID()))));
    const { messages, closed } = await client.all();
    const channel = messages[0]?.type === "invocationAccepted" ? messages[0].mappings[0]!.channel : -1;
    expect(messages.map((m) => m.type)).toEqual([
      "invocationAccepted",
      "invocationResult",
      "streamCancel",
      "inputStreamAck",
      "invocationFinished",
    ]);
    expect(messages[1]).toEqual({ type: "invocationResult", mappings: [], result: { kind: "none" } });
    expect(messages[2]).toEqual({ type: "streamCancel", channel, reason: "consumer-drop" });
    expect(messages[3]).toMatchObject({ channel, terminal: true });
    expect(closed.code).toBe(1000);
  });

  it("input sent after the server cancelled it is ignored, not a violation", async () => {
    const client = await RawClient.connect(server.url);
    const start = probeStart("two", v.record(v.stream(randomUUID()), v.stream(randomUUID())));
    client.send(start);
    const accepted = await client.nextOf("invocationAccepted");
    const [a, b] = accepted.mappings;
    client.send({ type: "inputStreamEnd", channel: a!.channel, sequence: 0n });
    client.send({ type: "inputStreamEnd", channel: b!.channel, sequence: 0n });
    const { messages } = await client.all();
    expect(messages.at(-1)?.type).toBe("invocationFinished");
  });
});

describe("nested input streams", () => {
  it("are announced with their provisional reference in the ACK of the item that introduced them", async () => {
    const client = await RawClient.connect(server.url);
    client.send(probeStart("nested", v.record(v.stream(randomUUID()))));
    const accepted = await client.nextOf("invocationAccepted");
    const outer = accepted.mappings[0]!.channel;
    const innerRef = randomUUID();
    client.send({ type: "inputStreamItem", channel: outer, sequence: 0n, value: v.record(v.str("g"), v.stream(innerRef)) });
    const ack = await client.nextOf("inputStreamAck");
    expect(ack.highestContiguousSequence).toBe(1n);
    expect(ack.mappings).toHaveLength(1);
    const inner = ack.mappings[0]!;
    expect(inner).toMatchObject({ direction: "input", provisionalRef: innerRef, inputHighWater: { sequence: 0n, terminal: false } });
    expect(inner.channel).not.toBe(outer);
    client.send({ type: "inputStreamItem", channel: inner.channel, sequence: 0n, value: v.str("x") });
    client.send({ type: "inputStreamEnd", channel: inner.channel, sequence: 1n });
    client.send({ type: "inputStreamEnd", channel: outer, sequence: 1n });
    const { messages } = await client.all();
    const result = messages.find((m) => m.type === "invocationResult");
    if (result?.type !== "invocationResult") throw new Error("no result");
    expect(outputValues(messages, result.mappings[0]!.channel)).toEqual([v.str("g:x")]);
  });

  it("reusing a provisional reference of an earlier item is stream-already-consumed", async () => {
    const client = await RawClient.connect(server.url);
    const start = probeStart("nested", v.record(v.stream(randomUUID())));
    client.send(start);
    const accepted = await client.nextOf("invocationAccepted");
    const outer = accepted.mappings[0]!.channel;
    const innerRef = randomUUID();
    client.send({ type: "inputStreamItem", channel: outer, sequence: 0n, value: v.record(v.str("g"), v.stream(innerRef)) });
    await client.nextOf("inputStreamAck");
    client.send({ type: "inputStreamItem", channel: outer, sequence: 1n, value: v.record(v.str("h"), v.stream(innerRef)) });
    expect(await client.nextOf("invocationRejected")).toMatchObject({ attemptId: start.attemptId, code: "stream-already-consumed" });
  });
});
