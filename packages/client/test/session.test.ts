/**
 * The session runtime against an in-memory server that speaks through the
 * real wire codecs. Each test scripts the server side message by message.
 */
import { describe, expect, it, vi } from "vitest";
import type { ClientMessage, InputStreamItem, InputU8Batch, InvocationStart, ResumeAttach } from "@golem-stream/wire";
import { ProtocolError } from "@golem-stream/wire";
import { ClientError, inputStream, type ClientOptions, type InputStream, type ResumeState } from "../src/index.js";
import { pullFrom, readingBlobItems } from "../src/sources.js";
import {
  SESSION,
  STREAM_OUT,
  acceptanceOf,
  cursor,
  echo,
  inputMapping,
  isResume,
  memoryClient,
  nextStart,
  noParams,
  okEnd,
  outputMapping,
  provisionalRefOf,
  streamResult,
  tick,
  u32Item,
  acceptedCount,
} from "./support/fixtures.js";

describe("start and delivery", () => {
  it("delivers output items in order and retains a cursor only when the consumer comes back", async () => {
    const { states: checkpoints, call, server, start } = await acceptedCount();
    expect(start.selector.method).toBe("count");
    await call.accepted;
    server.send({ type: "invocationResult", mappings: [outputMapping(2)], result: streamResult() });
    const result = await call.result;
    if (result.kind !== "value") throw new Error("expected a value result");
    const [stream] = result.streams;
    expect(stream?.coordinate).toBe("");
    for (let i = 0; i < 3; i++) {
      server.send(u32Item(i));
    }
    server.send(okEnd(3));
    server.send({ type: "invocationFinished", outcome: { kind: "success" } });

    const iterator = stream![Symbol.asyncIterator]();
    expect((await iterator.next()).value).toEqual({ kind: "u32", value: 0 });
    await tick();
    // Item 0 is handed out but not yet delivered: no cursor retained.
    expect(checkpoints.at(-1)?.outputCursors).toEqual([]);
    expect((await iterator.next()).value).toEqual({ kind: "u32", value: 1 });
    expect(checkpoints.at(-1)?.outputCursors).toEqual([cursor("o", 0)]);
    expect((await iterator.next()).value).toEqual({ kind: "u32", value: 2 });
    expect((await iterator.next()).done).toBe(true);
    // The consumer has the end before its cursor is retained (protocol 6.5)…
    expect(checkpoints.at(-1)?.outputCursors).toEqual([cursor("o", 2)]);
    // …which coming back after it waits for.
    expect((await iterator.next()).done).toBe(true);
    expect(checkpoints.at(-1)?.outputCursors).toEqual([cursor("o", "end")]);
    await call.finished;
    expect(checkpoints.at(-1)?.sessionToken).toBe(SESSION);
  });

  it("reports a stream's error end as a typed error after its items", async () => {
    const { client, transport } = memoryClient();
    const call = client.invoke({ ...echo, method: "fail", methodParameters: noParams });
    const { server, start } = await nextStart(transport);
    server.send(acceptanceOf(start));
    server.send({ type: "invocationResult", mappings: [outputMapping(2)], result: streamResult() });
    server.send(u32Item(0));
    server.send({
      type: "outputStreamEnd",
      channel: 2,
      cursorToken: cursor("o", 1),
      outcome: { kind: "error", code: "producer-error", message: "boom" },
      sequence: 1n,
    });
    const result = await call.result;
    const seen: unknown[] = [];
    const error = await (async () => {
      try {
        for await (const item of result.kind === "value" ? result.streams[0]! : []) seen.push(item);
      } catch (e) {
        return e;
      }
    })();
    expect(seen).toEqual([{ kind: "u32", value: 0 }]);
    expect(error).toBeInstanceOf(ClientError);
    expect((error as ClientError).kind).toBe("stream-failed");
    expect((error as ClientError).code).toBe("producer-error");
  });
});

