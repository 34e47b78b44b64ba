/**
 * A server that breaks the protocol on one connection, message by message
 * (the in-memory server of `support/memory-transport.ts`, through the real
 * wire codecs): each case is a server violation that fails the invocation
 * (docs/protocol/client.md §16), where the client used to accept it — at the
 * cost of memory for the first two.
 */
import { describe, expect, it } from "vitest";
import type { ClientMessage, InvocationStart, OutputStreamItem, ResumeAttach } from "@golem-stream/wire";
import { inputStream, type OutputStream, type ResumeState } from "../src/index.js";
import {
  SESSION,
  STREAM_IN,
  acceptanceOf,
  echo,
  inputMapping,
  isResume,
  layoutStream,
  memoryClient,
  nextStart,
  noParams,
  okEnd,
  outputMapping,
  provisionalRefOf,
  streamResult,
  u32Item,
} from "./support/fixtures.js";

const isItem = (m: ClientMessage): boolean => m.type === "input-u8";

describe("a stream mapped twice on one connection (decisions §8: announced once per connection)", () => {
  it("an ACK that maps an input again is invalid-channel: the unacknowledged window is not sent again", async () => {
    const { client, transport } = memoryClient();
    const chunks = [new Uint8Array(1000).fill(1), new Uint8Array(1000).fill(2)];
    const call = client.invoke({
      ...echo,
      method: "digest",
      methodParameters: { kind: "record", value: { fields: [inputStream.bytes(chunks)] } },
    });
    const { server, start } = await nextStart(transport);
    server.send(acceptanceOf(start, [inputMapping(1, provisionalRefOf(start))]));
    await server.waitUntil((m) => m.type === "inputStreamEnd");
    server.send({
      type: "inputStreamAck",
      channel: 1,
      highestContiguousSequence: 0n,
      mappings: [inputMapping(100, undefined, 0n, false, STREAM_IN)],
      terminal: false,
    });
    await expect(call.finished).rejects.toMatchObject({ kind: "server-violation", code: "invalid-channel" });
    // Before, every such ACK resent the whole unacknowledged window on the new channel.
    expect(server.received.filter((m) => isItem(m) && "channel" in m && m.channel === 100)).toEqual([]);
    expect(server.received.filter(isItem)).toHaveLength(2);
  });

  it("an item that maps an output again is invalid-channel: the channel table does not grow", async () => {
    const { client, transport } = memoryClient();
    const call = client.invoke({ ...echo, method: "count", methodParameters: noParams });
    const { server, start } = await nextStart(transport);
    server.send(acceptanceOf(start));
    server.send({ type: "invocationResult", mappings: [outputMapping(2)], result: streamResult() });
    server.send(u32Item(0));
    // A replay of item 0 (dropped, never queued) carrying a second mapping of the same stream.
    server.send({ ...u32Item(0), mappings: [outputMapping(7)] });
    await expect(call.finished).rejects.toMatchObject({ kind: "server-violation", code: "invalid-channel" });
  });
});

