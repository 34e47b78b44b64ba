/**
 * A server that breaks the protocol on one connection, message by message
 * (the in-memory server of `support/memory-transport.ts`, through the real
 * wire codecs): each case is a server violation that fails the invocation
 * (docs/protocol/client.md §16), where the client used to accept it — at the
 * cost of memory for the first two.
 */
import { describe, expect, it } from "vitest";
import type { ClientMessage } from "@golem-stream/wire";
import { inputStream } from "../src/index.js";
import {
  STREAM_IN,
  acceptanceOf,
  echo,
  inputMapping,
  memoryClient,
  nextStart,
  noParams,
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
