/**
 * Every error code the server can emit, reached over a real loopback
 * connection (decisions section 5), with the close status that follows.
 * Public messages never carry internals.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { request as httpRequest } from "node:http";
import WebSocket from "ws";
import { SESSION_PATH, SUBPROTOCOL, type ServerMessage } from "@golem-stream/wire";
import { RawClient, TOKEN, demoStart, v, resumeAttach } from "./helpers.js";
import { startProbeServer } from "./probe-server.js";

let server: Awaited<ReturnType<typeof startProbeServer>>;
beforeAll(async () => {
  server = await startProbeServer({ sessionRetentionMs: 60_000 });
});
afterAll(async () => {
  await server.dispose();
});

interface HttpAnswer {
  readonly status: number;
  readonly body: unknown;
  readonly upgraded: boolean;
}

function upgradeRequest(headers: Record<string, string>, path = SESSION_PATH): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${server.httpUrl}${path}`, {
      headers: {
        connection: "Upgrade",
        upgrade: "websocket",
        "sec-websocket-version": "13",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
        ...headers,
      },
    });
    req.on("upgrade", () => resolve({ status: 101, body: undefined, upgraded: true }));
    req.on("response", (res) => {
      let text = "";
      res.on("data", (chunk: Buffer) => (text += chunk.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text), upgraded: false }));
    });
    req.on("error", reject);
    req.end();
  });
}

function plainGet(path: string, headers: Record<string, string> = {}): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${server.httpUrl}${path}`, { headers });
    req.on("response", (res) => {
      let text = "";
      res.on("data", (chunk: Buffer) => (text += chunk.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text), upgraded: false }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** Sends one first message and returns what came back and how the socket closed. */
async function firstMessage(send: (client: RawClient) => void, token = TOKEN) {
  const client = await RawClient.connect(server.url, token);
  send(client);
  return client.all();
}

function rejection(messages: readonly ServerMessage[]) {
  expect(messages).toHaveLength(1);
  const [message] = messages;
  if (message?.type !== "invocationRejected") throw new Error(`expected invocationRejected, got ${message?.type}`);
  return message;
}

describe("handshake failures use the HTTP error envelope and never upgrade", () => {
  it("unsupported-subprotocol: 400 with errors[]", async () => {
    const answer = await upgradeRequest({ authorization: `Bearer ${TOKEN}`, "sec-websocket-protocol": "other.v1" });
    expect(answer).toEqual({ status: 400, upgraded: false, body: { code: "unsupported-subprotocol", errors: [expect.any(String)] } });
    const missing = await upgradeRequest({ authorization: `Bearer ${TOKEN}` });
    expect(missing.status).toBe(400);
  });

  it("unauthenticated: 401 for a missing or unknown bearer token", async () => {
    const missing = await upgradeRequest({ "sec-websocket-protocol": SUBPROTOCOL });
    expect(missing).toEqual({ status: 401, upgraded: false, body: { code: "unauthenticated", error: expect.any(String) } });
    const unknown = await upgradeRequest({ "sec-websocket-protocol": SUBPROTOCOL, authorization: "Bearer nope" });
    expect(unknown.status).toBe(401);
  });

  it("not-a-websocket: 426 for a plain GET of the session endpoint; not-found elsewhere", async () => {
    expect(await plainGet(SESSION_PATH)).toEqual({
      status: 426,
      upgraded: false,
      body: { code: "not-a-websocket", error: expect.any(String) },
    });
    expect((await plainGet("/nowhere")).body).toMatchObject({ code: "not-found" });
    expect((await upgradeRequest({ "sec-websocket-protocol": SUBPROTOCOL, authorization: `Bearer ${TOKEN}` }, "/nowhere")).status).toBe(
      404,
    );
  });

  it("a valid upgrade selects exactly the subprotocol and no compression", async () => {
    const socket = new WebSocket(`${server.url}${SESSION_PATH}`, ["x.other", SUBPROTOCOL], {
      headers: { authorization: `Bearer ${TOKEN}` },
      perMessageDeflate: true,
    });
    await new Promise((resolve) => socket.once("open", resolve));
    expect(socket.protocol).toBe(SUBPROTOCOL);
    expect(socket.extensions).toBe("");
    socket.close();
  });
});