describe("attempts and reconnects", () => {
  it("retries the exact frozen start with the same attempt id after an uncertain loss", async () => {
    const { client, transport } = memoryClient();
    const call = client.invoke({
      ...echo,
      method: "reverse",
      methodParameters: { kind: "record", value: { fields: [inputStream.strings(["a"])] } },
    });
    const first = await nextStart(transport);
    first.server.drop();
    const second = await nextStart(transport);
    expect(second.start).toEqual(first.start);
    second.server.send(acceptanceOf(second.start));
    const accepted = await call.accepted;
    expect(accepted).toMatchObject({ operation: "start", replayed: true });
    call.cancel();
  });

  it("starts a new attempt with fresh provisional references after a retryable rejection", async () => {
    const { client, transport } = memoryClient();
    const call = client.invoke({
      ...echo,
      method: "reverse",
      methodParameters: { kind: "record", value: { fields: [inputStream.strings(["a"])] } },
    });
    const first = await nextStart(transport);
    first.server.send({
      type: "invocationRejected",
      attemptId: first.start.attemptId,
      code: "overloaded",
      message: "busy",
      retryable: true,
    });
    const second = await nextStart(transport);
    expect(second.start.attemptId).not.toBe(first.start.attemptId);
    expect(provisionalRefOf(second.start)).not.toBe(provisionalRefOf(first.start));
    expect(second.start.idempotencyKey).toBe(first.start.idempotencyKey);
    call.cancel();
    await expect(call.finished).rejects.toMatchObject({ kind: "aborted" });
  });

  it("surfaces a definitive rejection with its public code", async () => {
    const { client, transport } = memoryClient();
    const call = client.invoke({ ...echo, method: "nope", methodParameters: noParams });
    const { server, start } = await nextStart(transport);
    server.send({ type: "invocationRejected", attemptId: start.attemptId, code: "not-found", message: "no such method", retryable: false });
    await expect(call.accepted).rejects.toMatchObject({ kind: "rejected", code: "not-found" });
    await expect(call.finished).rejects.toBeInstanceOf(ClientError);
    expect(call.signal.aborted).toBe(true);
  });

  it("fails with connection-lost once the reconnect policy is exhausted", async () => {
    const { client, transport } = memoryClient({ reconnect: { random: () => 0, maxAttempts: 2 } });
    transport.refusals.push(new Error("ECONNREFUSED"), new Error("ECONNREFUSED"), new Error("ECONNREFUSED"));
    const call = client.invoke({ ...echo, method: "count", methodParameters: noParams });
    const reconnects: number[] = [];
    call.on("reconnecting", (event) => reconnects.push(event.failures));
    await expect(call.finished).rejects.toMatchObject({ kind: "connection-lost", code: undefined });
    expect(reconnects).toEqual([1, 2]);
  });

  it("fails with the handshake's code when the server refuses the upgrade", async () => {
    const { client, transport } = memoryClient();
    transport.refusals.push(new ProtocolError("unauthenticated", "bad token"));
    const call = client.invoke({ ...echo, method: "count", methodParameters: noParams });
    await expect(call.finished).rejects.toMatchObject({ kind: "rejected", code: "unauthenticated" });
  });

  it("resumes after acceptance with a fresh attempt id, the delivered cursors, and drops replayed items", async () => {
    const { client, transport } = memoryClient();
    const call = client.invoke({ ...echo, method: "count", methodParameters: noParams });
    const { server, start } = await nextStart(transport);
    server.send(acceptanceOf(start));
    server.send({ type: "invocationResult", mappings: [outputMapping(2)], result: streamResult() });
    for (let i = 0; i < 3; i++) {
      server.send(u32Item(i));
    }
    const result = await call.result;
    const iterator = (result.kind === "value" ? result.streams[0]! : undefined)![Symbol.asyncIterator]();
    await iterator.next();
    await iterator.next(); // item 0 delivered now; item 1 handed out; item 2 queued
    server.drop();

    const again = await transport.nextConnection();
    const resume = (await again.waitUntil(isResume)) as ResumeAttach;
    expect(resume.attemptId).not.toBe(start.attemptId);
    expect(resume).toMatchObject({ operation: "resume", sessionToken: SESSION, outputCursors: [cursor("o", 0)] });
    // The server replays everything after the cursor, on a new channel number.
    again.send(acceptanceOf(start, [outputMapping(7)], { attemptId: resume.attemptId, sessionToken: "session-token-2" }));
    for (let i = 1; i < 4; i++) {
      again.send(u32Item(i, 7));
    }
    again.send(okEnd(4, 7));
    // The re-sent result announces nothing: the acceptance announced its stream (decisions §8).
    again.send({ type: "invocationResult", mappings: [], result: streamResult() });
    again.send({ type: "invocationFinished", outcome: { kind: "success" } });
    const rest: unknown[] = [];
    for (let r = await iterator.next(); !r.done; r = await iterator.next()) rest.push(r.value);
    expect(rest).toEqual([2, 3].map((value) => ({ kind: "u32", value })));
    await call.finished;
    expect(call.sessionToken).toBe("session-token-2");
  });

  it("resumes after a retryable rejection that follows acceptance", async () => {
    const { client, transport } = memoryClient();
    const call = client.invoke({ ...echo, method: "count", methodParameters: noParams });
    const { server, start } = await nextStart(transport);
    server.send(acceptanceOf(start));
    const causes: string[] = [];
    call.on("reconnecting", (event) => causes.push(event.cause));
    server.send({ type: "invocationRejected", attemptId: start.attemptId, code: "input-gap", message: "gap", retryable: true });
    const again = await transport.nextConnection();
    const resume = (await again.waitUntil(isResume)) as ResumeAttach;
    expect(resume).toMatchObject({ operation: "resume", sessionToken: SESSION });
    expect(resume.attemptId).not.toBe(start.attemptId);
    expect(causes).toEqual(["input-gap"]);
    call.cancel();
  });

  it("fails with revoked when another connection takes the session over", async () => {
    const { client, transport } = memoryClient();
    const call = client.invoke({ ...echo, method: "count", methodParameters: noParams });
    const { server, start } = await nextStart(transport);
    server.send(acceptanceOf(start));
    const events: unknown[] = [];
    call.on("revoked", (event) => events.push(event));
    server.send({ type: "attachmentRevoked", reason: "replaced" });
    await expect(call.finished).rejects.toMatchObject({ kind: "revoked" });
    expect(events).toHaveLength(1);
  });

  it("resumes when a replayed acceptance is revoked (its attachment had detached)", async () => {
    const { client, transport } = memoryClient();
    const call = client.invoke({ ...echo, method: "count", methodParameters: noParams });
    const first = await nextStart(transport);
    first.server.drop();
    const second = await nextStart(transport);
    second.server.send(acceptanceOf(second.start));
    second.server.send({ type: "attachmentRevoked", reason: "replaced" });
    const third = await transport.nextConnection();
    const resume = (await third.waitUntil(isResume)) as ResumeAttach;
    expect(resume.attemptId).not.toBe(second.start.attemptId);
    expect(resume.sessionToken).toBe(SESSION);
    call.cancel();
  });
});