describe("after a takeover, a stream resumes where this process can know it must", () => {
  const a = layoutStream(0xaa);
  const b = layoutStream(0xbb);
  const u32Stream = { kind: "stream", value: { inner: { kind: "u32", value: {} } } };
  const pair = {
    kind: "value" as const,
    graph: {
      root: {
        kind: "record",
        value: {
          fields: [
            { name: "a", body: u32Stream },
            { name: "b", body: u32Stream },
          ],
        },
      },
    },
    value: { kind: "record", value: { fields: [a.token, b.token].map((streamToken) => ({ kind: "stream", value: { streamToken } })) } },
  };
  const item = (channel: number, position: number): OutputStreamItem => ({
    type: "outputStreamItem",
    channel,
    cursorToken: `c-${channel}-${position}`,
    mappings: [],
    sequence: BigInt(position),
    value: { kind: "u32", value: position },
  });

  /** A takeover of state holding stream a's cursor at item 4 (b has none); b is mapped first, while a's cursor is unpaired. */
  async function takenOver() {
    const { client, transport } = memoryClient();
    const state: ResumeState = {
      sessionToken: SESSION,
      outputCursors: [a.cursor(4, "item")],
      selector: { ...echo, method: "pair" },
      idempotencyKey: "k",
    };
    const call = client.takeover(state);
    const server = await transport.nextConnection();
    const takeover = (await server.waitUntil(isResume)) as ResumeAttach;
    server.send({
      ...acceptanceOf({ attemptId: takeover.attemptId, idempotencyKey: "k" } as InvocationStart),
      mappings: [outputMapping(3, b.token), outputMapping(2, a.token)],
    });
    server.send({ type: "invocationResult", mappings: [], result: pair });
    return { call, server };
  }

  it("a stream whose cursor names item 4 may resume at item 5, not beyond", async () => {
    const { call, server } = await takenOver();
    server.send(item(2, 9));
    await expect(call.finished).rejects.toMatchObject({ kind: "server-violation", code: "protocol-error" });
  });

  it("a stream without a cursor starts at item 0, also while another stream's cursor is unpaired", async () => {
    const { call, server } = await takenOver();
    server.send(item(3, 7));
    await expect(call.finished).rejects.toMatchObject({ kind: "server-violation", code: "protocol-error" });
  });

  it("a stream whose cursor names item 4 may not end at once with fewer or more items than 5", async () => {
    const { call, server } = await takenOver();
    server.send({ type: "outputStreamEnd", channel: 2, cursorToken: a.cursor(7, "terminal"), outcome: { kind: "ok" }, sequence: 7n });
    await expect(call.finished).rejects.toMatchObject({ kind: "server-violation", code: "protocol-error" });
  });

  it("resuming right after the delivered item, and from 0, is what it accepts", async () => {
    const { call, server } = await takenOver();
    const result = await call.result;
    const [first, second] = result.kind === "value" ? result.streams : [];
    server.send(item(2, 5));
    server.send({ type: "outputStreamEnd", channel: 2, cursorToken: a.cursor(6, "terminal"), outcome: { kind: "ok" }, sequence: 6n });
    server.send(item(3, 0));
    server.send({ type: "outputStreamEnd", channel: 3, cursorToken: b.cursor(1, "terminal"), outcome: { kind: "ok" }, sequence: 1n });
    server.send({ type: "invocationFinished", outcome: { kind: "success" } });
    const read = async (stream: OutputStream | undefined) => {
      const values: unknown[] = [];
      for await (const value of stream!.values()) values.push((value as { value: unknown }).value);
      return values;
    };
    expect(await read(first)).toEqual([5]);
    expect(await read(second)).toEqual([0]);
    await expect(call.finished).resolves.toEqual({ kind: "success" });
  });
});

describe("a terminal input ACK counts what the input's own end counted", () => {
  async function ended() {
    const { client, transport } = memoryClient();
    const input = inputStream.strings(["a", "b", "c"]);
    const call = client.invoke({ ...echo, method: "reverse", methodParameters: { kind: "record", value: { fields: [input] } } });
    const { server, start } = await nextStart(transport);
    server.send(acceptanceOf(start, [inputMapping(1, provisionalRefOf(start))]));
    const end = await server.waitUntil((m) => m.type === "inputStreamEnd");
    expect(end).toMatchObject({ sequence: 3n });
    return { call, server, start, transport };
  }

  it("on one connection, fewer items without the server's cancel is a violation", async () => {
    const { call, server } = await ended();
    server.send({ type: "inputStreamAck", channel: 1, highestContiguousSequence: 1n, mappings: [], terminal: true });
    server.send({ type: "invocationResult", mappings: [], result: { kind: "none" } });
    server.send({ type: "invocationFinished", outcome: { kind: "success" } });
    await expect(call.finished).rejects.toMatchObject({ kind: "server-violation", code: "protocol-error" });
  });

  it("a terminal for an input that has not ended, without the server's cancel, is a violation", async () => {
    const { client, transport } = memoryClient();
    const input = inputStream.strings(new ReadableStream<string>({ start: (controller) => controller.enqueue("a") }));
    const call = client.invoke({ ...echo, method: "reverse", methodParameters: { kind: "record", value: { fields: [input] } } });
    const { server, start } = await nextStart(transport);
    server.send(acceptanceOf(start, [inputMapping(1, provisionalRefOf(start))]));
    await server.waitUntil((m) => m.type === "inputStreamItem");
    server.send({ type: "inputStreamAck", channel: 1, highestContiguousSequence: 1n, mappings: [], terminal: true });
    await expect(call.finished).rejects.toMatchObject({ kind: "server-violation", code: "protocol-error" });
  });

  it("after the server's streamCancel (an agent that stopped reading), fewer items are its terminal", async () => {
    const { call, server } = await ended();
    server.send({ type: "streamCancel", channel: 1, reason: "consumer-drop" });
    server.send({ type: "inputStreamAck", channel: 1, highestContiguousSequence: 1n, mappings: [], terminal: true });
    server.send({ type: "invocationResult", mappings: [], result: { kind: "none" } });
    server.send({ type: "invocationFinished", outcome: { kind: "success" } });
    await expect(call.finished).resolves.toEqual({ kind: "success" });
  });

  it("after a reconnect, the acceptance's durable terminal is taken as it is: the server's cancel may have been lost", async () => {
    const { call, server, start, transport } = await ended();
    server.drop();
    const again = await transport.nextConnection();
    const resume = (await again.waitUntil(isResume)) as ResumeAttach;
    again.send(acceptanceOf(start, [inputMapping(4, undefined, 1n, true)], { attemptId: resume.attemptId }));
    again.send({ type: "invocationResult", mappings: [], result: { kind: "none" } });
    again.send({ type: "invocationFinished", outcome: { kind: "success" } });
    await expect(call.finished).resolves.toEqual({ kind: "success" });
  });
});