describe("first-message failures", () => {
  it("binary first message: close 1002 without a diagnostic", async () => {
    const { messages, closed } = await firstMessage((c) => c.sendRaw(new Uint8Array([0, 0, 0, 2, 123, 125]), true));
    expect(messages).toEqual([]);
    expect(closed.code).toBe(1002);
  });

  it("stream traffic before acceptance: close 1002 without a diagnostic", async () => {
    const { messages, closed } = await firstMessage((c) => c.send({ type: "inputStreamEnd", channel: 1, sequence: 0n }));
    expect(messages).toEqual([]);
    expect(closed.code).toBe(1002);
  });

  it("invalid-message: with a recoverable attempt id the diagnostic names it; otherwise close 1002 directly", async () => {
    const attemptId = randomUUID();
    const bad = JSON.stringify({ ...JSON.parse(JSON.stringify({ type: "invocationStart", version: 1, attemptId })), surprise: true });
    const withId = await firstMessage((c) => c.sendRaw(bad, false));
    expect(rejection(withId.messages)).toMatchObject({ attemptId, code: "invalid-message", retryable: false });
    expect(withId.closed.code).toBe(1002);
    const garbage = await firstMessage((c) => c.sendRaw("{not json", false));
    expect(garbage.messages).toEqual([]);
    expect(garbage.closed.code).toBe(1002);
  });

  it("oversized text message: close 1009", async () => {
    const { closed } = await firstMessage((c) => c.sendRaw("x".repeat(8 * 1024 * 1024 + 1), false));
    expect(closed.code).toBe(1009);
  });

  it("not-found: unknown agent type or method", async () => {
    const start = demoStart("nope", v.record());
    const { messages, closed } = await firstMessage((c) => c.send(start));
    expect(rejection(messages)).toMatchObject({ attemptId: start.attemptId, code: "not-found", retryable: false });
    expect(closed.code).toBe(1002);
    const unknownType = demoStart("count", v.record(), { selector: { ...start.selector, agentType: "nobody" } });
    expect(rejection((await firstMessage((c) => c.send(unknownType))).messages).code).toBe("not-found");
  });

  it("validation-error: parameters that do not match the method, and config the agent does not declare", async () => {
    const wrongType = demoStart("count", v.record(v.str("three"), v.u32(1)));
    const rejected = rejection((await firstMessage((c) => c.send(wrongType))).messages);
    expect(rejected).toMatchObject({ code: "validation-error", retryable: false });
    const withConfig = demoStart("count", v.record(v.u32(1), v.u32(0)), { config: [{ path: ["mode"], value: "fast" }] });
    expect(rejection((await firstMessage((c) => c.send(withConfig))).messages).code).toBe("validation-error");
  });

  it("validation-error for config: undeclared path or unaccepted value on an agent that declares config", async () => {
    const base = demoStart("boom", v.record());
    const selector = { ...base.selector, application: "test", agentType: "probe" };
    const badValue = { ...base, selector, config: [{ path: ["mode"], value: "warp" }] };
    expect(rejection((await firstMessage((c) => c.send(badValue))).messages).code).toBe("validation-error");
  });

  it("unsupported-value: a host-managed value kind", async () => {
    const start = demoStart("count", v.record({ kind: "secret", value: {} }, v.u32(0)));
    expect(rejection((await firstMessage((c) => c.send(start))).messages).code).toBe("unsupported-value");
  });

  it("stream-already-consumed: one provisional reference at two coordinates", async () => {
    const ref = randomUUID();
    const base = demoStart("two", v.record(v.stream(ref), v.stream(ref)));
    const start = { ...base, selector: { ...base.selector, application: "test", agentType: "probe" } };
    expect(rejection((await firstMessage((c) => c.send(start))).messages).code).toBe("stream-already-consumed");
  });

  it("forbidden: the authorizer refuses the selector", async () => {
    const base = demoStart("forbidden", v.record());
    const start = { ...base, selector: { ...base.selector, application: "test", agentType: "probe" } };
    expect(rejection((await firstMessage((c) => c.send(start))).messages)).toMatchObject({ code: "forbidden", retryable: false });
  });

  it("forbidden before not-found: a refused caller cannot tell a missing agent type or a bad constructor from a refusal", async () => {
    const base = demoStart("count", v.record(v.u32(1), v.u32(0)));
    // The probe server's authorizer refuses environment "secret" and method "forbidden".
    const missingType = { ...base, selector: { ...base.selector, environment: "secret", agentType: "nowhere" } };
    expect(rejection((await firstMessage((c) => c.send(missingType))).messages).code).toBe("forbidden");
    const missingTypeForbiddenMethod = {
      ...base,
      attemptId: randomUUID(),
      selector: { ...base.selector, agentType: "nowhere", method: "forbidden" },
    };
    expect(rejection((await firstMessage((c) => c.send(missingTypeForbiddenMethod))).messages).code).toBe("forbidden");
    const badConstructor = {
      ...base,
      attemptId: randomUUID(),
      selector: { ...base.selector, method: "forbidden", constructorParameters: v.record(v.u32(7)) },
    };
    expect(rejection((await firstMessage((c) => c.send(badConstructor))).messages).code).toBe("forbidden");
    // The same mistakes from an allowed caller are reported as they are.
    const allowedMissing = { ...base, attemptId: randomUUID(), selector: { ...base.selector, agentType: "nowhere" } };
    expect(rejection((await firstMessage((c) => c.send(allowedMissing))).messages).code).toBe("not-found");
    const allowedBadConstructor = {
      ...base,
      attemptId: randomUUID(),
      selector: { ...base.selector, constructorParameters: v.record(v.u32(7)) },
    };
    expect(rejection((await firstMessage((c) => c.send(allowedBadConstructor))).messages).code).toBe("validation-error");
  });

  it("invalid-token: a session token that does not verify, or belongs to another principal", async () => {
    const garbage = resumeAttach("resume", "gai1_AAAA");
    expect(rejection((await firstMessage((c) => c.send(garbage))).messages)).toMatchObject({ code: "invalid-token", retryable: false });

    const owner = await RawClient.connect(server.url);
    owner.send(demoStart("count", v.record(v.u32(1), v.u32(0))));
    const accepted = await owner.nextOf("invocationAccepted");
    await owner.all();
    const stolen = { ...garbage, attemptId: randomUUID(), sessionToken: accepted.sessionToken };
    const other = await firstMessage((c) => c.send(stolen), "bob");
    expect(rejection(other.messages).code).toBe("invalid-token");
    // A session token is not a cursor: kind is part of verification.
    const wrongKind = { ...garbage, attemptId: randomUUID(), sessionToken: accepted.sessionToken, outputCursors: [accepted.sessionToken] };
    expect(rejection((await firstMessage((c) => c.send(wrongKind))).messages).code).toBe("invalid-token");
  });

  it("internal-error: a host fault is reported without its details", async () => {
    const base = demoStart("count", v.record());
    const start = { ...base, selector: { ...base.selector, application: "broken" } };
    const rejected = rejection((await firstMessage((c) => c.send(start))).messages);
    expect(rejected).toEqual({
      type: "invocationRejected",
      attemptId: start.attemptId,
      code: "internal-error",
      message: "internal error",
      retryable: true,
    });
  });

  it("limit-exceeded: more streams than the session limit", async () => {
    const small = await startProbeServer({ maxStreamsPerSession: 1 });
    try {
      const base = demoStart("two", v.record(v.stream(randomUUID()), v.stream(randomUUID())));
      const start = { ...base, selector: { ...base.selector, application: "test", agentType: "probe" } };
      const client = await RawClient.connect(small.url);
      client.send(start);
      const { messages, closed } = await client.all();
      expect(rejection(messages).code).toBe("limit-exceeded");
      // A count limit, not an oversized message: 1002 (section 11 keeps 1009 for oversized input).
      expect(closed.code).toBe(1002);
    } finally {
      await small.dispose();
    }
  });
});