describe("input discipline", () => {
  it("pauses the source at the unacknowledged byte bound and resends only the suffix beyond the high-water", async () => {
    const { client, transport } = memoryClient({ maxUnackedInputBytes: 4096 });
    let pulled = 0;
    async function* chunks() {
      for (let i = 0; i < 16; i++) {
        pulled++;
        yield new Uint8Array(1024).fill(i);
      }
    }
    const call = client.invoke({
      ...echo,
      method: "digest",
      methodParameters: { kind: "record", value: { fields: [inputStream.bytes(chunks())] } },
    });
    const { server, start } = await nextStart(transport);
    const ref = provisionalRefOf(start);
    server.send(acceptanceOf(start, [inputMapping(1, ref)]));
    await server.waitFor(5); // start + 4 batches
    await tick();
    expect(pulled).toBe(4);
    const sent = server.received.filter((m): m is InputU8Batch => m.type === "input-u8");
    expect(sent.map((m) => m.sequence)).toEqual([0n, 1024n, 2048n, 3072n]);

    // The server durably took 1.5 batches, then the connection dies.
    server.send({ type: "inputStreamAck", channel: 1, highestContiguousSequence: 1536n, mappings: [], terminal: false });
    await server.waitFor(6);
    server.drop();
    const again = await transport.nextConnection();
    const resume = (await again.waitUntil(isResume)) as ResumeAttach;
    again.send(acceptanceOf(start, [inputMapping(3, undefined, 2048n)], { attemptId: resume.attemptId }));
    const resent = (await again.waitUntil((m: ClientMessage) => m.type === "input-u8")) as InputU8Batch;
    expect(resent.sequence).toBe(2048n);
    expect(resent.channel).toBe(3);
    expect(resent.payload[0]).toBe(2);
    call.cancel();
  });

  it("by default holds 8 MiB of unacknowledged input per stream (decisions §6): a fast producer is not read further until an ACK frees room", async () => {
    const { client, transport } = memoryClient();
    let pulled = 0;
    const chunk = new Uint8Array(64 * 1024);
    const fast = { [Symbol.asyncIterator]: () => ({ next: async () => (pulled++, { done: false as const, value: chunk }) }) };
    const call = client.invoke({
      ...echo,
      method: "digest",
      methodParameters: { kind: "record", value: { fields: [inputStream.bytes(fast)] } },
    });
    const { server, start } = await nextStart(transport);
    server.send(acceptanceOf(start, [inputMapping(1, provisionalRefOf(start))]));
    await server.waitFor(1 + 128);
    for (let i = 0; i < 20; i++) await tick();
    expect(pulled).toBe(128); // 128 × 64 KiB = 8 MiB
    expect(server.received).toHaveLength(1 + 128);
    // The server durably took 2 MiB: exactly that much room, 32 more chunks.
    server.send({ type: "inputStreamAck", channel: 1, highestContiguousSequence: BigInt(2 * 1024 * 1024), mappings: [], terminal: false });
    await server.waitFor(1 + 160);
    for (let i = 0; i < 20; i++) await tick();
    expect(pulled).toBe(160);
    call.cancel();
  });

  it("does not read a source ahead of a congested connection, and reads on once its writes have gone", async () => {
    const { client, transport } = memoryClient();
    let pulled = 0;
    let server: Awaited<ReturnType<typeof nextStart>>["server"] | undefined;
    async function* items() {
      for (let i = 0; i < 40; i++) {
        pulled++;
        // The connection fills up while the tenth item is being sent.
        if (i === 9 && server !== undefined) server.congestedNow = true;
        yield new Uint8Array([i]);
      }
    }
    const call = client.invoke({
      ...echo,
      method: "digest",
      methodParameters: { kind: "record", value: { fields: [inputStream.bytes(items())] } },
    });
    const started = await nextStart(transport);
    server = started.server;
    server.send(acceptanceOf(started.start, [inputMapping(1, provisionalRefOf(started.start))]));
    await server.waitFor(1 + 10);
    for (let i = 0; i < 20; i++) await tick();
    // Far inside the unacknowledged window, the source still waits for the connection.
    expect(pulled).toBe(10);
    expect(server.received).toHaveLength(1 + 10);
    server.drain();
    const end = await server.waitUntil((m: ClientMessage) => m.type === "inputStreamEnd");
    expect(end).toMatchObject({ sequence: 40n });
    expect(pulled).toBe(40);
    call.cancel();
  });

  // A sync source's items are taken without a promise each (`PullIterator.nextNow`): the same bounds hold.
  it.each([
    { kind: "a sync generator", wrap: (items: Iterable<string>) => items },
    {
      kind: "an async generator",
      wrap: (items: Iterable<string>) =>
        (async function* () {
          yield* items;
        })(),
    },
  ])("reads $kind of strings no further than the window and the connection allow, in order", async ({ wrap }) => {
    const { client, transport } = memoryClient({ maxUnackedInputBytes: 1000 });
    let pulled = 0;
    let server: Awaited<ReturnType<typeof nextStart>>["server"] | undefined;
    function* items() {
      for (let i = 0; i < 40; i++) {
        pulled++;
        // The connection fills up while the fourth item is being sent.
        if (i === 3 && server !== undefined) server.congestedNow = true;
        yield `item ${i}`;
      }
    }
    const call = client.invoke({
      ...echo,
      method: "tally",
      methodParameters: { kind: "record", value: { fields: [inputStream.strings(wrap(items()))] } },
    });
    const started = await nextStart(transport);
    server = started.server;
    server.send(acceptanceOf(started.start, [inputMapping(1, provisionalRefOf(started.start))]));
    await server.waitFor(1 + 4);
    for (let i = 0; i < 20; i++) await tick();
    expect(pulled).toBe(4); // congested: not read on
    server.drain();
    await server.waitFor(1 + 5);
    for (let i = 0; i < 20; i++) await tick();
    const sentItems = (): InputStreamItem[] => server!.received.filter((m): m is InputStreamItem => m.type === "inputStreamItem");
    const held = sentItems().length;
    expect(held).toBeGreaterThan(4);
    expect(held).toBeLessThan(40); // the window (1000 bytes) holds about ten of these
    expect(pulled).toBe(held);
    // Each ACK frees room for about as many items as it covers, until the end.
    while (!server.received.some((m) => m.type === "inputStreamEnd")) {
      const sent = sentItems().length;
      server.send({ type: "inputStreamAck", channel: 1, highestContiguousSequence: BigInt(sent), mappings: [], terminal: false });
      for (let i = 0; i < 20; i++) await tick();
      expect(pulled).toBeLessThanOrEqual(sent + held);
    }
    expect(server.received.find((m) => m.type === "inputStreamEnd")).toMatchObject({ sequence: 40n });
    expect(sentItems().map((m) => m.sequence)).toEqual(Array.from({ length: 40 }, (_, i) => BigInt(i)));
    call.cancel();
  });

  it("splits chunks into packed batches of at most 1 MiB and ends with the next sequence", async () => {
    const { client, transport } = memoryClient();
    const call = client.invoke({
      ...echo,
      method: "digest",
      methodParameters: { kind: "record", value: { fields: [inputStream.bytes([new Uint8Array(1024 * 1024 + 10)])] } },
    });
    const { server, start } = await nextStart(transport);
    server.send(acceptanceOf(start, [inputMapping(1, provisionalRefOf(start))]));
    const end = await server.waitUntil((m: ClientMessage) => m.type === "inputStreamEnd");
    const batches = server.received.filter((m): m is InputU8Batch => m.type === "input-u8");
    expect(batches.map((b) => [b.sequence, b.payload.byteLength])).toEqual([
      [0n, 1024 * 1024],
      [1048576n, 10],
    ]);
    expect(end).toMatchObject({ sequence: 1048586n });
    call.cancel();
  });

  it("tells the server source-unavailable when the source throws", async () => {
    async function* failing() {
      yield "a";
      throw new Error("disk gone");
    }
    const { call, server, failures } = await invokedWithInput("reverse", inputStream.strings(failing()));
    const cancel = await server.waitUntil((m: ClientMessage) => m.type === "streamCancel");
    expect(cancel).toMatchObject({ channel: 1, reason: "source-unavailable" });
    expect(server.received.filter((m) => m.type === "inputStreamItem")).toHaveLength(1);
    expect(failures).toHaveLength(1);
    call.cancel();
  });
});

