/**
 * Black-box conformance audit of the server, rule by rule, as a
 * hostile or careless client would behave: real WebSockets on loopback,
 * the strict wire codecs on the client side, and no knowledge of the
 * server's internals. Every connection's complete log is also checked
 * against the rules that hold for every session (support/audit-invariants):
 * announcement before use, total order and one terminal per stream,
 * invocationResult at most once, invocationFinished last, no internals in
 * public text. Each test quotes the rule it audits.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHash, randomUUID } from "node:crypto";
import { Keyring } from "@golem-stream/tokens";
import { SUBPROTOCOL, type ClientMessage, type InvocationStart, type SchemaValueJson, type ServerMessage } from "@golem-stream/wire";
import { createSessionServer, MemorySessionStore, type AuthorizationRequest } from "../src/index.js";
import { createDemoHost } from "../src/demo/index.js";
import { resetGate, startProbeServer } from "./probe-server.js";
import { Pauses, v, resumeAttach } from "./helpers.js";
import { AuditClient, rawHttp, upgradeHead, type Closed } from "./support/audit-client.js";
import { checkConnectionLog, type LogExpectations } from "./support/audit-invariants.js";

type ProbeServer = Awaited<ReturnType<typeof startProbeServer>>;

let server: ProbeServer;
beforeAll(async () => {
  server = await startProbeServer({ sessionRetentionMs: 60_000 });
});
afterAll(async () => {
  await server.dispose();
});

// ------------------------------------------------------------ vocabulary

function start(method: string, methodParameters: SchemaValueJson, application = "demo"): InvocationStart {
  return {
    type: "invocationStart",
    attemptId: randomUUID(),
    config: [],
    idempotencyKey: randomUUID(),
    methodParameters,
    selector: {
      agentType: application === "demo" ? "echo" : "probe",
      application: application === "demo" ? "demo" : "test",
      constructorParameters: v.record(v.str("audit")),
      environment: "default",
      method,
    },
  };
}

const probe = (method: string, parameters: SchemaValueJson): InvocationStart => start(method, parameters, "test");

const connect = (): Promise<AuditClient> => AuditClient.connect(server.url);

/** Waits for the end of a connection and checks its log against every general rule. */
async function finish(client: AuditClient, expectations: LogExpectations = {}): Promise<{ messages: ServerMessage[]; closed: Closed }> {
  const { messages, closed } = await client.all();
  expect(client.undecodable).toEqual([]);
  expect(checkConnectionLog(messages, expectations)).toEqual([]);
  return { messages, closed };
}

/** The first message alone on a fresh connection: what came back and how it closed. */
async function firstMessageAlone(send: (client: AuditClient) => void) {
  const client = await connect();
  send(client);
  return finish(client);
}

/** A violation after acceptance: the accepted attempt's id, the code, retryable, then close 1002 (section 6.2). */
async function expectViolation(client: AuditClient, attemptId: string, codes: readonly string[], retryable = true): Promise<void> {
  const { messages, closed } = await finish(client);
  const last = messages.at(-1);
  if (last?.type !== "invocationRejected") throw new Error(`expected invocationRejected last, got ${last?.type}`);
  expect(codes).toContain(last.code);
  expect(last.attemptId).toBe(attemptId);
  expect(last.retryable).toBe(retryable);
  expect(closed.code).toBe(1002);
}

function channelOf(messages: readonly ServerMessage[], direction: "input" | "output", index = 0): number {
  const mappings = messages.flatMap((m) => ("mappings" in m ? m.mappings : [])).filter((m) => m.direction === direction);
  const mapping = mappings[index];
  if (mapping === undefined) throw new Error(`no ${direction} mapping #${index}`);
  return mapping.channel;
}

function itemsOn(messages: readonly ServerMessage[], channel: number): SchemaValueJson[] {
  return messages.flatMap((m) => (m.type === "outputStreamItem" && m.channel === channel ? [m.value] : []));
}

/** Raw binary envelope (section 7), so limits can be exceeded on purpose. */
function envelope(metadata: Record<string, unknown>, payload: Uint8Array): Uint8Array {
  const meta = new TextEncoder().encode(JSON.stringify(metadata));
  const out = new Uint8Array(4 + meta.length + payload.length);
  new DataView(out.buffer).setUint32(0, meta.length);
  out.set(meta, 4);
  out.set(payload, 4 + meta.length);
  return out;
}

/** A `reverse` session accepted on a fresh connection: input channel 1st mapping. */
async function acceptedReverse() {
  const client = await connect();
  const message = start("reverse", v.record(v.stream(randomUUID())));
  client.send(message);
  const accepted = await client.nextOf("invocationAccepted");
  const input = accepted.mappings.find((m) => m.direction === "input");
  if (input === undefined) throw new Error("no input mapping");
  return { client, message, accepted, input: input.channel };
}

// ------------------------------------------------------------ 0. the audit's own checker

describe("the audit's log checker rejects what it must (so a clean log means something)", () => {
  const accepted: ServerMessage = {
    type: "invocationAccepted",
    attemptId: randomUUID(),
    idempotencyKey: "k",
    mappings: [],
    sessionToken: "t",
  };
  const result = (channel: number): ServerMessage => ({
    type: "invocationResult",
    mappings: [{ channel, direction: "output", streamToken: `s${channel}` }],
    result: { kind: "none" },
  });
  const item = (channel: number, sequence: bigint): ServerMessage => ({
    type: "outputStreamItem",
    channel,
    cursorToken: `c${channel}.${sequence}`,
    mappings: [],
    sequence,
    value: v.u32(1),
  });
  const end = (channel: number, sequence: bigint): ServerMessage => ({
    type: "outputStreamEnd",
    channel,
    cursorToken: `e${channel}`,
    outcome: { kind: "ok" },
    sequence,
  });
  const finished: ServerMessage = { type: "invocationFinished", outcome: { kind: "success" } };
  const broken: [string, ServerMessage[]][] = [
    ["use before announcement", [accepted, item(1, 0n), result(1), end(1, 1n), finished]],
    ["a sequence gap", [accepted, result(1), item(1, 0n), item(1, 2n), end(1, 3n), finished]],
    ["an item after the terminal", [accepted, result(1), end(1, 0n), item(1, 0n), finished]],
    ["finish before a terminal", [accepted, result(1), item(1, 0n), finished]],
    ["success without a result", [accepted, finished]],
    ["a message after the finish", [accepted, result(1), end(1, 0n), finished, end(1, 0n)]],
    ["a channel mapped twice", [accepted, result(1), result(1)]],
    [
      "internals in public text",
      [
        {
          type: "invocationRejected",
          attemptId: randomUUID(),
          code: "internal-error",
          message: "TypeError at run (/srv/a.ts:1:2)",
          retryable: true,
        },
      ],
    ],
  ];
  it.each(broken)("%s", (_, log) => {
    expect(checkConnectionLog(log)).not.toEqual([]);
  });
  it("and accepts a conforming log", () => {
    expect(checkConnectionLog([accepted, result(1), item(1, 0n), end(1, 1n), finished])).toEqual([]);
  });
});