describe("failures after acceptance: invocationRejected with the accepted attempt id, then close 1002", () => {
  async function acceptedReverse() {
    const client = await RawClient.connect(server.url);
    const start = demoStart("reverse", v.record(v.stream(randomUUID())));
    client.send(start);
    const accepted = await client.nextOf("invocationAccepted");
    return { client, start, accepted, channel: accepted.mappings[0]!.channel };
  }

  async function expectViolation(client: RawClient, attemptId: string, code: string) {
    const rejected = await client.nextOf("invocationRejected");
    expect(rejected).toMatchObject({ attemptId, code, retryable: true });
    expect((await client.closed).code).toBe(1002);
  }

  it("invalid-channel: unknown channel, wrong direction, after the stream ended", async () => {
    const unknown = await acceptedReverse();
    unknown.client.send({ type: "inputStreamItem", channel: 99, sequence: 0n, value: v.str("x") });
    await expectViolation(unknown.client, unknown.start.attemptId, "invalid-channel");

    // `two` reads its first input, then its second: the session is still running after the first ends.
    const ended = await RawClient.connect(server.url);
    const base = demoStart("two", v.record(v.stream(randomUUID()), v.stream(randomUUID())));
    const two = { ...base, selector: { ...base.selector, application: "test", agentType: "probe" } };
    ended.send(two);
    const first = (await ended.nextOf("invocationAccepted")).mappings[0]!.channel;
    ended.send({ type: "inputStreamEnd", channel: first, sequence: 0n });
    expect(await ended.nextOf("inputStreamAck")).toMatchObject({ channel: first, terminal: true });
    ended.send({ type: "inputStreamItem", channel: first, sequence: 0n, value: v.str("late") });
    await expectViolation(ended, two.attemptId, "invalid-channel");

    const wrongDirection = await RawClient.connect(server.url);
    const start = demoStart("count", v.record(v.u32(1000), v.u32(5)));
    wrongDirection.send(start);
    const result = await wrongDirection.nextOf("invocationResult");
    wrongDirection.send({ type: "inputStreamEnd", channel: result.mappings[0]!.channel, sequence: 0n });
    await expectViolation(wrongDirection, start.attemptId, "invalid-channel");
  });

  it("input-gap: an item beyond the high-water", async () => {
    const { client, start, channel } = await acceptedReverse();
    client.send({ type: "inputStreamItem", channel, sequence: 3n, value: v.str("x") });
    await expectViolation(client, start.attemptId, "input-gap");
  });

  it("input-conflict: a resent item that differs from the accepted one", async () => {
    const { client, start, channel } = await acceptedReverse();
    client.send({ type: "inputStreamItem", channel, sequence: 0n, value: v.str("first") });
    await client.nextOf("inputStreamAck");
    client.send({ type: "inputStreamItem", channel, sequence: 0n, value: v.str("changed") });
    await expectViolation(client, start.attemptId, "input-conflict");
  });

  it("protocol-error: a second start after acceptance, a binary item on a value stream, a text item on a u8 stream", async () => {
    const again = await acceptedReverse();
    again.client.send(demoStart("count", v.record(v.u32(1), v.u32(0))));
    await expectViolation(again.client, again.start.attemptId, "protocol-error");
    const binary = await acceptedReverse();
    binary.client.send({ type: "input-u8", channel: binary.channel, sequence: 0n, payload: new Uint8Array([1]) });
    await expectViolation(binary.client, binary.start.attemptId, "protocol-error");
    const text = await RawClient.connect(server.url);
    const digestStart = demoStart("digest", v.record(v.stream(randomUUID())));
    text.send(digestStart);
    const u8 = (await text.nextOf("invocationAccepted")).mappings[0]!.channel;
    text.send({ type: "inputStreamItem", channel: u8, sequence: 0n, value: { kind: "u8", value: 1 } });
    await expectViolation(text, digestStart.attemptId, "protocol-error");
  });

  it("validation-error after acceptance: an item that does not match the element schema", async () => {
    const { client, start, channel } = await acceptedReverse();
    client.send({ type: "inputStreamItem", channel, sequence: 0n, value: v.u32(7) });
    const rejected = await client.nextOf("invocationRejected");
    expect(rejected).toMatchObject({ attemptId: start.attemptId, code: "validation-error" });
    expect((await client.closed).code).toBe(1002);
  });

  it("a violation only detaches: the session can be resumed and finishes normally", async () => {
    const { client, accepted, channel } = await acceptedReverse();
    client.send({ type: "inputStreamItem", channel, sequence: 0n, value: v.str("ok") });
    await client.nextOf("inputStreamAck");
    client.send({ type: "inputStreamItem", channel: 77, sequence: 0n, value: v.str("x") });
    await client.closed;
    const again = await RawClient.connect(server.url);
    again.send(resumeAttach("resume", accepted.sessionToken));
    const reaccepted = await again.nextOf("invocationAccepted");
    const input = reaccepted.mappings.find((m) => m.direction === "input")!;
    expect(input.inputHighWater).toEqual({ sequence: 1n, terminal: false });
    again.send({ type: "inputStreamEnd", channel: input.channel, sequence: 1n });
    const { messages } = await again.all();
    expect(messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
  });
});

describe("fatal failure", () => {
  it("terminalizes every open input (server streamCancel invocation-failed, terminal ACK) before invocationFinished", async () => {
    const base = demoStart("explode", v.record(v.stream(randomUUID())));
    const start = { ...base, selector: { ...base.selector, application: "test", agentType: "probe" } };
    const client = await RawClient.connect(server.url);
    client.send(start);
    const channel = (await client.nextOf("invocationAccepted")).mappings[0]!.channel;
    client.send({ type: "inputStreamItem", channel, sequence: 0n, value: v.str("boom") });
    const { messages, closed } = await client.all();
    expect(messages.map((m) => m.type)).toEqual([
      "invocationAccepted",
      "inputStreamAck",
      "streamCancel",
      "inputStreamAck",
      "invocationFinished",
    ]);
    expect(messages[2]).toEqual({ type: "streamCancel", channel, reason: "invocation-failed" });
    expect(messages[3]).toMatchObject({ channel, highestContiguousSequence: 1n, terminal: true });
    expect(messages[4]).toEqual({
      type: "invocationFinished",
      outcome: { kind: "failure", code: "invocation-failed", message: "invocation failed" },
    });
    expect(closed.code).toBe(1000);
  });

  it("invocation-failed: a throwing method finishes with a safe failure outcome", async () => {
    const base = demoStart("boom", v.record());
    const start = { ...base, selector: { ...base.selector, application: "test", agentType: "probe" } };
    const { messages, closed } = await firstMessage((c) => c.send(start));
    expect(messages.map((m) => m.type)).toEqual(["invocationAccepted", "invocationFinished"]);
    expect(messages[1]).toEqual({
      type: "invocationFinished",
      outcome: { kind: "failure", code: "invocation-failed", message: "invocation failed" },
    });
    expect(JSON.stringify(messages, (_, x: unknown) => (typeof x === "bigint" ? x.toString() : x))).not.toContain("srv");
    expect(closed.code).toBe(1000);
  });
});