/** `method` invoked with `input` as its one parameter and accepted, the input on channel 1; its input failures recorded. */
async function invokedWithInput(method: string, input: InputStream, options: Partial<ClientOptions> = {}) {
  const { client, transport } = memoryClient(options);
  const call = client.invoke({ ...echo, method, methodParameters: { kind: "record", value: { fields: [input] } } });
  const failures: unknown[] = [];
  call.on("inputFailed", (event) => failures.push(event.error));
  const { server, start } = await nextStart(transport);
  server.send(acceptanceOf(start, [inputMapping(1, provisionalRefOf(start))]));
  return { call, server, failures };
}

describe("binary items with a mimeType that is not one", () => {
  it("fail their input as the source's failure when taken: the item is never sent, nor kept for a resend", async () => {
    const items = [
      { bytes: Uint8Array.of(1), mimeType: "text/plain" },
      { bytes: Uint8Array.of(2), mimeType: "not a mime type" },
    ];
    const { call, server, failures } = await invokedWithInput("blobs", inputStream.binary(items));
    const cancel = await server.waitUntil((m: ClientMessage) => m.type === "streamCancel");
    expect(cancel).toMatchObject({ channel: 1, reason: "source-unavailable" });
    expect(failures).toEqual([expect.objectContaining({ kind: "invalid-argument", code: "invalid-message" })]);
    expect(server.received.filter((m) => m.type === "input-binary").map((m) => (m as { sequence: bigint }).sequence)).toEqual([0n]);
    call.cancel();
  });

  it("inputStream.binary refuses a default mimeType that is not one, and a Blob's parameters are left out of its item's", async () => {
    expect(() => inputStream.binary([], { mimeType: "text plain" })).toThrow(
      expect.objectContaining({ name: "ClientError", kind: "invalid-argument" }),
    );
    const items = readingBlobItems(pullFrom([new Blob([Uint8Array.of(7)], { type: "text/plain;charset=utf-8" })]));
    expect(await items.next()).toEqual({ done: false, value: { bytes: Uint8Array.of(7), mimeType: "text/plain" } });
  });
});

