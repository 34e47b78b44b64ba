/** Every demo method (decisions-v1 section 7, `tally` and `journal`), end to end over a real WebSocket. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHash, randomUUID } from "node:crypto";
import type { ServerMessage } from "@golem-stream/wire";
import { demoBlob } from "../src/demo/index.js";
import { RawClient, demoStart, outputValues, startTestServer, v, type TestServer } from "./helpers.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.dispose();
});

function resultOf(messages: readonly ServerMessage[]) {
  const result = messages.find((m) => m.type === "invocationResult");
  if (result?.type !== "invocationResult") throw new Error("no invocationResult");
  return result;
}

function bytesOf(messages: readonly ServerMessage[], channel: number): Uint8Array {
  const parts = messages.flatMap((m) => (m.type === "output-u8" && m.channel === channel ? [m.payload] : []));
  return Buffer.concat(parts);
}

describe("demo methods", () => {
  it("digest: packed u8 input, record result with u64 byte count and SHA-256", async () => {
    const client = await RawClient.connect(server.url);
    const ref = randomUUID();
    client.send(demoStart("digest", v.record(v.stream(ref))));
    const accepted = await client.nextOf("invocationAccepted");
    const channel = accepted.mappings[0]!.channel;
    const first = new TextEncoder().encode("hello ");
    const second = new TextEncoder().encode("world");
    client.send({ type: "input-u8", channel, sequence: 0n, payload: first });
    client.send({ type: "input-u8", channel, sequence: 6n, payload: second });
    client.send({ type: "inputStreamEnd", channel, sequence: 11n });
    const { messages, closed } = await client.all();
    expect(closed.code).toBe(1000);
    const expected = createHash("sha256").update("hello world").digest("hex");
    expect(resultOf(messages).result).toEqual({
      kind: "value",
      graph: {
        root: {
          kind: "record",
          value: {
            fields: [
              { name: "bytes", body: { kind: "u64", value: {} } },
              { name: "sha256", body: { kind: "string", value: {} } },
            ],
          },
        },
      },
      value: {
        kind: "record",
        value: {
          fields: [
            { kind: "u64", value: "11" },
            { kind: "string", value: expected },
          ],
        },
      },
    });
    expect(messages.filter((m) => m.type === "inputStreamAck").at(-1)).toMatchObject({ highestContiguousSequence: 11n, terminal: true });
  });

  it("tally: a one-way string sink; counts items and sums their UTF-8 bytes, sends nothing before the result", async () => {
    const client = await RawClient.connect(server.url);
    client.send(demoStart("tally", v.record(v.stream(randomUUID()))));
    const accepted = await client.nextOf("invocationAccepted");
    expect(accepted.mappings).toHaveLength(1);
    const channel = accepted.mappings[0]!.channel;
    // "é" is 2 UTF-8 bytes and "😀" 4, so a count of UTF-16 units (or of scalars) would differ.
    const items = ["abc", "", "é", "h😀i"];
    items.forEach((text, i) => client.send({ type: "inputStreamItem", channel, sequence: BigInt(i), value: v.str(text) }));
    client.send({ type: "inputStreamEnd", channel, sequence: BigInt(items.length) });
    const { messages, closed } = await client.all();
    expect(closed.code).toBe(1000);
    expect(messages.filter((m) => m.type.startsWith("output"))).toEqual([]);
    expect(resultOf(messages).result).toEqual({
      kind: "value",
      graph: {
        root: {
          kind: "record",
          value: {
            fields: [
              { name: "items", body: { kind: "u64", value: {} } },
              { name: "bytes", body: { kind: "u64", value: {} } },
            ],
          },
        },
      },
      value: {
        kind: "record",
        value: {
          fields: [
            { kind: "u64", value: "4" },
            { kind: "u64", value: "11" },
          ],
        },
      },
    });
    expect(messages.filter((m) => m.type === "inputStreamAck").at(-1)).toMatchObject({ highestContiguousSequence: 4n, terminal: true });
    expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
  });

  it("blobs: binary output items, deterministic content, one item per message", async () => {
    const client = await RawClient.connect(server.url);
    client.send(demoStart("blobs", v.record(v.u32(3), v.u32(1000))));
    const { messages } = await client.all();
    const channel = resultOf(messages).mappings[0]!.channel;
    const blobs = messages.flatMap((m) => (m.type === "output-binary" && m.channel === channel ? [m] : []));
    expect(blobs.map((b) => b.sequence)).toEqual([0n, 1n, 2n]);
    blobs.forEach((blob, i) => {
      expect(blob.payload).toEqual(demoBlob(i, 1000));
      expect(blob.mimeType).toBe("application/octet-stream");
    });
    expect(messages.find((m) => m.type === "outputStreamEnd")).toMatchObject({ sequence: 3n, outcome: { kind: "ok" } });
  });

  it("split: one u8 input feeds an output-u8 stream and a string stream exposed by the result", async () => {
    const client = await RawClient.connect(server.url);
    const ref = randomUUID();
    client.send(demoStart("split", v.record(v.stream(ref))));
    const accepted = await client.nextOf("invocationAccepted");
    const channel = accepted.mappings[0]!.channel;
    client.send({ type: "input-u8", channel, sequence: 0n, payload: new TextEncoder().encode("ab\ncd\ne") });
    client.send({ type: "inputStreamEnd", channel, sequence: 7n });
    const { messages, closed } = await client.all();
    expect(closed.code).toBe(1000);
    const result = resultOf(messages);
    expect(result.mappings.map((m) => m.direction)).toEqual(["output", "output"]);
    const [upper, lines] = result.mappings;
    expect(new TextDecoder().decode(bytesOf(messages, upper!.channel))).toBe("AB\nCD\nE");
    expect(outputValues(messages, lines!.channel)).toEqual([v.str("ab"), v.str("cd"), v.str("e")]);
    // Every declared output terminal precedes invocationFinished.
    const ends = messages.filter((m) => m.type === "outputStreamEnd");
    expect(ends).toHaveLength(2);
    expect(messages.at(-1)?.type).toBe("invocationFinished");
  });

  it("groups: nested output streams are announced in the item that exposes them, before use", async () => {
    const client = await RawClient.connect(server.url);
    client.send(demoStart("groups", v.record(v.u32(2), v.u32(3))));
    const { messages, closed } = await client.all();
    expect(closed.code).toBe(1000);
    const outer = resultOf(messages).mappings[0]!.channel;
    const groupItems = messages.flatMap((m) => (m.type === "outputStreamItem" && m.channel === outer ? [m] : []));
    expect(groupItems).toHaveLength(2);
    const announcedAt = new Map<number, number>();
    messages.forEach((m, index) => {
      if ("mappings" in m) for (const mapping of m.mappings) announcedAt.set(mapping.channel, index);
    });
    for (const item of groupItems) {
      expect(item.mappings).toHaveLength(1);
      const inner = item.mappings[0]!.channel;
      expect(outputValues(messages, inner)).toEqual([v.u32(0), v.u32(1), v.u32(2)]);
      const firstUse = messages.findIndex((m) => m.type === "outputStreamItem" && m.channel === inner);
      expect(firstUse).toBeGreaterThan(announcedAt.get(inner)!);
      // The item's value carries the stream token the mapping binds.
      expect(JSON.stringify(item.value)).toContain(item.mappings[0]!.streamToken);
    }
    // 1 outer + 2 inner terminals, all before invocationFinished.
    expect(messages.filter((m) => m.type === "outputStreamEnd")).toHaveLength(3);
  });

  it("fail: the stream ends with producer-error after `after` items; the invocation still succeeds", async () => {
    const client = await RawClient.connect(server.url);
    client.send(demoStart("fail", v.record(v.u32(2))));
    const { messages } = await client.all();
    const channel = resultOf(messages).mappings[0]!.channel;
    expect(outputValues(messages, channel)).toEqual([v.u32(0), v.u32(1)]);
    const end = messages.find((m) => m.type === "outputStreamEnd");
    expect(end).toMatchObject({ channel, sequence: 2n, outcome: { kind: "error", code: "producer-error", message: "producer failed" } });
    expect(messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
  });

  it("journal: every item repeats one step result (a UUID), one time and one random number, journaled before the first item", async () => {
    const client = await RawClient.connect(server.url);
    const before = Date.now();
    client.send(demoStart("journal", v.record(v.u32(3), v.u32(0))));
    const { messages } = await client.all();
    const channel = resultOf(messages).mappings[0]!.channel;
    const items = outputValues(messages, channel).map(
      (item) => (item.value as unknown as { fields: { kind: string; value: unknown }[] }).fields,
    );
    expect(items.map((fields) => fields[0])).toEqual([v.u32(0), v.u32(1), v.u32(2)]);
    const [step, now, random] = items[0]!.slice(1);
    expect(step).toMatchObject({
      kind: "string",
      value: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
    });
    expect(now?.kind).toBe("u64");
    expect(BigInt(now!.value as string)).toBeGreaterThanOrEqual(BigInt(before));
    expect(random).toMatchObject({ kind: "f64", value: expect.any(Number) });
    expect(random!.value).toBeGreaterThanOrEqual(0);
    expect(random!.value).toBeLessThan(1);
    for (const fields of items) expect(fields.slice(1)).toEqual([step, now, random]);
    expect(messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
  });

  it("every item and terminal carries a distinct cursor token", async () => {
    const client = await RawClient.connect(server.url);
    client.send(demoStart("count", v.record(v.u32(4), v.u32(0))));
    const { messages } = await client.all();
    const cursors = messages.flatMap((m) => ("cursorToken" in m && m.cursorToken !== undefined ? [m.cursorToken] : []));
    expect(cursors).toHaveLength(5);
    expect(new Set(cursors).size).toBe(5);
    expect(cursors.every((c) => c.startsWith("gai1_"))).toBe(true);
  });
});