// ------------------------------------------------------------ 1. handshake

describe("handshake (section 1; decisions section 5): failures use the HTTP error envelope and never upgrade", () => {
  it("unsupported-subprotocol is 400 {code, errors:[message]} for a missing, foreign or future subprotocol", async () => {
    for (const protocol of [null, "other.v1", "golem.agent-invocation.v2"]) {
      const answer = await rawHttp(server.httpUrl, upgradeHead(server.httpUrl, { "sec-websocket-protocol": protocol }));
      expect(answer.status).toBe(400);
      expect(answer.headers["content-type"]).toMatch(/^application\/json/);
      expect(JSON.parse(answer.body)).toEqual({ code: "unsupported-subprotocol", errors: [expect.any(String)] });
    }
  });

  it("unauthenticated is 401 {code, error} for a missing, non-Bearer, empty or unknown credential", async () => {
    for (const authorization of [null, "Basic dGVzdDp0ZXN0", "Bearer ", "Bearer nope", `bearer-ish test-token`]) {
      const answer = await rawHttp(server.httpUrl, upgradeHead(server.httpUrl, { authorization }));
      expect(answer.status).toBe(401);
      expect(JSON.parse(answer.body)).toEqual({ code: "unauthenticated", error: expect.any(String) });
    }
  });

  it("not-a-websocket is 426 for a plain GET of the session endpoint", async () => {
    const answer = await rawHttp(
      server.httpUrl,
      upgradeHead(server.httpUrl, { connection: null, upgrade: null, "sec-websocket-key": null }),
    );
    expect(answer.status).toBe(426);
    expect(JSON.parse(answer.body)).toEqual({ code: "not-a-websocket", error: expect.any(String) });
  });

  it("a valid upgrade selects exactly golem.agent-invocation.v1 and never per-message compression", async () => {
    const answer = await rawHttp(
      server.httpUrl,
      upgradeHead(server.httpUrl, {
        "sec-websocket-protocol": `x.first, ${SUBPROTOCOL}, x.last`,
        "sec-websocket-extensions": "permessage-deflate; client_max_window_bits",
      }),
    );
    expect(answer.status).toBe(101);
    expect(answer.headers["sec-websocket-protocol"]).toBe(SUBPROTOCOL);
    expect(answer.headers["sec-websocket-extensions"]).toBeUndefined();
  });
});

// ------------------------------------------------------------ 2. first message

describe("first message (sections 1, 6.2, 11): a text invocationStart or resumeAttach, else 1002", () => {
  it("a binary first message closes 1002 with no diagnostic (no attempt id can be recovered)", async () => {
    const { messages, closed } = await firstMessageAlone((c) =>
      c.send({ type: "input-u8", channel: 1, sequence: 0n, payload: new Uint8Array([1]) }),
    );
    expect(messages).toEqual([]);
    expect(closed.code).toBe(1002);
  });

  it("stream traffic before invocationAccepted (item, end, cancel) closes 1002 with no diagnostic", async () => {
    const early = [
      { type: "inputStreamItem", channel: 1, sequence: 0n, value: v.str("x") },
      { type: "inputStreamEnd", channel: 1, sequence: 0n },
      { type: "streamCancel", channel: 1, reason: "cancelled" },
    ] as const;
    for (const message of early) {
      const { messages, closed } = await firstMessageAlone((c) => c.send(message));
      expect(messages).toEqual([]);
      expect(closed.code).toBe(1002);
    }
  });

  it("text that is not a decodable object closes 1002 directly: bad JSON, an array, invalid UTF-8, no attempt id", async () => {
    const bad: (string | Uint8Array)[] = [
      "{not json",
      "[]",
      '"invocationStart"',
      '{"type":"invocationStart","version":1}',
      '{"type":"invocationStart","version":1,"attemptId":"CA7E5A82-2064-4C18-8359-806145C1562F"}',
    ];
    for (const data of bad) {
      const { messages, closed } = await firstMessageAlone((c) => c.sendRaw(data, false));
      expect(messages).toEqual([]);
      expect(closed.code).toBe(1002);
    }
    const invalidUtf8 = new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]);
    const { messages, closed } = await firstMessageAlone((c) => c.sendRaw(invalidUtf8, false));
    expect(messages).toEqual([]);
    expect(closed.code).toBe(1002);
  });

  it("a start that fails strict decoding but names its UUIDv4 attempt is rejected invalid-message with that id, not retryable, then 1002", async () => {
    const good = start("count", v.record(v.u32(1), v.u32(0)));
    const json = (message: Record<string, unknown>) => JSON.stringify({ version: 1, ...message });
    const variants = [
      json({ ...good, version: 2 }),
      json({ ...good, extra: true }),
      json({ ...good, selector: { ...good.selector, phantomId: null } }),
      json({ ...good, idempotencyKey: "" }),
      json({ ...good, config: undefined }),
      json({ ...good, type: "invocationStart", methodParameters: { kind: "u32", value: 1, extra: 2 } }),
    ];
    for (const data of variants) {
      const { messages, closed } = await firstMessageAlone((c) => c.sendRaw(data, false));
      expect(messages).toEqual([
        { type: "invocationRejected", attemptId: good.attemptId, code: "invalid-message", message: expect.any(String), retryable: false },
      ]);
      expect(closed.code).toBe(1002);
    }
  });

  it("a resumeAttach with a duplicated cursor is invalid-message (section 5.2: MUST NOT contain duplicates)", async () => {
    const done = await connect();
    done.send(start("count", v.record(v.u32(1), v.u32(0))));
    const accepted = await done.nextOf("invocationAccepted");
    const { messages: first } = await finish(done);
    const item = first.find((m) => m.type === "outputStreamItem");
    if (item?.type !== "outputStreamItem") throw new Error("no item");
    const attempt = resumeAttach("resume", accepted.sessionToken);
    // Our own encoder refuses to write this, so it goes out raw.
    const raw = JSON.stringify({ ...attempt, version: 1, outputCursors: [item.cursorToken, item.cursorToken] });
    const { messages, closed } = await firstMessageAlone((c) => c.sendRaw(raw, false));
    expect(messages).toEqual([
      { type: "invocationRejected", attemptId: attempt.attemptId, code: "invalid-message", message: expect.any(String), retryable: false },
    ]);
    expect(closed.code).toBe(1002);
  });

  it("a resume whose session token is a stream token, empty or over 8192 bytes is refused with its attempt id", async () => {
    const { client, accepted } = await acceptedReverse();
    client.terminate();
    const streamToken = accepted.mappings[0]!.streamToken;
    for (const token of [streamToken, "gai1_", "gai1_" + "A".repeat(8200)]) {
      const attempt = resumeAttach("takeover", token);
      const { messages } = await firstMessageAlone((c) => c.sendRaw(JSON.stringify({ ...attempt, version: 1 }), false));
      expect(messages).toEqual([expect.objectContaining({ type: "invocationRejected", attemptId: attempt.attemptId })]);
      expect(["invalid-token", "invalid-message", "limit-exceeded"]).toContain((messages[0] as { code: string }).code);
    }
  });

  it("a start's stream leaf must be a provisional reference (section 3.2): a stream token, or both forms, is validation-error", async () => {
    const { client, accepted } = await acceptedReverse();
    client.terminate();
    const streamToken = accepted.mappings[0]!.streamToken;
    const leaves = [{ streamToken }, { provisionalRef: randomUUID(), streamToken }];
    for (const leaf of leaves) {
      const message = start("reverse", {
        kind: "record",
        value: { fields: [{ kind: "stream", value: leaf }] },
      } as unknown as SchemaValueJson);
      const c = await connect();
      c.send(message);
      const { messages, closed } = await c.all();
      expect(messages).toEqual([
        expect.objectContaining({ type: "invocationRejected", attemptId: message.attemptId, code: "validation-error" }),
      ]);
      expect(closed.code).toBe(1002);
    }
  });
});