describe("an output stream read by next() calls not awaited one by one", () => {
  it("answers every call, in call order, and each settles once the stream ends", async () => {
    const { call, server } = await acceptedCount();
    server.send({ type: "invocationResult", mappings: [outputMapping(2)], result: streamResult() });
    const result = await call.result;
    if (result.kind !== "value") throw new Error("expected a value result");
    const reader = result.streams[0]![Symbol.asyncIterator]();
    // Three reads wait at once; two items and the end arrive.
    const reads = [reader.next(), reader.next(), reader.next()];
    server.send(u32Item(0));
    server.send(u32Item(1));
    server.send(okEnd(2));
    const answers = await Promise.all(reads);
    expect(answers.map((answer) => (answer.done ? "done" : (answer.value as { value: unknown }).value))).toEqual([0, 1, "done"]);
    server.send({ type: "invocationFinished", outcome: { kind: "success" } });
  });
});

describe("the unacknowledged window counts each kept item", () => {
  // Each item a turn of the event loop: a source that is never stopped then fails the test's timeout instead of blocking it.
  async function* forever(item: () => Uint8Array) {
    for (;;) {
      await tick();
      yield item();
    }
  }
  it.each([
    ["empty binary items", () => inputStream.binary(forever(() => new Uint8Array(0)))],
    ["1-byte u8 chunks", () => inputStream.bytes(forever(() => Uint8Array.of(1)))],
  ])("%s stop the source at the window though their bytes are far below it", async (_label, source) => {
    const { call, server } = await invokedWithInput("blobs", source(), { maxUnackedInputBytes: 64 * 1024 });
    // No acknowledgement comes: the source is read until the window is full, then no further.
    let sent = -1;
    while (sent !== server.received.length) {
      sent = server.received.length;
      for (let i = 0; i < 5; i++) await tick();
    }
    const items = server.received.filter((m) => m.type === "input-binary" || m.type === "input-u8").length;
    expect(items).toBeGreaterThan(0);
    expect(items).toBeLessThanOrEqual((64 * 1024) / 64 + 1);
    call.cancel();
  });
});

describe("backpressure and cancellation", () => {
  it("pauses reading when one stream's queue is full and resumes as the consumer drains", async () => {
    const { client, transport } = memoryClient({ maxQueuedEntriesPerStream: 8 });
    const call = client.invoke({ ...echo, method: "count", methodParameters: noParams });
    const { server, start } = await nextStart(transport);
    server.send(acceptanceOf(start));
    server.send({ type: "invocationResult", mappings: [outputMapping(2)], result: streamResult() });
    for (let i = 0; i < 20; i++) {
      server.send(u32Item(i));
    }
    expect(server.paused).toBe(true);
    expect(server.held).toBe(12);
    const result = await call.result;
    const values: unknown[] = [];
    for await (const item of result.kind === "value" ? result.streams[0]!.values() : []) {
      values.push(item);
      if (values.length === 20) break;
    }
    expect(values).toHaveLength(20);
    expect(server.held).toBe(0);
    // Leaving the loop dropped the stream.
    expect(server.received.at(-1)).toEqual({ type: "streamCancel", channel: 2, reason: "consumer-drop" });
  });

  it("sends cancel for an output stream and ends the iteration", async () => {
    const { client, transport } = memoryClient();
    const call = client.invoke({ ...echo, method: "count", methodParameters: noParams });
    const { server, start } = await nextStart(transport);
    server.send(acceptanceOf(start));
    server.send({ type: "invocationResult", mappings: [outputMapping(2)], result: streamResult() });
    const result = await call.result;
    const stream = result.kind === "value" ? result.streams[0]! : undefined;
    await stream!.cancel();
    expect(server.received.at(-1)).toEqual({ type: "streamCancel", channel: 2, reason: "cancelled" });
    server.send(u32Item(0));
    server.send({
      type: "outputStreamEnd",
      channel: 2,
      cursorToken: cursor("o", "end"),
      outcome: { kind: "cancelled", reason: "cancelled" },
      sequence: 1n,
    });
    expect(await stream![Symbol.asyncIterator]().next()).toEqual({ done: true, value: undefined });
    expect(await stream!.ended).toEqual({ kind: "cancelled", reason: "cancelled" });
    expect(call.state?.outputCursors).toEqual([cursor("o", "end")]);
  });
});

