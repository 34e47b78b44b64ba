import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { RawClient, demoStart, outputValues, startTestServer, v, type TestServer } from "./helpers.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.dispose();
});

describe("end to end over a real WebSocket", () => {
  it("count: accepted, result with one output stream, items 0..n-1, ok terminal, finished, close 1000", async () => {
    const client = await RawClient.connect(server.url);
    const start = demoStart("count", v.record(v.u32(3), v.u32(1)));
    client.send(start);
    const { messages, closed } = await client.all();
    expect(closed.code).toBe(1000);
    const types = messages.map((m) => m.type);
    expect(types[0]).toBe("invocationAccepted");
    expect(types.at(-1)).toBe("invocationFinished");
    const accepted = messages[0];
    if (accepted?.type !== "invocationAccepted") throw new Error("unreachable");
    expect(accepted.attemptId).toBe(start.attemptId);
    expect(accepted.mappings).toEqual([]);
    const result = messages.find((m) => m.type === "invocationResult");
    if (result?.type !== "invocationResult") throw new Error("no result");
    expect(result.mappings).toHaveLength(1);
    const channel = result.mappings[0]!.channel;
    expect(outputValues(messages, channel)).toEqual([v.u32(0), v.u32(1), v.u32(2)]);
    const end = messages.find((m) => m.type === "outputStreamEnd");
    expect(end).toMatchObject({ channel, outcome: { kind: "ok" }, sequence: 3n });
    expect(messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
  });

  it("reverse: input items are ACKed cumulatively and reversed on the output", async () => {
    const client = await RawClient.connect(server.url);
    const ref = randomUUID();
    client.send(demoStart("reverse", v.record(v.stream(ref))));
    const accepted = await client.nextOf("invocationAccepted");
    expect(accepted.mappings).toHaveLength(1);
    const input = accepted.mappings[0]!;
    expect(input).toMatchObject({ direction: "input", provisionalRef: ref, inputHighWater: { sequence: 0n, terminal: false } });
    client.send({ type: "inputStreamItem", channel: input.channel, sequence: 0n, value: v.str("abc") });
    expect(await client.nextOf("inputStreamAck")).toMatchObject({ channel: input.channel, highestContiguousSequence: 1n, terminal: false });
    client.send({ type: "inputStreamItem", channel: input.channel, sequence: 1n, value: v.str("h😀i") });
    client.send({ type: "inputStreamEnd", channel: input.channel, sequence: 2n });
    const { messages, closed } = await client.all();
    expect(closed.code).toBe(1000);
    const result = messages.find((m) => m.type === "invocationResult");
    if (result?.type !== "invocationResult") throw new Error("no result");
    const out = result.mappings[0]!.channel;
    expect(outputValues(messages, out)).toEqual([v.str("cba"), v.str("i😀h")]);
    const acks = messages.filter((m) => m.type === "inputStreamAck");
    expect(acks.at(-1)).toMatchObject({ highestContiguousSequence: 2n, terminal: true });
  });

  it("reverse: a burst of items committed together is acknowledged by fewer, cumulative ACKs, in order, the terminal last", async () => {
    const client = await RawClient.connect(server.url);
    client.send(demoStart("reverse", v.record(v.stream(randomUUID()))));
    const channel = (await client.nextOf("invocationAccepted")).mappings[0]!.channel;
    const items = 200;
    // Sent in one turn, so they reach the server in a few socket reads and share commits.
    for (let i = 0; i < items; i++) client.send({ type: "inputStreamItem", channel, sequence: BigInt(i), value: v.str(`item ${i}`) });
    client.send({ type: "inputStreamEnd", channel, sequence: BigInt(items) });
    const { messages } = await client.all();
    const acks = messages.flatMap((m) => (m.type === "inputStreamAck" ? [m] : []));
    expect(acks.length).toBeLessThan(items / 2);
    const highWaters = acks.map((ack) => ack.highestContiguousSequence);
    expect(highWaters).toEqual([...highWaters].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    expect(acks.filter((ack) => ack.terminal)).toEqual([acks.at(-1)]);
    expect(acks.at(-1)).toMatchObject({ highestContiguousSequence: BigInt(items), terminal: true });
    const result = messages.find((m) => m.type === "invocationResult");
    if (result?.type !== "invocationResult") throw new Error("no result");
    expect(outputValues(messages, result.mappings[0]!.channel)).toHaveLength(items);
  });
});
