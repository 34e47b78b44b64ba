/** Section 9 and decisions section 8: exact replay, resume, takeover, superseded, restart. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHash, randomUUID } from "node:crypto";
import type { ServerMessage } from "@golem-stream/wire";
import { RawClient, demoStart, outputValues, startTestServer, v, type TestServer, resumeAttach } from "./helpers.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.dispose();
});

/** Waits until `client` has received `count` items on the result's first stream; returns that stream's channel. */
async function readItems(client: RawClient, count: number): Promise<{ channel: number; cursor: string }> {
  const result = await client.nextOf("invocationResult");
  const channel = result.mappings[0]!.channel;
  let cursor = "";
  for (let seen = 0; seen < count;) {
    const message = await client.next();
    if (message.type === "outputStreamItem" && message.channel === channel) {
      seen++;
      cursor = message.cursorToken;
    }
  }
  return { channel, cursor };
}

function counts(messages: readonly ServerMessage[]): number[] {
  const result = messages.find((m) => m.type === "invocationResult");
  if (result?.type !== "invocationResult") return [];
  return outputValues(messages, result.mappings[0]!.channel).map((item) => item.value as number);
}

describe("resume", () => {
  it("after transport loss, resume from an item cursor replays exactly the rest and the terminal", async () => {
    const first = await RawClient.connect(server.url);
    first.send(demoStart("count", v.record(v.u32(30), v.u32(2))));
    const accepted = await first.nextOf("invocationAccepted");
    const { cursor } = await readItems(first, 5);
    first.socket.terminate();

    const second = await RawClient.connect(server.url);
    second.send(resumeAttach("resume", accepted.sessionToken, [cursor]));
    const reaccepted = await second.nextOf("invocationAccepted");
    expect(reaccepted.sessionToken).not.toBe(accepted.sessionToken);
    expect(reaccepted.idempotencyKey).toBe(accepted.idempotencyKey);
    const { messages, closed } = await second.all();
    expect(closed.code).toBe(1000);
    expect(counts(messages)).toEqual(Array.from({ length: 25 }, (_, i) => i + 5));
    expect(messages.filter((m) => m.type === "outputStreamEnd")).toHaveLength(1);
    expect(messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
  });

  it("resume from a terminal cursor replays no event of that stream; without cursors everything replays", async () => {
    const client = await RawClient.connect(server.url);
    client.send(demoStart("count", v.record(v.u32(3), v.u32(0))));
    const accepted = await client.nextOf("invocationAccepted");
    const { messages: firstRun } = await client.all();
    const end = firstRun.find((m) => m.type === "outputStreamEnd");
    if (end?.type !== "outputStreamEnd" || end.cursorToken === undefined) throw new Error("no terminal cursor");

    const fromTerminal = await RawClient.connect(server.url);
    fromTerminal.send(resumeAttach("resume", accepted.sessionToken, [end.cursorToken]));
    const { messages: replay } = await fromTerminal.all();
    const types = replay.map((m) => m.type);
    expect(types).toEqual(["invocationAccepted", "invocationResult", "invocationFinished"]);

    const reaccepted = replay[0];
    if (reaccepted?.type !== "invocationAccepted") throw new Error("unreachable");
    const fromStart = await RawClient.connect(server.url);
    fromStart.send(resumeAttach("resume", reaccepted.sessionToken));
    const { messages: full } = await fromStart.all();
    expect(counts(full)).toEqual([0, 1, 2]);
    expect(full.at(-1)?.type).toBe("invocationFinished");
  });

  it("input high-water survives a reconnect; the client resends only the suffix; duplicates are re-ACKed", async () => {
    const first = await RawClient.connect(server.url);
    first.send(demoStart("reverse", v.record(v.stream(randomUUID()))));
    const accepted = await first.nextOf("invocationAccepted");
    const channel = accepted.mappings[0]!.channel;
    first.send({ type: "inputStreamItem", channel, sequence: 0n, value: v.str("one") });
    first.send({ type: "inputStreamItem", channel, sequence: 1n, value: v.str("two") });
    // One ACK may cover both items (ACKs are cumulative and grouped per commit).
    while ((await first.nextOf("inputStreamAck")).highestContiguousSequence < 2n);
    first.socket.terminate();

    const second = await RawClient.connect(server.url);
    second.send(resumeAttach("resume", accepted.sessionToken));
    const reaccepted = await second.nextOf("invocationAccepted");
    const input = reaccepted.mappings.find((m) => m.direction === "input")!;
    expect(input.inputHighWater).toEqual({ sequence: 2n, terminal: false });
    expect(input.provisionalRef).toBeUndefined();
    expect(input.streamToken).toBe(accepted.mappings[0]!.streamToken);
    // An identical duplicate is idempotent and re-ACKed with the same cumulative count.
    second.send({ type: "inputStreamItem", channel: input.channel, sequence: 1n, value: v.str("two") });
    expect(await second.nextOf("inputStreamAck")).toMatchObject({ highestContiguousSequence: 2n, terminal: false });
    second.send({ type: "inputStreamItem", channel: input.channel, sequence: 2n, value: v.str("three") });
    second.send({ type: "inputStreamEnd", channel: input.channel, sequence: 3n });
    const { messages } = await second.all();
    const result = messages.find((m) => m.type === "invocationResult");
    if (result?.type !== "invocationResult") throw new Error("no result");
    expect(outputValues(messages, result.mappings[0]!.channel)).toEqual([v.str("eno"), v.str("owt"), v.str("eerht")]);
  });
});

describe("packed u8 resends", () => {
  it("a resend with other batch boundaries matches on the overlap and its suffix is accepted", async () => {
    const client = await RawClient.connect(server.url);
    client.send(demoStart("digest", v.record(v.stream(randomUUID()))));
    const channel = (await client.nextOf("invocationAccepted")).mappings[0]!.channel;
    const text = new TextEncoder().encode("hello world");
    client.send({ type: "input-u8", channel, sequence: 0n, payload: text.subarray(0, 5) });
    expect(await client.nextOf("inputStreamAck")).toMatchObject({ highestContiguousSequence: 5n });
    client.send({ type: "input-u8", channel, sequence: 3n, payload: text.subarray(3, 8) });
    expect(await client.nextOf("inputStreamAck")).toMatchObject({ highestContiguousSequence: 8n });
    client.send({ type: "input-u8", channel, sequence: 0n, payload: text.subarray(0, 2) });
    expect(await client.nextOf("inputStreamAck")).toMatchObject({ highestContiguousSequence: 8n });
    client.send({ type: "input-u8", channel, sequence: 8n, payload: text.subarray(8) });
    client.send({ type: "inputStreamEnd", channel, sequence: 11n });
    const { messages } = await client.all();
    const result = messages.find((m) => m.type === "invocationResult");
    const body = JSON.stringify(result?.type === "invocationResult" ? result.result : null);
    expect(body).toContain('"value":"11"');
    expect(body).toContain(createHash("sha256").update("hello world").digest("hex"));
  });

  it("a resend whose overlap differs is input-conflict", async () => {
    const client = await RawClient.connect(server.url);
    const start = demoStart("digest", v.record(v.stream(randomUUID())));
    client.send(start);
    const channel = (await client.nextOf("invocationAccepted")).mappings[0]!.channel;
    client.send({ type: "input-u8", channel, sequence: 0n, payload: new Uint8Array([1, 2, 3]) });
    await client.nextOf("inputStreamAck");
    client.send({ type: "input-u8", channel, sequence: 2n, payload: new Uint8Array([9, 4]) });
    expect(await client.nextOf("invocationRejected")).toMatchObject({
      attemptId: start.attemptId,
      code: "input-conflict",
      retryable: true,
    });
  });
});

describe("takeover and replacement", () => {
  it("takeover with two live transports: the old one gets attachmentRevoked, the new one the rest", async () => {
    const a = await RawClient.connect(server.url);
    a.send(demoStart("count", v.record(v.u32(20), v.u32(3))));
    const accepted = await a.nextOf("invocationAccepted");
    await readItems(a, 2);

    const b = await RawClient.connect(server.url);
    b.send(resumeAttach("takeover", accepted.sessionToken));
    const { messages: aMessages, closed: aClosed } = await a.all();
    expect(aMessages.at(-1)).toEqual({ type: "attachmentRevoked", reason: "replaced" });
    expect(aClosed.code).toBe(1000);
    const { messages: bMessages, closed: bClosed } = await b.all();
    expect(bClosed.code).toBe(1000);
    expect(counts(bMessages)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(bMessages.at(-1)?.type).toBe("invocationFinished");
  });

  it("resume with a superseded generation is rejected with superseded; takeover with it works", async () => {
    const a = await RawClient.connect(server.url);
    a.send(demoStart("count", v.record(v.u32(3), v.u32(0))));
    const accepted = await a.nextOf("invocationAccepted");
    await a.all();
    const b = await RawClient.connect(server.url);
    b.send(resumeAttach("resume", accepted.sessionToken));
    await b.all();

    const stale = await RawClient.connect(server.url);
    const attempt = resumeAttach("resume", accepted.sessionToken);
    stale.send(attempt);
    const { messages, closed } = await stale.all();
    expect(messages).toEqual([
      { type: "invocationRejected", attemptId: attempt.attemptId, code: "superseded", message: expect.any(String), retryable: false },
    ]);
    expect(closed.code).toBe(1002);

    const taker = await RawClient.connect(server.url);
    taker.send(resumeAttach("takeover", accepted.sessionToken));
    const taken = await taker.all();
    expect(taken.messages.at(-1)?.type).toBe("invocationFinished");
  });

  it("an exact start replay takes the session over; a changed descriptor is attempt-conflict", async () => {
    const start = demoStart("count", v.record(v.u32(15), v.u32(3)));
    const a = await RawClient.connect(server.url);
    a.send(start);
    const accepted = await a.nextOf("invocationAccepted");

    const b = await RawClient.connect(server.url);
    b.send(start);
    const replayed = await b.nextOf("invocationAccepted");
    expect(replayed.sessionToken).toBe(accepted.sessionToken);
    expect((await a.all()).messages.at(-1)).toEqual({ type: "attachmentRevoked", reason: "replaced" });
    const { messages } = await b.all();
    expect(counts(messages)).toEqual(Array.from({ length: 15 }, (_, i) => i));

    const c = await RawClient.connect(server.url);
    c.send({ ...start, methodParameters: v.record(v.u32(16), v.u32(3)) });
    const conflict = await c.next();
    expect(conflict).toMatchObject({ type: "invocationRejected", attemptId: start.attemptId, code: "attempt-conflict", retryable: false });
    expect((await c.closed).code).toBe(1002);
  });

  it("an exact start replay is recognised by its values, not their spelling: equal SchemaValues written differently are the same attempt (section 9)", async () => {
    const start = demoStart("count", v.record(v.u32(2), v.u32(0)));
    // The same start, its delay written -0: the same u32 as 0, another JSON text.
    const spelled = JSON.stringify({ ...start, version: 1 }).replace('{"kind":"u32","value":0}', '{"kind":"u32","value":-0}');
    expect(spelled).toContain("-0");
    const a = await RawClient.connect(server.url);
    a.sendRaw(spelled);
    const accepted = await a.nextOf("invocationAccepted");
    const b = await RawClient.connect(server.url);
    b.send(start);
    const replayed = await b.nextOf("invocationAccepted");
    expect(replayed).toMatchObject({ attemptId: start.attemptId, sessionToken: accepted.sessionToken });
    expect((await b.all()).messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
    a.terminate();
  });

  it("a replay of a superseded start attempt reports the current token and mappings, then revokes", async () => {
    const start = demoStart("count", v.record(v.u32(2), v.u32(0)));
    const a = await RawClient.connect(server.url);
    a.send(start);
    const accepted = await a.nextOf("invocationAccepted");
    const result = await a.nextOf("invocationResult");
    await a.all();
    const b = await RawClient.connect(server.url);
    b.send(resumeAttach("resume", accepted.sessionToken));
    const resumed = await b.nextOf("invocationAccepted");
    await b.all();

    const c = await RawClient.connect(server.url);
    c.send(start);
    const { messages } = await c.all();
    expect(messages.map((m) => m.type)).toEqual(["invocationAccepted", "attachmentRevoked"]);
    expect(messages[0]).toMatchObject({ attemptId: start.attemptId, sessionToken: resumed.sessionToken });
    // Every current mapping, the result's output stream included: no replayed result follows on this connection.
    const outputs = (m: (typeof messages)[number]) =>
      (m.type === "invocationAccepted" ? m.mappings : []).filter((x) => x.direction === "output");
    expect(outputs(messages[0]!)).toHaveLength(1);
    expect(outputs(messages[0]!)[0]?.streamToken).toBe(result.mappings[0]?.streamToken);
  });

  it("a refused start is refused for good: the same attempt gets the same answer, another descriptor under its id attempt-conflict (sections 5.1, 6.2)", async () => {
    const refused = demoStart("nope", v.record());
    const a = await RawClient.connect(server.url);
    a.send(refused);
    expect(await a.next()).toMatchObject({ type: "invocationRejected", attemptId: refused.attemptId, code: "not-found" });
    // The same attempt again (its answer lost): the same refusal, though nothing was stored for it.
    const b = await RawClient.connect(server.url);
    b.send(refused);
    expect(await b.next()).toMatchObject({ type: "invocationRejected", attemptId: refused.attemptId, code: "not-found" });
    // Its id reused for a start that would be accepted: attempt-conflict, and nothing runs.
    const reused = { ...demoStart("count", v.record(v.u32(1), v.u32(0))), attemptId: refused.attemptId };
    const c = await RawClient.connect(server.url);
    c.send(reused);
    expect(await c.next()).toMatchObject({ type: "invocationRejected", attemptId: refused.attemptId, code: "attempt-conflict" });
    expect((await c.all()).closed.code).toBe(1002);
  });

  it("a second start with the same idempotency key for the same agent is idempotency-conflict", async () => {
    const first = demoStart("count", v.record(v.u32(1), v.u32(0)));
    const a = await RawClient.connect(server.url);
    a.send(first);
    await a.all();
    const b = await RawClient.connect(server.url);
    const second = demoStart("count", v.record(v.u32(1), v.u32(0)), { idempotencyKey: first.idempotencyKey });
    b.send(second);
    expect(await b.next()).toMatchObject({ type: "invocationRejected", attemptId: second.attemptId, code: "idempotency-conflict" });
  });
});

describe("nested output streams on resume", () => {
  it("each stream is announced once: in the acceptance if no replayed message exposes it, else in that message", async () => {
    const client = await RawClient.connect(server.url);
    client.send(demoStart("groups", v.record(v.u32(3), v.u32(2))));
    const accepted = await client.nextOf("invocationAccepted");
    const { messages: first } = await client.all();
    const result = first.find((m) => m.type === "invocationResult");
    if (result?.type !== "invocationResult") throw new Error("no result");
    const outer = result.mappings[0]!;
    const outerItems = first.flatMap((m) => (m.type === "outputStreamItem" && m.channel === outer.channel ? [m] : []));
    expect(outerItems).toHaveLength(3);
    const inner = outerItems.map((item) => item.mappings[0]!);
    const innerEnd = first.find((m) => m.type === "outputStreamEnd" && m.channel === inner[1]!.channel);
    if (innerEnd?.type !== "outputStreamEnd" || innerEnd.cursorToken === undefined) throw new Error("no inner terminal");

    // Outer delivered up to its item 0; inner stream 1 completely delivered.
    const resumed = await RawClient.connect(server.url);
    resumed.send(resumeAttach("resume", accepted.sessionToken, [outerItems[0]!.cursorToken, innerEnd.cursorToken]));
    const { messages } = await resumed.all();
    const reaccepted = messages[0];
    if (reaccepted?.type !== "invocationAccepted") throw new Error("not accepted");
    // Inner 0 is exposed by outer item 0, which is not replayed: the acceptance announces it.
    expect(reaccepted.mappings.map((m) => m.streamToken)).toEqual([inner[0]!.streamToken]);
    const replayResult = messages.find((m) => m.type === "invocationResult");
    if (replayResult?.type !== "invocationResult") throw new Error("no replayed result");
    expect(replayResult.mappings.map((m) => m.streamToken)).toEqual([outer.streamToken]);
    const replayedOuter = messages.flatMap((m) =>
      m.type === "outputStreamItem" && m.channel === replayResult.mappings[0]!.channel ? [m] : [],
    );
    expect(replayedOuter.map((m) => m.sequence)).toEqual([1n, 2n]);
    expect(replayedOuter.map((m) => m.mappings[0]!.streamToken)).toEqual([inner[1]!.streamToken, inner[2]!.streamToken]);

    const channelOf = new Map<string, number>();
    for (const m of messages) if ("mappings" in m) for (const mapping of m.mappings) channelOf.set(mapping.streamToken, mapping.channel);
    expect(channelOf.size).toBe(4);
    expect(new Set(channelOf.values()).size).toBe(4);
    const itemsOn = (token: string) => outputValues(messages, channelOf.get(token)!).map((x) => x.value);
    expect(itemsOn(inner[0]!.streamToken)).toEqual([0, 1]);
    expect(itemsOn(inner[1]!.streamToken)).toEqual([]);
    expect(itemsOn(inner[2]!.streamToken)).toEqual([0, 1]);
    const ends = messages.filter((m) => m.type === "outputStreamEnd").map((m) => ("channel" in m ? m.channel : 0));
    expect(ends.sort()).toEqual(
      [channelOf.get(outer.streamToken)!, channelOf.get(inner[0]!.streamToken)!, channelOf.get(inner[2]!.streamToken)!].sort(),
    );
    expect(messages.at(-1)?.type).toBe("invocationFinished");
  });
});