describe("a hostile server", () => {
  it("fails the invocation with invalid-channel when an item names an unmapped channel (protocol 8)", async () => {
    const { client, transport } = memoryClient();
    const call = client.invoke({ ...echo, method: "count", methodParameters: noParams });
    const { server, start } = await nextStart(transport);
    server.send(acceptanceOf(start));
    server.send(u32Item(0, 9));
    await expect(call.finished).rejects.toMatchObject({ kind: "server-violation", code: "invalid-channel" });
  });

  it("fails when an output stream skips a sequence", async () => {
    const { client, transport } = memoryClient();
    const call = client.invoke({ ...echo, method: "count", methodParameters: noParams });
    const { server, start } = await nextStart(transport);
    server.send(acceptanceOf(start));
    server.send({ type: "invocationResult", mappings: [outputMapping(2)], result: streamResult() });
    server.send(u32Item(1));
    await expect(call.finished).rejects.toMatchObject({ kind: "server-violation" });
  });

  it("fails when an acceptance names another attempt", async () => {
    const { client, transport } = memoryClient();
    const call = client.invoke({ ...echo, method: "count", methodParameters: noParams });
    const { server, start } = await nextStart(transport);
    server.send({
      type: "invocationAccepted",
      attemptId: "0dff1c71-f12f-4bb1-996c-23d693bdc825",
      idempotencyKey: start.idempotencyKey,
      mappings: [],
      sessionToken: SESSION,
    });
    await expect(call.finished).rejects.toMatchObject({ kind: "server-violation" });
  });
});

void STREAM_OUT;

describe("persistence callback", () => {
  it("stops feeding an input the server cancelled", async () => {
    const { client, transport } = memoryClient();
    let released = false;
    const source = {
      [Symbol.asyncIterator]: () => ({
        next: async () => {
          await tick();
          return { done: false as const, value: "x" };
        },
        return: async () => {
          released = true;
          return { done: true as const, value: undefined };
        },
      }),
    };
    const call = client.invoke({
      ...echo,
      method: "reverse",
      methodParameters: { kind: "record", value: { fields: [inputStream.strings(source)] } },
    });
    const { server, start } = await nextStart(transport);
    server.send(acceptanceOf(start, [inputMapping(1, provisionalRefOf(start))]));
    await server.waitFor(3);
    server.send({ type: "streamCancel", channel: 1, reason: "consumer-drop" });
    server.send({ type: "inputStreamAck", channel: 1, highestContiguousSequence: 2n, mappings: [], terminal: true });
    await vi.waitFor(() => expect(released).toBe(true));
    // No terminal of our own follows the server's cancellation.
    expect(server.received.filter((m) => m.type === "inputStreamEnd" || m.type === "streamCancel")).toEqual([]);
    call.cancel();
  });
});

describe("nested input streams", () => {
  it("maps a stream inside an input item through the item's ACK, then feeds it", async () => {
    const { client, transport } = memoryClient();
    const inner = inputStream.strings(["deep"]);
    const outer = inputStream.values([{ kind: "record", value: { fields: [{ kind: "string", value: "g" }, inner] } }]);
    const call = client.invoke({ ...echo, method: "nested", methodParameters: { kind: "record", value: { fields: [outer] } } });
    const { server, start } = await nextStart(transport);
    server.send(acceptanceOf(start, [inputMapping(1, provisionalRefOf(start))]));
    const item = await server.waitUntil((m: ClientMessage) => m.type === "inputStreamItem");
    const innerRef = /"provisionalRef":"([0-9a-f-]{36})"/.exec(JSON.stringify(item.type === "inputStreamItem" ? item.value : null))![1]!;
    // The nested stream has no channel until its mapping arrives with this ACK.
    server.send({
      type: "inputStreamAck",
      channel: 1,
      highestContiguousSequence: 1n,
      mappings: [inputMapping(5, innerRef, 0n, false, "stream-token-inner")],
      terminal: false,
    });
    const nested = await server.waitUntil((m: ClientMessage) => m.type === "inputStreamItem" && m.channel === 5);
    expect(nested).toMatchObject({ sequence: 0n, value: { kind: "string", value: "deep" } });
    call.cancel();
  });

  it("sends the cancellations of invocation.cancel() before closing", async () => {
    const { client, transport } = memoryClient();
    const call = client.invoke({ ...echo, method: "count", methodParameters: noParams });
    const { server, start } = await nextStart(transport);
    server.send(acceptanceOf(start));
    server.send({ type: "invocationResult", mappings: [outputMapping(2)], result: streamResult() });
    await call.result;
    call.cancel();
    expect(server.received.at(-1)).toEqual({ type: "streamCancel", channel: 2, reason: "cancelled" });
    expect(server.closed).toBe(true);
    await expect(call.finished).rejects.toMatchObject({ kind: "aborted" });
  });
});