describe("on one connection, what a replay may repeat only on a new one", () => {
  async function counting() {
    const { client, transport } = memoryClient();
    const call = client.invoke({ ...echo, method: "count", methodParameters: noParams });
    const { server, start } = await nextStart(transport);
    server.send(acceptanceOf(start));
    server.send({ type: "invocationResult", mappings: [outputMapping(2)], result: streamResult() });
    server.send(u32Item(0));
    server.send(u32Item(1));
    return { call, server, start, transport };
  }
  const violation = { kind: "server-violation", code: "protocol-error" };

  it("an item again, or one going back, is a violation", async () => {
    const { call, server } = await counting();
    server.send({ ...u32Item(0), value: { kind: "u32", value: 999 } });
    await expect(call.finished).rejects.toMatchObject(violation);
  });

  it("an item after the stream's terminal is a violation", async () => {
    const { call, server } = await counting();
    server.send(okEnd(2));
    server.send(u32Item(2));
    await expect(call.finished).rejects.toMatchObject(violation);
  });

  it("a second terminal is a violation", async () => {
    const { call, server } = await counting();
    server.send(okEnd(2));
    server.send({ ...okEnd(2), outcome: { kind: "error", code: "producer-error", message: "x" } });
    await expect(call.finished).rejects.toMatchObject(violation);
  });

  it("a second invocationResult is a violation, before its mappings are installed", async () => {
    const { call, server } = await counting();
    server.send({ type: "invocationResult", mappings: [outputMapping(9, "another-stream")], result: { kind: "none" } });
    await expect(call.finished).rejects.toMatchObject(violation);
  });

  it("a rejection after acceptance must name the accepted attempt (protocol 6.2)", async () => {
    const { call, server } = await counting();
    server.send({
      type: "invocationRejected",
      attemptId: "0dff1c71-f12f-4bb1-996c-23d693bdc825",
      code: "input-gap",
      message: "gap",
      retryable: true,
    });
    await expect(call.finished).rejects.toMatchObject(violation);
  });

  it("on a new connection the same replay is dropped: the items, the terminal and the result come again", async () => {
    const { call, server, start, transport } = await counting();
    server.send(okEnd(2));
    const result = await call.result;
    const stream = result.kind === "value" ? result.streams[0]! : undefined;
    const iterator = stream![Symbol.asyncIterator]();
    expect((await iterator.next()).value).toEqual({ kind: "u32", value: 0 });
    server.drop();
    const again = await transport.nextConnection();
    const resume = (await again.waitUntil(isResume)) as ResumeAttach;
    again.send(acceptanceOf(start, [], { attemptId: resume.attemptId }));
    again.send({ type: "invocationResult", mappings: [outputMapping(4)], result: streamResult() });
    again.send(u32Item(0, 4));
    again.send(u32Item(1, 4));
    again.send(okEnd(2, 4));
    again.send({ type: "invocationFinished", outcome: { kind: "success" } });
    expect((await iterator.next()).value).toEqual({ kind: "u32", value: 1 });
    expect((await iterator.next()).done).toBe(true);
    await expect(call.finished).resolves.toEqual({ kind: "success" });
  });
});