// ------------------------------------------------------------ 3. channels

describe("channels (section 8): unknown, stale, duplicate, wrong-direction or premature use is invalid-channel", () => {
  it("an unknown channel, for every client stream message kind", async () => {
    const uses = [
      (c: number) => ({ type: "inputStreamItem" as const, channel: c, sequence: 0n, value: v.str("x") }),
      (c: number) => ({ type: "inputStreamEnd" as const, channel: c, sequence: 0n }),
      (c: number) => ({ type: "streamCancel" as const, channel: c, reason: "cancelled" as const }),
      (c: number) => ({ type: "input-u8" as const, channel: c, sequence: 0n, payload: new Uint8Array([7]) }),
    ];
    for (const use of uses) {
      const { client, message } = await acceptedReverse();
      client.send(use(4_000_000_000));
      await expectViolation(client, message.attemptId, ["invalid-channel"]);
    }
  });

  it("the wrong direction: input traffic on an output channel", async () => {
    const uses = [
      (c: number) => ({ type: "inputStreamItem" as const, channel: c, sequence: 0n, value: v.str("x") }),
      (c: number) => ({ type: "inputStreamEnd" as const, channel: c, sequence: 0n }),
      (c: number) => ({ type: "input-u8" as const, channel: c, sequence: 0n, payload: new Uint8Array([7]) }),
    ];
    for (const use of uses) {
      const { client, message } = await acceptedReverse();
      const result = await client.nextOf("invocationResult");
      client.send(use(result.mappings[0]!.channel));
      await expectViolation(client, message.attemptId, ["invalid-channel"]);
    }
  });

  it("after the terminal: a second inputStreamEnd, and an item after the end", async () => {
    for (const late of ["end", "item"] as const) {
      const client = await connect();
      const message = probe("two", v.record(v.stream(randomUUID()), v.stream(randomUUID())));
      client.send(message);
      const channel = (await client.nextOf("invocationAccepted")).mappings[0]!.channel;
      client.send({ type: "inputStreamEnd", channel, sequence: 0n });
      expect(await client.nextOf("inputStreamAck")).toMatchObject({ channel, terminal: true });
      client.send(
        late === "end"
          ? { type: "inputStreamEnd", channel, sequence: 0n }
          : { type: "inputStreamItem", channel, sequence: 0n, value: v.str("late") },
      );
      await expectViolation(client, message.attemptId, ["invalid-channel"]);
    }
  });

  it("stale after reconnect: a channel of the old connection now names another stream (of the other direction)", async () => {
    // nested: outer input, result output, and a nested input announced in the ACK.
    const first = await connect();
    first.send(probe("nested", v.record(v.stream(randomUUID()))));
    const accepted = await first.nextOf("invocationAccepted");
    const outer = accepted.mappings[0]!.channel;
    first.send({ type: "inputStreamItem", channel: outer, sequence: 0n, value: v.record(v.str("g"), v.stream(randomUUID())) });
    const ack = await first.nextOf("inputStreamAck");
    const oldNested = ack.mappings[0]!;
    first.terminate();
    await first.closed;

    const second = await connect();
    const resume = resumeAttach("resume", accepted.sessionToken);
    second.send(resume);
    const reaccepted = await second.nextOf("invocationAccepted");
    const result = await second.nextOf("invocationResult");
    const now = [...reaccepted.mappings, ...result.mappings].find((m) => m.channel === oldNested.channel);
    // The old number is either unknown now or names a different stream.
    expect(now?.streamToken).not.toBe(oldNested.streamToken);
    if (now?.direction === "input") throw new Error("audit setup: the old channel still names an input; pick another case");
    second.send({ type: "inputStreamItem", channel: oldNested.channel, sequence: 0n, value: v.str("stale") });
    await expectViolation(second, resume.attemptId, ["invalid-channel"]);
  });

  it("premature use: a nested input's channel used before the ACK that announces it", async () => {
    const client = await connect();
    const message = probe("nested", v.record(v.stream(randomUUID())));
    client.send(message);
    const accepted = await client.nextOf("invocationAccepted");
    const result = await client.nextOf("invocationResult");
    const outer = accepted.mappings[0]!.channel;
    // Channels so far: outer input and the result's output. The nested input will get the next one.
    const guessed = Math.max(outer, result.mappings[0]!.channel) + 1;
    client.send({ type: "inputStreamItem", channel: outer, sequence: 0n, value: v.record(v.str("g"), v.stream(randomUUID())) });
    client.send({ type: "inputStreamItem", channel: guessed, sequence: 0n, value: v.str("too early") });
    await expectViolation(client, message.attemptId, ["invalid-channel"]);
  });

  it("channel zero is never valid", async () => {
    const { client, message } = await acceptedReverse();
    client.sendRaw(JSON.stringify({ channel: 0, reason: "cancelled", type: "streamCancel", version: 1 }), false);
    const { messages, closed } = await finish(client);
    const last = messages.at(-1);
    expect(last).toMatchObject({ type: "invocationRejected", attemptId: message.attemptId });
    expect(["invalid-message", "invalid-channel"]).toContain((last as { code: string }).code);
    expect(closed.code).toBe(1002);
  });

  it("a violation on a resumed connection names the resume attempt, not the start", async () => {
    const { client, accepted } = await acceptedReverse();
    client.terminate();
    await client.closed;
    const again = await connect();
    const resume = resumeAttach("resume", accepted.sessionToken);
    again.send(resume);
    await again.nextOf("invocationAccepted");
    again.send({ type: "inputStreamEnd", channel: 999, sequence: 0n });
    await expectViolation(again, resume.attemptId, ["invalid-channel"]);
  });
});

// ------------------------------------------------------------ 4. input sequencing