describe("cancelling the whole invocation", () => {
  it("every consumer's next() throws aborted, queued items are released, and the item held counts as delivered only when its consumer comes back", async () => {
    const { call, server } = await acceptedCount();
    server.send({ type: "invocationResult", mappings: [outputMapping(2)], result: streamResult() });
    for (let i = 0; i < 4; i++) {
      server.send(u32Item(i));
    }
    const result = await call.result;
    const stream = result.kind === "value" ? result.streams[0]! : undefined;
    const iterator = stream![Symbol.asyncIterator]();
    await iterator.next();
    await iterator.next(); // item 0 delivered, item 1 held, items 2 and 3 queued
    call.cancel();
    expect(server.received.filter((m) => m.type === "streamCancel")).toEqual([{ type: "streamCancel", channel: 2, reason: "cancelled" }]);
    expect(stream!.queuedEntries).toBe(0);
    expect(call.state?.outputCursors).toEqual([cursor("o", 0)]);
    // A loop over the stream must not end as if the stream were complete.
    await expect(iterator.next()).rejects.toMatchObject({ kind: "aborted" });
    expect(call.state?.outputCursors).toEqual([cursor("o", 1)]);
    expect(await stream!.ended).toMatchObject({ kind: "detached", error: { kind: "aborted" } });
    await expect(call.finished).rejects.toMatchObject({ kind: "aborted" });
  });
});

describe("bounded state under a hostile server", () => {
  it("refuses to track more streams than a session may have", async () => {
    // A deep queue, so the parent items (which announce the streams) are all read.
    const { client, transport } = memoryClient({ maxQueuedEntriesPerStream: 10_000 });
    const call = client.invoke({ ...echo, method: "count", methodParameters: noParams });
    const { server, start } = await nextStart(transport);
    server.send(acceptanceOf(start));
    const streamOfStreams = { kind: "stream", value: { inner: { kind: "stream", value: { inner: { kind: "u32", value: {} } } } } };
    server.send({
      type: "invocationResult",
      mappings: [outputMapping(1)],
      result: { ...streamResult(), graph: { root: streamOfStreams } },
    });
    for (let i = 0; i < 4100 && !server.closed; i++) {
      const token = `nested-${i}`;
      server.send({
        type: "outputStreamItem",
        channel: 1,
        cursorToken: cursor("o", i),
        mappings: [outputMapping(i + 2, token)],
        sequence: BigInt(i),
        value: { kind: "stream", value: { streamToken: token } },
      });
    }
    await expect(call.finished).rejects.toMatchObject({
      kind: "server-violation",
      code: "limit-exceeded",
      message: expect.stringContaining("4096 streams"),
    });
    expect(call.streams.length).toBeLessThanOrEqual(4096);
  });
});

describe("schema validation of server values", () => {
  async function started(inner = "u32") {
    const { client, transport } = memoryClient();
    const call = client.invoke({ ...echo, method: "count", methodParameters: noParams });
    const { server, start } = await nextStart(transport);
    server.send(acceptanceOf(start));
    server.send({ type: "invocationResult", mappings: [outputMapping(2)], result: streamResult(STREAM_OUT, inner) });
    return { call, server };
  }

  it("rejects an item that does not match the element schema", async () => {
    const { call, server } = await started("u32");
    server.send({
      type: "outputStreamItem",
      channel: 2,
      cursorToken: cursor("o", 0),
      mappings: [],
      sequence: 0n,
      value: { kind: "string", value: "no" },
    });
    await expect(call.finished).rejects.toMatchObject({ kind: "server-violation", code: "validation-error" });
  });

  it("rejects a binary message on a stream of JSON items, and a text item on a stream<u8>", async () => {
    const first = await started("u32");
    first.server.send({ type: "output-u8", channel: 2, cursorToken: cursor("o", 0), sequence: 0n, payload: new Uint8Array([1]) });
    await expect(first.call.finished).rejects.toMatchObject({ kind: "server-violation" });
    const second = await started("u8");
    second.server.send({
      type: "outputStreamItem",
      channel: 2,
      cursorToken: cursor("o", 0),
      mappings: [],
      sequence: 0n,
      value: { kind: "u8", value: 1 },
    });
    await expect(second.call.finished).rejects.toMatchObject({ kind: "server-violation" });
  });

  it("rejects a result whose value does not match its own graph", async () => {
    const { client, transport } = memoryClient();
    const call = client.invoke({ ...echo, method: "count", methodParameters: noParams });
    const { server, start } = await nextStart(transport);
    server.send(acceptanceOf(start));
    server.send({
      type: "invocationResult",
      mappings: [],
      result: { kind: "value", graph: { root: { kind: "bool", value: {} } }, value: { kind: "u32", value: 1 } },
    });
    await expect(call.finished).rejects.toMatchObject({ kind: "server-violation" });
  });

  it("converts items to JavaScript with js()", async () => {
    const { call, server } = await started("u64");
    server.send({
      type: "outputStreamItem",
      channel: 2,
      cursorToken: cursor("o", 0),
      mappings: [],
      sequence: 0n,
      value: { kind: "u64", value: "18446744073709551615" },
    });
    server.send({ type: "outputStreamEnd", channel: 2, cursorToken: cursor("o", 1), outcome: { kind: "ok" }, sequence: 1n });
    const result = await call.result;
    const items: unknown[] = [];
    for await (const item of result.kind === "value" ? result.streams[0]!.js() : []) items.push(item);
    expect(items).toEqual([18446744073709551615n]);
  });
});

