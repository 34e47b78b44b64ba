/**
 * Regression tests for the conformance audit's findings, one
 * `describe` per finding, each quoting the rule it restores. Same black-box
 * setup as conformance-audit.e2e.test.ts: real WebSockets on loopback, the
 * strict client-side decoder, and every connection's log checked against
 * the general rules.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { SUBPROTOCOL, type InvocationStart, type SchemaValueJson, type ServerMessage } from "@golem-stream/wire";
import { startProbeServer } from "./probe-server.js";
import { v, resumeAttach } from "./helpers.js";
import { AuditClient, rawHttp, upgradeHead, type Closed } from "./support/audit-client.js";
import { checkConnectionLog } from "./support/audit-invariants.js";

type ProbeServer = Awaited<ReturnType<typeof startProbeServer>>;

let server: ProbeServer;
beforeAll(async () => {
  server = await startProbeServer({ sessionRetentionMs: 60_000 });
});
afterAll(async () => {
  await server.dispose();
});

function start(method: string, methodParameters: SchemaValueJson, application: "demo" | "test" = "demo"): InvocationStart {
  return {
    type: "invocationStart",
    attemptId: randomUUID(),
    config: [],
    idempotencyKey: randomUUID(),
    methodParameters,
    selector: {
      agentType: application === "demo" ? "echo" : "probe",
      application,
      constructorParameters: v.record(v.str("audit")),
      environment: "default",
      method,
    },
  };
}

async function finish(client: AuditClient): Promise<{ messages: ServerMessage[]; closed: Closed }> {
  const { messages, closed } = await client.all();
  expect(client.undecodable).toEqual([]);
  expect(checkConnectionLog(messages)).toEqual([]);
  return { messages, closed };
}

function itemsOn(messages: readonly ServerMessage[], channel: number): SchemaValueJson[] {
  return messages.flatMap((m) => (m.type === "outputStreamItem" && m.channel === channel ? [m.value] : []));
}

// ------------------------------------------------------------ finding 1

describe("finding 1 (sections 4.3, 5.3, 6.6): a nested input whose announcing ACK was lost can still be found", () => {
  it("the resumed acceptance resolves the unused nested input's provisional reference; a resent item is re-ACKed; the stream works", async () => {
    const first = await AuditClient.connect(server.url);
    first.send(start("nested", v.record(v.stream(randomUUID())), "test"));
    const accepted = await first.nextOf("invocationAccepted");
    const outer = accepted.mappings[0]!;
    const ref = randomUUID();
    first.send({ type: "inputStreamItem", channel: outer.channel, sequence: 0n, value: v.record(v.str("g"), v.stream(ref)) });
    // The ACK is committed and sent; the client "loses" it with the connection.
    await first.nextOf("inputStreamAck");
    first.terminate();
    await first.closed;

    const second = await AuditClient.connect(server.url);
    second.send(resumeAttach("resume", accepted.sessionToken));
    const reaccepted = await second.nextOf("invocationAccepted");
    const nested = reaccepted.mappings.find((m) => m.provisionalRef === ref);
    expect(nested).toMatchObject({ direction: "input", inputHighWater: { sequence: 0n, terminal: false } });
    // The outer (a parameter the client resolved at the start) carries no reference.
    expect(reaccepted.mappings.find((m) => m.streamToken === outer.streamToken)?.provisionalRef).toBeUndefined();
    // The client resends the item it never saw ACKed: the same cumulative ACK, nothing announced twice.
    second.send({ type: "inputStreamItem", channel: outer.channel, sequence: 0n, value: v.record(v.str("g"), v.stream(ref)) });
    expect(await second.nextOf("inputStreamAck")).toMatchObject({ channel: outer.channel, highestContiguousSequence: 1n, mappings: [] });
    second.send({ type: "inputStreamItem", channel: nested!.channel, sequence: 0n, value: v.str("x") });
    second.send({ type: "inputStreamEnd", channel: nested!.channel, sequence: 1n });
    second.send({ type: "inputStreamEnd", channel: outer.channel, sequence: 1n });
    const { messages } = await finish(second);
    const result = messages.find((m) => m.type === "invocationResult");
    if (result?.type !== "invocationResult") throw new Error("no result");
    expect(itemsOn(messages, result.mappings[0]!.channel)).toEqual([v.str("g:x")]);
    expect(messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
  });

  it("once the client has used the nested input, a later acceptance names it by token only", async () => {
    const first = await AuditClient.connect(server.url);
    first.send(start("nested", v.record(v.stream(randomUUID())), "test"));
    const accepted = await first.nextOf("invocationAccepted");
    const outer = accepted.mappings[0]!.channel;
    first.send({ type: "inputStreamItem", channel: outer, sequence: 0n, value: v.record(v.str("g"), v.stream(randomUUID())) });
    const nested = (await first.nextOf("inputStreamAck")).mappings[0]!;
    first.send({ type: "inputStreamItem", channel: nested.channel, sequence: 0n, value: v.str("x") });
    await first.waitFor((m) => m.type === "inputStreamAck" && m.channel === nested.channel);
    first.terminate();
    await first.closed;

    const second = await AuditClient.connect(server.url);
    second.send(resumeAttach("resume", accepted.sessionToken));
    const reaccepted = await second.nextOf("invocationAccepted");
    const again = reaccepted.mappings.find((m) => m.streamToken === nested.streamToken);
    expect(again).toMatchObject({ direction: "input", inputHighWater: { sequence: 1n, terminal: false } });
    expect(again?.provisionalRef).toBeUndefined();
    second.terminate();
  });
});

// ------------------------------------------------------------ finding 2

describe("finding 2 (section 11; decisions section 5): every handshake failure uses the HTTP error envelope", () => {
  const json = /^application\/json/;

  it("a request that is not a WebSocket opening handshake (POST, another Upgrade, another version) is not-a-websocket, 426", async () => {
    const cases: [Record<string, string | null>, string][] = [
      [{}, "POST"],
      [{ upgrade: "h2c" }, "GET"],
      [{ "sec-websocket-version": "12" }, "GET"],
      [{ "sec-websocket-version": null }, "GET"],
    ];
    for (const [overrides, method] of cases) {
      const answer = await rawHttp(server.httpUrl, upgradeHead(server.httpUrl, overrides, method));
      expect(answer.status).toBe(426);
      expect(answer.headers["content-type"]).toMatch(json);
      expect(answer.headers["upgrade"]).toBe("websocket");
      expect(answer.headers["sec-websocket-version"]).toBe("13");
      expect(JSON.parse(answer.body)).toEqual({ code: "not-a-websocket", error: expect.any(String) });
    }
  });

  it("a WebSocket handshake with a malformed key is invalid-message, 400 {code, errors}", async () => {
    for (const key of [null, "short", "dGhlIHNhbXBsZSBub25jZQ=", "dGhlIHNhbXBsZSBub25jZQ==x"]) {
      const answer = await rawHttp(server.httpUrl, upgradeHead(server.httpUrl, { "sec-websocket-key": key }));
      expect(answer.status).toBe(400);
      expect(answer.headers["content-type"]).toMatch(json);
      expect(JSON.parse(answer.body)).toEqual({ code: "invalid-message", errors: [expect.any(String)] });
    }
  });

  it("a malformed subprotocol list, or ours offered twice, is unsupported-subprotocol, 400", async () => {
    for (const protocol of [
      `${SUBPROTOCOL},,x`,
      `, ${SUBPROTOCOL}`,
      `x y, ${SUBPROTOCOL}`,
      `${SUBPROTOCOL}, ${SUBPROTOCOL}`,
      `${SUBPROTOCOL},`,
      `"${SUBPROTOCOL}"`,
    ]) {
      const answer = await rawHttp(server.httpUrl, upgradeHead(server.httpUrl, { "sec-websocket-protocol": protocol }));
      expect(answer.status).toBe(400);
      expect(answer.headers["content-type"]).toMatch(json);
      expect(JSON.parse(answer.body)).toEqual({ code: "unsupported-subprotocol", errors: [expect.any(String)] });
    }
  });

  it("a well-formed list with optional whitespace still upgrades", async () => {
    const answer = await rawHttp(server.httpUrl, upgradeHead(server.httpUrl, { "sec-websocket-protocol": `x.a ,\t${SUBPROTOCOL}` }));
    expect(answer.status).toBe(101);
    expect(answer.headers["sec-websocket-protocol"]).toBe(SUBPROTOCOL);
  });
});

// ------------------------------------------------------------ finding 3

describe("finding 3 (decisions section 8): a cancel crossing a terminal is accepted once per connection", () => {
  it("after a resume, the replayed terminal can be crossed by one more cancel", async () => {
    const first = await AuditClient.connect(server.url);
    first.send(start("split", v.record(v.stream(randomUUID()))));
    const accepted = await first.nextOf("invocationAccepted");
    const input = accepted.mappings[0]!.channel;
    const upper = (await first.nextOf("invocationResult")).mappings[0]!.channel;
    first.send({ type: "streamCancel", channel: upper, reason: "consumer-drop" });
    await first.waitFor((m) => m.type === "outputStreamEnd" && m.channel === upper);
    first.send({ type: "streamCancel", channel: upper, reason: "consumer-drop" });
    // Messages are handled in order: once this item is ACKed, the crossing cancel was handled (and ignored).
    first.send({ type: "input-u8", channel: input, sequence: 0n, payload: new TextEncoder().encode("ab\n") });
    await first.nextOf("inputStreamAck");
    expect(first.received.filter((m) => m.type === "invocationRejected")).toEqual([]);
    first.terminate();
    await first.closed;

    const second = await AuditClient.connect(server.url);
    second.send(resumeAttach("resume", accepted.sessionToken));
    const reaccepted = await second.nextOf("invocationAccepted");
    const resumedInput = reaccepted.mappings.find((m) => m.direction === "input")!;
    const resumedUpper = (await second.nextOf("invocationResult")).mappings[0]!.channel;
    await second.waitFor((m) => m.type === "outputStreamEnd" && m.channel === resumedUpper);
    second.send({ type: "streamCancel", channel: resumedUpper, reason: "consumer-drop" });
    second.send({ type: "inputStreamEnd", channel: resumedInput.channel, sequence: resumedInput.inputHighWater!.sequence });
    const { messages, closed } = await finish(second);
    expect(messages.some((m) => m.type === "invocationRejected")).toBe(false);
    expect(messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
    expect(closed.code).toBe(1000);
  });
});

// ------------------------------------------------------------ finding 4

describe("finding 4 (sections 1, 8): stream traffic sent before invocationAccepted is invalid-channel", () => {
  it("an item and an end pipelined behind the start are refused with the attempt id, then 1002; nothing is ACKed", async () => {
    const client = await AuditClient.connect(server.url);
    const message = start("reverse", v.record(v.stream(randomUUID())));
    client.send(message);
    client.send({ type: "inputStreamItem", channel: 1, sequence: 0n, value: v.str("early") });
    client.send({ type: "inputStreamEnd", channel: 1, sequence: 1n });
    const { messages, closed } = await finish(client);
    expect(messages[0]?.type).toBe("invocationAccepted");
    expect(messages.some((m) => m.type === "inputStreamAck")).toBe(false);
    expect(messages.at(-1)).toMatchObject({
      type: "invocationRejected",
      attemptId: message.attemptId,
      code: "invalid-channel",
      retryable: true,
    });
    expect(closed.code).toBe(1002);
  });

  it("a cancel pipelined behind a resume is refused the same way", async () => {
    const first = await AuditClient.connect(server.url);
    first.send(start("reverse", v.record(v.stream(randomUUID()))));
    const accepted = await first.nextOf("invocationAccepted");
    first.terminate();
    await first.closed;
    const client = await AuditClient.connect(server.url);
    const resume = resumeAttach("resume", accepted.sessionToken);
    client.send(resume);
    client.send({ type: "streamCancel", channel: 1, reason: "cancelled" });
    const { messages, closed } = await finish(client);
    expect(messages.at(-1)).toMatchObject({ type: "invocationRejected", attemptId: resume.attemptId, code: "invalid-channel" });
    expect(closed.code).toBe(1002);
  });
});

// ------------------------------------------------------------ finding 6

describe("finding 5 (section 11): a first message rejected for nesting too deep still names its attempt", () => {
  it("answers invocationRejected with the attempt id and limit-exceeded, then closes 1009", async () => {
    const client = await AuditClient.connect(server.url);
    const attemptId = randomUUID();
    const deep = "[".repeat(1000) + "]".repeat(1000);
    client.sendRaw(`{"attemptId":"${attemptId}","config":${deep},"type":"invocationStart","version":1}`);
    const { messages, closed } = await finish(client);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ type: "invocationRejected", attemptId, code: "limit-exceeded", retryable: false });
    expect(closed.code).toBe(1009);
  });
});

describe("finding 6: the Bearer scheme is case-insensitive; a count limit closes 1002, not 1009", () => {
  it("accepts the scheme in any case (RFC 9110 section 11.1)", async () => {
    for (const scheme of ["bearer", "BEARER", "bEaReR"]) {
      const answer = await rawHttp(server.httpUrl, upgradeHead(server.httpUrl, { authorization: `${scheme} test-token` }));
      expect(answer.status).toBe(101);
    }
  });

  it("the per-session stream limit is limit-exceeded, then 1002 (1009 is for oversized messages), before and after acceptance", async () => {
    const small = await startProbeServer({ maxStreamsPerSession: 2 });
    try {
      const before = await AuditClient.connect(small.url);
      const tooMany = start("two", v.record(v.stream(randomUUID()), v.stream(randomUUID())), "test");
      const limited = await startProbeServer({ maxStreamsPerSession: 1 });
      try {
        const one = await AuditClient.connect(limited.url);
        one.send(tooMany);
        const { messages, closed } = await finish(one);
        expect(messages).toEqual([
          {
            type: "invocationRejected",
            attemptId: tooMany.attemptId,
            code: "limit-exceeded",
            message: expect.any(String),
            retryable: false,
          },
        ]);
        expect(closed.code).toBe(1002);
      } finally {
        await limited.dispose();
      }
      // nested: the outer input and the result stream fill the limit; a nested input exceeds it.
      const message = start("nested", v.record(v.stream(randomUUID())), "test");
      before.send(message);
      const outer = (await before.nextOf("invocationAccepted")).mappings[0]!.channel;
      before.send({ type: "inputStreamItem", channel: outer, sequence: 0n, value: v.record(v.str("g"), v.stream(randomUUID())) });
      const { messages, closed } = await finish(before);
      expect(messages.at(-1)).toMatchObject({ type: "invocationRejected", attemptId: message.attemptId, code: "limit-exceeded" });
      expect(closed.code).toBe(1002);
    } finally {
      await small.dispose();
    }
  });
});

// ------------------------------------------------------------ finding 7

describe("finding 7 (section 8): data on an input the server cancelled: in flight it is ignored, after an acceptance that reported the terminal it is stale", () => {
  it("items crossing the server's cancel are ignored; on the next connection the same use is invalid-channel", async () => {
    const first = await AuditClient.connect(server.url);
    first.send(start("drop", v.record(v.stream(randomUUID()), v.stream(randomUUID())), "test"));
    const accepted = await first.nextOf("invocationAccepted");
    const [a, b] = accepted.mappings.map((m) => m.channel);
    first.send({ type: "inputStreamItem", channel: a!, sequence: 0n, value: v.str("one") });
    first.send({ type: "inputStreamItem", channel: a!, sequence: 1n, value: v.str("crossing") });
    await first.waitFor((m) => m.type === "inputStreamAck" && m.channel === a && m.terminal);
    expect(first.received.find((m) => m.type === "streamCancel")).toMatchObject({ channel: a, reason: "consumer-drop" });
    // Still on the connection that carried the cancel: ignored (it may have crossed it), not a violation.
    first.send({ type: "inputStreamItem", channel: a!, sequence: 2n, value: v.str("late") });
    first.send({ type: "inputStreamItem", channel: b!, sequence: 0n, value: v.str("b") });
    await first.waitFor((m) => m.type === "inputStreamAck" && m.channel === b);
    expect(first.received.filter((m) => m.type === "invocationRejected")).toEqual([]);
    first.terminate();
    await first.closed;

    const second = await AuditClient.connect(server.url);
    const resume = resumeAttach("resume", accepted.sessionToken);
    second.send(resume);
    const reaccepted = await second.nextOf("invocationAccepted");
    const dropped = reaccepted.mappings.find((m) => m.streamToken === accepted.mappings[0]!.streamToken)!;
    expect(dropped.inputHighWater?.terminal).toBe(true);
    second.send({ type: "inputStreamItem", channel: dropped.channel, sequence: dropped.inputHighWater!.sequence, value: v.str("stale") });
    const { messages, closed } = await finish(second);
    expect(messages.at(-1)).toMatchObject({
      type: "invocationRejected",
      attemptId: resume.attemptId,
      code: "invalid-channel",
      retryable: true,
    });
    expect(closed.code).toBe(1002);
  });
});