describe("input (sections 5.3, 5.4, 6.6, 9): cumulative ACKs, gaps, conflicts, identical duplicates", () => {
  it("a first item at sequence 1 is input-gap; an end claiming more items is input-gap, fewer input-conflict", async () => {
    const gap = await acceptedReverse();
    gap.client.send({ type: "inputStreamItem", channel: gap.input, sequence: 1n, value: v.str("x") });
    await expectViolation(gap.client, gap.message.attemptId, ["input-gap"]);

    const endAbove = await acceptedReverse();
    endAbove.client.send({ type: "inputStreamEnd", channel: endAbove.input, sequence: 1n });
    await expectViolation(endAbove.client, endAbove.message.attemptId, ["input-gap"]);

    const endBelow = await acceptedReverse();
    endBelow.client.send({ type: "inputStreamItem", channel: endBelow.input, sequence: 0n, value: v.str("a") });
    endBelow.client.send({ type: "inputStreamItem", channel: endBelow.input, sequence: 1n, value: v.str("b") });
    endBelow.client.send({ type: "inputStreamEnd", channel: endBelow.input, sequence: 1n });
    await expectViolation(endBelow.client, endBelow.message.attemptId, ["input-conflict"]);
  });

  it("an identical duplicate is re-ACKed with the same count, even written with other member order and whitespace", async () => {
    const { client, input } = await acceptedReverse();
    const acks = () => client.received.flatMap((m) => (m.type === "inputStreamAck" ? [m] : []));
    client.send({ type: "inputStreamItem", channel: input, sequence: 0n, value: v.str("abc") });
    client.send({ type: "inputStreamItem", channel: input, sequence: 1n, value: v.str("de") });
    await client.waitFor((m) => m.type === "inputStreamAck" && m.highestContiguousSequence === 2n);
    const before = acks().length;
    // The same item 0, semantically equal (section 9: member order and whitespace do not matter).
    client.sendRaw(
      `{ "version":1, "value":{"value":"abc","kind":"string"}, "type":"inputStreamItem", "sequence":"0", "channel":${input} }`,
      false,
    );
    await client.waitFor(() => acks().length > before);
    expect(acks()[before]).toMatchObject({ channel: input, highestContiguousSequence: 2n, terminal: false, mappings: [] });
    client.send({ type: "inputStreamEnd", channel: input, sequence: 2n });
    const { messages, closed } = await finish(client);
    expect(acks().at(-1)).toMatchObject({ highestContiguousSequence: 2n, terminal: true });
    expect(itemsOn(messages, channelOf(messages, "output"))).toEqual([v.str("cba"), v.str("ed")]);
    expect(messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
    expect(closed.code).toBe(1000);
  });

  it("a conflicting resend is input-conflict even when it arrives before the first one's ACK", async () => {
    const { client, input, message } = await acceptedReverse();
    client.send({ type: "inputStreamItem", channel: input, sequence: 0n, value: v.str("first") });
    client.send({ type: "inputStreamItem", channel: input, sequence: 0n, value: v.str("second") });
    await expectViolation(client, message.attemptId, ["input-conflict"]);
  });

  it("packed u8: a batch beyond the high-water is input-gap; the ACK counts bytes", async () => {
    const client = await connect();
    const message = start("digest", v.record(v.stream(randomUUID())));
    client.send(message);
    const channel = (await client.nextOf("invocationAccepted")).mappings[0]!.channel;
    client.send({ type: "input-u8", channel, sequence: 0n, payload: new Uint8Array([1, 2, 3]) });
    expect(await client.nextOf("inputStreamAck")).toMatchObject({ channel, highestContiguousSequence: 3n, terminal: false });
    client.send({ type: "input-u8", channel, sequence: 4n, payload: new Uint8Array([5]) });
    await expectViolation(client, message.attemptId, ["input-gap"]);
  });
});

describe("nested input streams (sections 5.3, 6.6): announced, with their provisional reference, by the ACK covering their item", () => {
  it("three items sent back to back each introduce a stream; every one is announced once and carries its own data", async () => {
    const client = await connect();
    client.send(probe("nested", v.record(v.stream(randomUUID()))));
    const outer = (await client.nextOf("invocationAccepted")).mappings[0]!.channel;
    const refs = [randomUUID(), randomUUID(), randomUUID()];
    refs.forEach((ref, i) =>
      client.send({ type: "inputStreamItem", channel: outer, sequence: BigInt(i), value: v.record(v.str(`g${i}`), v.stream(ref)) }),
    );
    await client.waitFor((m) => m.type === "inputStreamAck" && m.highestContiguousSequence === 3n);
    const announced = client.received.flatMap((m) => (m.type === "inputStreamAck" ? m.mappings : []));
    expect(announced.map((m) => m.provisionalRef).sort()).toEqual([...refs].sort());
    for (const [i, ref] of refs.entries()) {
      const mapping = announced.find((m) => m.provisionalRef === ref)!;
      expect(mapping).toMatchObject({ direction: "input", inputHighWater: { sequence: 0n, terminal: false } });
      client.send({ type: "inputStreamItem", channel: mapping.channel, sequence: 0n, value: v.str(`x${i}`) });
      client.send({ type: "inputStreamEnd", channel: mapping.channel, sequence: 1n });
    }
    client.send({ type: "inputStreamEnd", channel: outer, sequence: 3n });
    const { messages } = await finish(client);
    expect(itemsOn(messages, channelOf(messages, "output"))).toEqual([v.str("g0:x0"), v.str("g1:x1"), v.str("g2:x2")]);
  });
});

// ------------------------------------------------------------ 5. cancellation crossing terminals

describe("streamCancel crossing a terminal (decisions section 8): accepted once and ignored", () => {
  it("output: a cancel sent after the stream's terminal was already on the wire", async () => {
    const client = await connect();
    client.send(probe("nested", v.record(v.stream(randomUUID()))));
    const accepted = await client.nextOf("invocationAccepted");
    const outer = accepted.mappings[0]!.channel;
    const result = await client.nextOf("invocationResult");
    const out = result.mappings[0]!.channel;
    client.send({ type: "inputStreamItem", channel: outer, sequence: 0n, value: v.record(v.str("g"), v.stream(randomUUID())) });
    const nested = (await client.nextOf("inputStreamAck")).mappings[0]!.channel;
    client.send({ type: "inputStreamEnd", channel: nested, sequence: 0n });
    // The output cannot end before the outer input ends: cancel it, then cancel again (crossing).
    client.send({ type: "streamCancel", channel: out, reason: "consumer-drop" });
    const end = await client.nextOf("outputStreamEnd");
    expect(end).toMatchObject({ channel: out, outcome: { kind: "cancelled", reason: "consumer-drop" } });
    client.send({ type: "streamCancel", channel: out, reason: "consumer-drop" });
    client.send({ type: "inputStreamEnd", channel: outer, sequence: 1n });
    const { messages, closed } = await finish(client);
    expect(messages.some((m) => m.type === "invocationRejected")).toBe(false);
    expect(messages.at(-1)?.type).toBe("invocationFinished");
    expect(closed.code).toBe(1000);
  });
});

describe("stream-local cancellation (section 8): terminates only that stream", () => {
  it("dropping one output of split leaves the other running to its natural end and the invocation succeeds", async () => {
    const client = await connect();
    client.send(start("split", v.record(v.stream(randomUUID()))));
    const input = (await client.nextOf("invocationAccepted")).mappings[0]!.channel;
    const result = await client.nextOf("invocationResult");
    const [upper, lines] = result.mappings.map((m) => m.channel);
    client.send({ type: "streamCancel", channel: upper!, reason: "consumer-drop" });
    expect(await client.nextOf("outputStreamEnd")).toMatchObject({
      channel: upper,
      outcome: { kind: "cancelled", reason: "consumer-drop" },
    });
    const text = new TextEncoder().encode("line\n".repeat(600));
    client.send({ type: "input-u8", channel: input, sequence: 0n, payload: text });
    client.send({ type: "inputStreamEnd", channel: input, sequence: BigInt(text.length) });
    const { messages, closed } = await finish(client);
    expect(itemsOn(messages, lines!)).toHaveLength(600);
    expect(messages.filter((m) => m.type === "outputStreamEnd" && m.channel === lines)).toEqual([
      expect.objectContaining({ outcome: { kind: "ok" }, sequence: 600n }),
    ]);
    expect(messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
    expect(closed.code).toBe(1000);
  });
});

// ------------------------------------------------------------ 6. replay, resume, takeover

describe("attempts (sections 6.1, 9; decisions section 8): exact replay, resume, takeover, superseded", () => {
  it("exact start replay while the first transport is live: same acceptance, the replacement owns the session, the old one is revoked", async () => {
    const message = start("count", v.record(v.u32(12), v.u32(4)));
    const a = await connect();
    a.send(message);
    const accepted = await a.nextOf("invocationAccepted");
    await a.nextOf("outputStreamItem");

    const b = await connect();
    b.send(message);
    const { messages: aLog, closed: aClosed } = await finish(a);
    expect(aLog.at(-1)).toEqual({ type: "attachmentRevoked", reason: "replaced" });
    expect(aClosed.code).toBe(1000);
    const { messages: bLog, closed: bClosed } = await finish(b);
    expect(bLog[0]).toEqual({ ...accepted });
    expect(itemsOn(bLog, channelOf(bLog, "output")).map((x) => x.value)).toEqual(Array.from({ length: 12 }, (_, i) => i));
    expect(bLog.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
    expect(bClosed.code).toBe(1000);
  });

  it("a semantically equal start (other member order, whitespace, equivalent escapes) is the same attempt, not attempt-conflict", async () => {
    const message = start("count", v.record(v.u32(2), v.u32(0)));
    const a = await connect();
    a.send(message);
    const accepted = await a.nextOf("invocationAccepted");
    await finish(a);
    const reordered = `{ "version" : 1 , "type":"invocationStart", "selector":{"method":"count","environment":"default","constructorParameters":{"value":{"fields":[{"value":"\\u0061udit","kind":"string"}]},"kind":"record"},"application":"demo","agentType":"echo"}, "methodParameters":{"value":{"fields":[{"value":2,"kind":"u32"},{"value":0,"kind":"u32"}]},"kind":"record"}, "idempotencyKey":"${message.idempotencyKey}", "config":[], "attemptId":"${message.attemptId}" }`;
    const b = await connect();
    b.sendRaw(reordered, false);
    const { messages } = await finish(b);
    expect(messages[0]).toMatchObject({ type: "invocationAccepted", attemptId: message.attemptId, sessionToken: accepted.sessionToken });
  });

  it("the same attempt id with a changed descriptor is attempt-conflict, for a start and for a resume", async () => {
    const message = start("count", v.record(v.u32(2), v.u32(0)));
    const a = await connect();
    a.send(message);
    const accepted = await a.nextOf("invocationAccepted");
    const { messages: log } = await finish(a);
    const changedStart = { ...message, idempotencyKey: randomUUID() };
    expect((await firstMessageAlone((c) => c.send(changedStart))).messages).toEqual([
      { type: "invocationRejected", attemptId: message.attemptId, code: "attempt-conflict", message: expect.any(String), retryable: false },
    ]);

    const cursors = log.flatMap((m) => (m.type === "outputStreamItem" ? [m.cursorToken] : []));
    const resume = resumeAttach("takeover", accepted.sessionToken, [cursors[0]!]);
    await finish(
      await (async () => {
        const c = await connect();
        c.send(resume);
        return c;
      })(),
    );
    const changedResume = { ...resume, outputCursors: [cursors[1]!] };
    expect((await firstMessageAlone((c) => c.send(changedResume))).messages).toEqual([
      { type: "invocationRejected", attemptId: resume.attemptId, code: "attempt-conflict", message: expect.any(String), retryable: false },
    ]);
    // Reusing a start's attempt id for a resume is a changed descriptor too.
    const crossKind = { ...resumeAttach("resume", accepted.sessionToken), attemptId: message.attemptId };
    expect((await firstMessageAlone((c) => c.send(crossKind))).messages[0]).toMatchObject({
      code: "attempt-conflict",
      attemptId: message.attemptId,
    });
  });

  it("resume while the previous transport is still live (half-open): the old one gets attachmentRevoked", async () => {
    const a = await connect();
    a.send(start("count", v.record(v.u32(10), v.u32(5))));
    const accepted = await a.nextOf("invocationAccepted");
    await a.nextOf("outputStreamItem");
    const b = await connect();
    b.send(resumeAttach("resume", accepted.sessionToken));
    const { messages: aLog } = await finish(a);
    expect(aLog.at(-1)).toEqual({ type: "attachmentRevoked", reason: "replaced" });
    const { messages: bLog, closed } = await finish(b);
    const reaccepted = bLog[0];
    if (reaccepted?.type !== "invocationAccepted") throw new Error("not accepted");
    expect(reaccepted.sessionToken).not.toBe(accepted.sessionToken);
    expect(itemsOn(bLog, channelOf(bLog, "output")).map((x) => x.value)).toEqual(Array.from({ length: 10 }, (_, i) => i));
    expect(closed.code).toBe(1000);
  });

  it("resume needs the current generation (superseded otherwise); takeover accepts any generation; both refresh the token", async () => {
    const a = await connect();
    a.send(start("count", v.record(v.u32(1), v.u32(0))));
    const gen1 = (await a.nextOf("invocationAccepted")).sessionToken;
    await finish(a);
    const b = await connect();
    b.send(resumeAttach("takeover", gen1));
    const gen2 = (await b.nextOf("invocationAccepted")).sessionToken;
    await finish(b);

    const stale = resumeAttach("resume", gen1);
    expect((await firstMessageAlone((c) => c.send(stale))).messages).toEqual([
      { type: "invocationRejected", attemptId: stale.attemptId, code: "superseded", message: expect.any(String), retryable: false },
    ]);
    const c = await connect();
    c.send(resumeAttach("resume", gen2));
    const gen3 = (await c.nextOf("invocationAccepted")).sessionToken;
    await finish(c);
    expect(new Set([gen1, gen2, gen3]).size).toBe(3);
    const d = await connect();
    d.send(resumeAttach("takeover", gen1));
    expect((await finish(d)).messages.at(-1)?.type).toBe("invocationFinished");
  });

  it("an exact replay of a superseded resume attempt returns the current token and mappings, then attachmentRevoked", async () => {
    const a = await connect();
    a.send(start("count", v.record(v.u32(2), v.u32(0))));
    const accepted = await a.nextOf("invocationAccepted");
    await finish(a);
    const resume = resumeAttach("resume", accepted.sessionToken);
    const b = await connect();
    b.send(resume);
    const resumed = await b.nextOf("invocationAccepted");
    await finish(b);
    // The resume's own generation is still current: its replay returns the same acceptance.
    const c = await connect();
    c.send(resume);
    const replayed = await finish(c);
    expect(replayed.messages[0]).toMatchObject({
      type: "invocationAccepted",
      attemptId: resume.attemptId,
      sessionToken: resumed.sessionToken,
    });
    // A takeover moves the generation on; now the replay is told the current token and revoked.
    const d = await connect();
    d.send(resumeAttach("takeover", resumed.sessionToken));
    const current = await d.nextOf("invocationAccepted");
    await finish(d);
    const e = await connect();
    e.send(resume);
    const { messages, closed } = await finish(e);
    expect(messages.map((m) => m.type)).toEqual(["invocationAccepted", "attachmentRevoked"]);
    expect(messages[0]).toMatchObject({ attemptId: resume.attemptId, sessionToken: current.sessionToken });
    // The current mappings: the result's stream too, as no replayed result follows on a revoked transport.
    expect(messages[0]?.type === "invocationAccepted" ? messages[0].mappings.map((m) => m.direction) : []).toEqual(["output"]);
    expect(closed.code).toBe(1000);
  });

  it("resume and takeover by another principal are invalid-token; replaying another principal's attempt is refused", async () => {
    const message = start("count", v.record(v.u32(1), v.u32(0)));
    const a = await connect();
    a.send(message);
    const accepted = await a.nextOf("invocationAccepted");
    await finish(a);
    for (const operation of ["resume", "takeover"] as const) {
      const bob = await AuditClient.connect(server.url, "bob");
      const attempt = resumeAttach(operation, accepted.sessionToken);
      bob.send(attempt);
      const { messages } = await finish(bob);
      expect(messages).toEqual([
        { type: "invocationRejected", attemptId: attempt.attemptId, code: "invalid-token", message: expect.any(String), retryable: false },
      ]);
    }
    const bob = await AuditClient.connect(server.url, "bob");
    bob.send(message);
    const { messages } = await finish(bob);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ type: "invocationRejected", attemptId: message.attemptId });
    expect(["forbidden", "attempt-conflict", "invalid-token"]).toContain((messages[0] as { code: string }).code);
  });
});

// ------------------------------------------------------------ 7. output replay

describe("output replay (sections 6.5, 7, 9): from an item cursor the rest and the terminal; from a terminal cursor nothing", () => {
  it("packed u8: a batch cursor replays the following batches and the terminal, never the batch itself", async () => {
    const client = await connect();
    client.send(start("split", v.record(v.stream(randomUUID()))));
    const accepted = await client.nextOf("invocationAccepted");
    const input = accepted.mappings[0]!.channel;
    const encode = (text: string) => new TextEncoder().encode(text);
    client.send({ type: "input-u8", channel: input, sequence: 0n, payload: encode("ab\n") });
    const firstBatch = await client.waitFor((m) => m.type === "output-u8");
    if (firstBatch.type !== "output-u8") throw new Error("unreachable");
    expect(firstBatch).toMatchObject({ sequence: 0n, payload: encode("AB\n") });
    client.send({ type: "input-u8", channel: input, sequence: 3n, payload: encode("cd\n") });
    client.send({ type: "inputStreamEnd", channel: input, sequence: 6n });
    await finish(client);

    const resumed = await connect();
    resumed.send(resumeAttach("resume", accepted.sessionToken, [firstBatch.cursorToken]));
    const { messages: replay } = await finish(resumed, { allowUnterminatedOutputs: false });
    const result = replay.find((m) => m.type === "invocationResult");
    if (result?.type !== "invocationResult") throw new Error("no result on resume");
    const upper = result.mappings[0]!.channel;
    const replayed = replay.flatMap((m) => (m.type === "output-u8" && m.channel === upper ? [m] : []));
    expect(replayed.map((b) => [b.sequence, new TextDecoder().decode(b.payload)])).toEqual([[3n, "CD\n"]]);
    expect(replay.filter((m) => m.type === "outputStreamEnd" && m.channel === upper)).toEqual([
      expect.objectContaining({ sequence: 6n, outcome: { kind: "ok" } }),
    ]);
  });

  it("binary: an item cursor on the last item replays only the terminal; the terminal cursor replays nothing of the stream", async () => {
    const client = await connect();
    client.send(start("blobs", v.record(v.u32(3), v.u32(5))));
    const accepted = await client.nextOf("invocationAccepted");
    const { messages } = await finish(client);
    const blobs = messages.flatMap((m) => (m.type === "output-binary" ? [m] : []));
    expect(blobs.map((b) => [b.sequence, b.mimeType, [...b.payload]])).toEqual([
      [0n, "application/octet-stream", [0, 1, 2, 3, 4]],
      [1n, "application/octet-stream", [1, 2, 3, 4, 5]],
      [2n, "application/octet-stream", [2, 3, 4, 5, 6]],
    ]);
    const end = messages.find((m) => m.type === "outputStreamEnd");
    if (end?.type !== "outputStreamEnd" || end.cursorToken === undefined) throw new Error("no terminal cursor");
    expect(end.sequence).toBe(3n);

    const fromLastItem = await connect();
    fromLastItem.send(resumeAttach("resume", accepted.sessionToken, [blobs[2]!.cursorToken]));
    const { messages: replay } = await finish(fromLastItem);
    expect(replay.map((m) => m.type)).toEqual(["invocationAccepted", "invocationResult", "outputStreamEnd", "invocationFinished"]);
    expect(replay[2]).toMatchObject({ outcome: { kind: "ok" }, sequence: 3n });

    const reaccepted = replay[0];
    if (reaccepted?.type !== "invocationAccepted") throw new Error("unreachable");
    const fromTerminal = await connect();
    fromTerminal.send(resumeAttach("resume", reaccepted.sessionToken, [end.cursorToken]));
    // The result re-announces the stream whose terminal the client already holds.
    const { messages: nothing } = await finish(fromTerminal, { allowUnterminatedOutputs: true });
    expect(nothing.map((m) => m.type)).toEqual(["invocationAccepted", "invocationResult", "invocationFinished"]);
  });

  it("a producer-error terminal is replayed with its outcome from the last item cursor", async () => {
    const client = await connect();
    client.send(start("fail", v.record(v.u32(2))));
    const accepted = await client.nextOf("invocationAccepted");
    const { messages } = await finish(client);
    const end = messages.find((m) => m.type === "outputStreamEnd");
    expect(end).toMatchObject({ outcome: { kind: "error", code: "producer-error", message: expect.any(String) }, sequence: 2n });
    expect(messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
    const items = messages.flatMap((m) => (m.type === "outputStreamItem" ? [m] : []));
    const resumed = await connect();
    resumed.send(resumeAttach("resume", accepted.sessionToken, [items[1]!.cursorToken]));
    const { messages: replay } = await finish(resumed);
    expect(replay.filter((m) => m.type === "outputStreamEnd")).toEqual([
      { ...end, channel: expect.any(Number), cursorToken: expect.any(String) },
    ]);
  });
});

// ------------------------------------------------------------ 8. result and finish on every attachment

describe("invocationResult on every attachment, invocationFinished last, close 1000 (sections 6.3, 6.9; decisions section 8)", () => {
  it("first, exact replay, resume and takeover each receive exactly one invocationResult before invocationFinished", async () => {
    const message = start("count", v.record(v.u32(3), v.u32(0)));
    const logs: ServerMessage[][] = [];
    const first = await connect();
    first.send(message);
    const accepted = await first.nextOf("invocationAccepted");
    logs.push((await finish(first)).messages);
    const replay = await connect();
    replay.send(message);
    logs.push((await finish(replay)).messages);
    const resumed = await connect();
    resumed.send(resumeAttach("resume", accepted.sessionToken));
    const resumedAccepted = await resumed.nextOf("invocationAccepted");
    logs.push((await finish(resumed)).messages);
    const taken = await connect();
    taken.send(resumeAttach("takeover", resumedAccepted.sessionToken));
    logs.push((await finish(taken)).messages);
    for (const log of logs) {
      expect(log.filter((m) => m.type === "invocationResult")).toHaveLength(1);
      expect(log.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
      expect(itemsOn(log, channelOf(log, "output")).map((x) => x.value)).toEqual([0, 1, 2]);
    }
  });

  it("a method without a result sends {kind: none} on every attachment", async () => {
    const client = await connect();
    const message = probe("two", v.record(v.stream(randomUUID()), v.stream(randomUUID())));
    client.send(message);
    const accepted = await client.nextOf("invocationAccepted");
    for (const mapping of accepted.mappings) client.send({ type: "inputStreamEnd", channel: mapping.channel, sequence: 0n });
    const { messages } = await finish(client);
    expect(messages.filter((m) => m.type === "invocationResult")).toEqual([
      { type: "invocationResult", mappings: [], result: { kind: "none" } },
    ]);
    const again = await connect();
    again.send(resumeAttach("resume", accepted.sessionToken));
    const { messages: replay, closed } = await finish(again);
    expect(replay.map((m) => m.type)).toEqual(["invocationAccepted", "invocationResult", "invocationFinished"]);
    const reaccepted = replay[0];
    if (reaccepted?.type !== "invocationAccepted") throw new Error("unreachable");
    expect(reaccepted.mappings.map((m) => m.inputHighWater)).toEqual([
      { sequence: 0n, terminal: true },
      { sequence: 0n, terminal: true },
    ]);
    expect(closed.code).toBe(1000);
  });

  it("a fatal failure terminalizes open streams first, then invocationFinished with a safe failure, then 1000", async () => {
    const client = await connect();
    client.send(probe("explode", v.record(v.stream(randomUUID()))));
    const channel = (await client.nextOf("invocationAccepted")).mappings[0]!.channel;
    client.send({ type: "inputStreamItem", channel, sequence: 0n, value: v.str("boom") });
    const { messages, closed } = await finish(client);
    expect(messages.at(-1)).toEqual({
      type: "invocationFinished",
      outcome: { kind: "failure", code: "invocation-failed", message: "invocation failed" },
    });
    expect(closed.code).toBe(1000);
  });
});

// ------------------------------------------------------------ 9. nested output streams

describe("nested output streams (sections 6.3, 6.4, 8): announced in the item that exposes them, before any use", () => {
  it("groups: every inner stream is announced once, in its outer item, and each has its own items and terminal", async () => {
    const client = await connect();
    client.send(start("groups", v.record(v.u32(4), v.u32(3))));
    const { messages } = await finish(client);
    const result = messages.find((m) => m.type === "invocationResult");
    if (result?.type !== "invocationResult") throw new Error("no result");
    expect(result.mappings).toHaveLength(1);
    const outer = result.mappings[0]!.channel;
    const outerItems = messages.flatMap((m) => (m.type === "outputStreamItem" && m.channel === outer ? [m] : []));
    expect(outerItems).toHaveLength(4);
    for (const [g, item] of outerItems.entries()) {
      expect(item.mappings).toHaveLength(1);
      const inner = item.mappings[0]!;
      expect(inner.direction).toBe("output");
      const fields = (item.value.value as unknown as { fields: SchemaValueJson[] }).fields;
      expect(fields[0]).toEqual(v.str(`group-${g}`));
      expect(fields[1]).toEqual({ kind: "stream", value: { streamToken: inner.streamToken } });
      expect(itemsOn(messages, inner.channel).map((x) => x.value)).toEqual([0, 1, 2]);
    }
    expect(messages.filter((m) => m.type === "outputStreamEnd")).toHaveLength(5);
  });
});

// ------------------------------------------------------------ 10. limits and backpressure

describe("limits (section 12; decisions section 6): oversize closes 1009, limits are never a silent discard", () => {
  it("after acceptance, a text message over 8 MiB closes 1009", async () => {
    const { client } = await acceptedReverse();
    client.sendRaw(`{"pad":"${"x".repeat(8 * 1024 * 1024)}"}`, false);
    const { closed } = await finish(client);
    expect(closed.code).toBe(1009);
  });

  it("a packed u8 batch over 1 MiB is limit-exceeded, then 1009", async () => {
    const client = await connect();
    const message = start("digest", v.record(v.stream(randomUUID())));
    client.send(message);
    const channel = (await client.nextOf("invocationAccepted")).mappings[0]!.channel;
    const size = 1024 * 1024 + 1;
    client.sendRaw(envelope({ channel, itemCount: String(size), kind: "input-u8", sequence: "0", version: 1 }, new Uint8Array(size)), true);
    const { messages, closed } = await finish(client);
    expect(messages.at(-1)).toMatchObject({
      type: "invocationRejected",
      attemptId: message.attemptId,
      code: "limit-exceeded",
      retryable: false,
    });
    expect(closed.code).toBe(1009);
  });

  it("binary metadata over 64 KiB is limit-exceeded, then 1009", async () => {
    const client = await connect();
    const message = start("digest", v.record(v.stream(randomUUID())));
    client.send(message);
    const channel = (await client.nextOf("invocationAccepted")).mappings[0]!.channel;
    const meta = new TextEncoder().encode(
      `{"channel":${channel},"itemCount":"1","kind":"input-u8","sequence":"0","version":1${" ".repeat(64 * 1024)}}`,
    );
    const data = new Uint8Array(4 + meta.length + 1);
    new DataView(data.buffer).setUint32(0, meta.length);
    data.set(meta, 4);
    client.sendRaw(data, true);
    const { messages, closed } = await finish(client);
    expect(messages.at(-1)).toMatchObject({ type: "invocationRejected", code: "limit-exceeded" });
    expect(closed.code).toBe(1009);
  });

  it("a binary message over 16 MiB + 64 KiB + 4 closes 1009", async () => {
    const { client } = await acceptedReverse();
    client.sendRaw(new Uint8Array(16 * 1024 * 1024 + 64 * 1024 + 5), true);
    const { closed } = await finish(client);
    expect(closed.code).toBe(1009);
  });
});

describe("backpressure (section 12): a session holding its byte budget stops reading, and loses nothing", () => {
  it("with a 1 MiB session budget and an agent that does not read, ACKs stop; once it reads, every item is ACKed", async () => {
    const pauses = new Pauses();
    const small = await startProbeServer({ maxQueuedBytesPerSession: 1024 * 1024 }, undefined, undefined, [pauses.observer]);
    try {
      const open = resetGate();
      const client = await AuditClient.connect(small.url);
      client.send(probe("gate", v.record(v.stream(randomUUID()))));
      const channel = (await client.nextOf("invocationAccepted")).mappings[0]!.channel;
      const items = 40;
      const big = "y".repeat(100 * 1024);
      for (let i = 0; i < items; i++) client.send({ type: "inputStreamItem", channel, sequence: BigInt(i), value: v.str(`${i}:${big}`) });
      client.send({ type: "inputStreamEnd", channel, sequence: BigInt(items) });
      const acked = () => {
        const acks = client.received.filter((m) => m.type === "inputStreamAck");
        const last = acks.at(-1);
        return last?.type === "inputStreamAck" ? Number(last.highestContiguousSequence) : 0;
      };
      // The budget is spent: the next message waits, unread, and what was accepted is acknowledged.
      await pauses.reached("session-budget");
      await client.waitFor((m) => m.type === "inputStreamAck");
      const held = acked();
      // About 1 MiB of ~100 KiB items is held for the agent; the rest waits unread.
      expect(held).toBeGreaterThan(0);
      expect(held).toBeLessThan(items);
      open();
      const { messages } = await finish(client);
      expect(messages.filter((m) => m.type === "inputStreamAck").at(-1)).toMatchObject({
        highestContiguousSequence: BigInt(items),
        terminal: true,
      });
      expect(messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
    } finally {
      await small.dispose();
    }
  });
});

// ------------------------------------------------------------ 11. authorization on every attach

describe("authorization (sections 1, 10.2): repeated on every resume, takeover and exact replay; a token is not a capability", () => {
  it("once the authorizer stops allowing the caller, resume, takeover and replay are forbidden; allowed again, resume works", async () => {
    let allowAttach = true;
    const seen: AuthorizationRequest[] = [];
    const store = new MemorySessionStore();
    const sessions = createSessionServer({
      store,
      host: createDemoHost(),
      keyring: Keyring.generate("audit"),
      authenticator: (token) => (token === "test-token" ? { account: "acme", principal: "alice" } : undefined),
      authorizer: (request) => {
        seen.push(request);
        return allowAttach;
      },
    });
    const address = await sessions.listen();
    try {
      const message = start("count", v.record(v.u32(1), v.u32(0)));
      const first = await AuditClient.connect(address.url);
      first.send(message);
      const accepted = await first.nextOf("invocationAccepted");
      await finish(first);
      expect(seen.map((r) => r.operation)).toEqual(["start"]);
      expect(seen[0]).toMatchObject({
        caller: { account: "acme", principal: "alice" },
        application: "demo",
        environment: "default",
        agentType: "echo",
        method: "count",
      });
      expect(seen[0]?.agentIdentity).toMatch(/^[0-9a-f]{64}$/);

      allowAttach = false;
      const refused: ClientMessage[] = [
        resumeAttach("resume", accepted.sessionToken),
        resumeAttach("takeover", accepted.sessionToken),
        message,
      ];
      for (const attempt of refused) {
        const client = await AuditClient.connect(address.url);
        client.send(attempt);
        const { messages, closed } = await finish(client);
        expect(messages).toEqual([
          {
            type: "invocationRejected",
            attemptId: (attempt as { attemptId: string }).attemptId,
            code: "forbidden",
            message: expect.any(String),
            retryable: false,
          },
        ]);
        expect(closed.code).toBe(1002);
      }
      expect(seen.slice(1).map((r) => r.operation)).toEqual(["resume", "takeover", "start"]);

      allowAttach = true;
      const again = await AuditClient.connect(address.url);
      again.send(resumeAttach("resume", accepted.sessionToken));
      expect((await finish(again)).messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
    } finally {
      await sessions.close();
      await store.close();
    }
  });
});

// ------------------------------------------------------------ 12. takeover with input in flight

describe("takeover with input in flight (sections 9, 6.8): nothing ACKed is lost, nothing unACKed is counted", () => {
  it("the new high-water covers every ACK the replaced transport received; resending the suffix yields the exact digest", async () => {
    const batch = 1000;
    const batches = 200;
    const all = new Uint8Array(batch * batches).map((_, i) => (i * 7) & 0xff);
    const a = await connect();
    a.send(start("digest", v.record(v.stream(randomUUID()))));
    const accepted = await a.nextOf("invocationAccepted");
    const channel = accepted.mappings[0]!.channel;
    for (let i = 0; i < batches; i++)
      a.send({ type: "input-u8", channel, sequence: BigInt(i * batch), payload: all.subarray(i * batch, (i + 1) * batch) });
    await a.nextOf("inputStreamAck");

    const b = await connect();
    b.send(resumeAttach("takeover", accepted.sessionToken));
    const reaccepted = await b.nextOf("invocationAccepted");
    const { messages: aLog } = await finish(a);
    expect(aLog.at(-1)).toEqual({ type: "attachmentRevoked", reason: "replaced" });
    const input = reaccepted.mappings[0]!;
    const highWater = input.inputHighWater!.sequence;
    const ackedOnA = aLog.flatMap((m) => (m.type === "inputStreamAck" ? [m.highestContiguousSequence] : []));
    for (const acked of ackedOnA) expect(acked <= highWater).toBe(true);
    // Resend from the last ACK A saw (a client keeps everything unACKed): the overlap must match.
    const from = Number(ackedOnA.at(-1) ?? 0n);
    for (let at = from; at < all.length; at += batch) {
      b.send({
        type: "input-u8",
        channel: input.channel,
        sequence: BigInt(at),
        payload: all.subarray(at, Math.min(at + batch, all.length)),
      });
    }
    b.send({ type: "inputStreamEnd", channel: input.channel, sequence: BigInt(all.length) });
    const { messages } = await finish(b);
    const result = messages.find((m) => m.type === "invocationResult");
    if (result?.type !== "invocationResult" || result.result.kind !== "value") throw new Error("no value result");
    expect(result.result.value).toEqual(
      v.record({ kind: "u64", value: String(all.length) }, v.str(createHash("sha256").update(all).digest("hex"))),
    );
  });
});