describe("resume state", () => {
  it("carries the frozen resume while it is in flight, and a takeover retries it exactly", async () => {
    const { transport, states, call, server, start } = await acceptedCount();
    server.drop();
    const again = await transport.nextConnection();
    const resume = (await again.waitUntil(isResume)) as ResumeAttach;
    expect(states.at(-1)?.pendingOperation).toEqual(resume);
    // The process dies here; a new one continues from the last checkpoint.
    const saved = call.detach()!;
    expect(saved.pendingOperation).toEqual(resume);

    const { client: next, transport: nextTransport } = memoryClient();
    const taken = next.takeover(saved);
    const third = await nextTransport.nextConnection();
    expect(await third.waitUntil(isResume)).toEqual(resume);
    third.send(acceptanceOf(start, [], { attemptId: resume.attemptId, sessionToken: "session-token-3" }));
    await taken.accepted;
    expect(taken.state?.pendingOperation).toBeUndefined();
    expect(taken.state?.sessionToken).toBe("session-token-3");
    taken.cancel();
  });

  it.each([
    ["inputs it has no source for (source-unavailable)", inputMapping(4, undefined, 10n)],
    [
      "an unused nested input the acceptance names by another process's provisional reference",
      inputMapping(6, "6f1c1f0e-2a4b-4c7d-9e8f-0a1b2c3d4e5f", 0n),
    ],
  ])("a takeover cancels %s", async (_, mapping) => {
    const { client, transport } = memoryClient();
    const state: ResumeState = { sessionToken: SESSION, outputCursors: [], selector: { ...echo, method: "digest" }, idempotencyKey: "k" };
    const call = client.takeover(state);
    const server = await transport.nextConnection();
    const takeover = (await server.waitUntil(isResume)) as ResumeAttach;
    expect(takeover).toMatchObject({ operation: "takeover", sessionToken: SESSION, outputCursors: [] });
    server.send({
      type: "invocationAccepted",
      attemptId: takeover.attemptId,
      idempotencyKey: "k",
      mappings: [mapping],
      sessionToken: SESSION,
    });
    expect(await server.waitUntil((m: ClientMessage) => m.type === "streamCancel")).toEqual({
      type: "streamCancel",
      channel: mapping.channel,
      reason: "source-unavailable",
    });
    call.cancel();
  });
});

describe("output stream views", () => {
  it("reads through a Web ReadableStream with the same cursor rule, and allows one consumer only", async () => {
    const { states, call, server } = await acceptedCount();
    server.send({ type: "invocationResult", mappings: [outputMapping(2)], result: streamResult() });
    for (let i = 0; i < 2; i++) {
      server.send(u32Item(i));
    }
    server.send(okEnd(2));
    const result = await call.result;
    const stream = result.kind === "value" ? result.streams[0]! : undefined;
    const reader = stream!.readable().getReader();
    expect(() => stream![Symbol.asyncIterator]()).toThrow(expect.objectContaining({ kind: "invalid-argument" }));
    expect((await reader.read()).value).toEqual({ kind: "u32", value: 0 });
    expect(states.at(-1)?.outputCursors).toEqual([]);
    expect((await reader.read()).value).toEqual({ kind: "u32", value: 1 });
    expect(states.at(-1)?.outputCursors).toEqual([cursor("o", 0)]);
    expect((await reader.read()).done).toBe(true);
    // The reader has the end first; its cursor is retained in the turn after (protocol 6.5).
    expect(states.at(-1)?.outputCursors).toEqual([cursor("o", 1)]);
    await tick();
    expect(states.at(-1)?.outputCursors).toEqual([cursor("o", "end")]);
  });
});
