/**
 * The client against the real server on loopback, over real WebSockets:
 * every demo method, large byte streams with SHA-256 on both sides, nested
 * streams, cancellation, and takeover from saved state in a second client.
 */
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SchemaValueJson } from "@golem-stream/wire";
import { ClientError, createClient, inputStream, type Client, type OutputStream, type ResumeState } from "../src/index.js";
import { demo, collect, fieldsOf, firstStream, randomChunks, record, sha256, u32 } from "./support/demo.js";
import { startServer, TOKEN } from "./support/embedded.js";

let server: Awaited<ReturnType<typeof startServer>>;
let client: Client;

beforeAll(async () => {
  server = await startServer();
  client = createClient({ url: server.url, token: TOKEN, reconnect: { maxAttempts: 3 } });
});
afterAll(async () => server.dispose());

const strings = (items: readonly SchemaValueJson[]): unknown[] => items.map((item) => item.value);

describe("demo methods", () => {
  it("reverse: a stream<string> in, the reversed stream out", async () => {
    const input = ["abc", "héllo", "😀x", ""];
    const call = client.invoke({ ...demo, method: "reverse", methodParameters: record(inputStream.strings(input)) });
    const items = await collect((await firstStream(call)).values());
    expect(strings(items)).toEqual(["cba", "olléh", "x😀", ""]);
    expect(await call.finished).toEqual({ kind: "success" });
  });

  it("digest: 24 MiB of stream<u8> in random chunks, SHA-256 equal on both sides", async () => {
    const { chunks, all } = randomChunks(24 * 1024 * 1024, 3 * 1024 * 1024);
    const call = client.invoke({ ...demo, method: "digest", methodParameters: record(inputStream.bytes(chunks)) });
    const result = await call.result;
    if (result.kind !== "value") throw new Error("expected a value");
    const [bytes, hash] = fieldsOf(result.value);
    expect(bytes?.value).toBe(String(all.length));
    expect(hash?.value).toBe(sha256(all));
    // The same result, schema-directed, as plain JavaScript.
    expect(result.js()).toEqual({ bytes: BigInt(all.length), sha256: sha256(all) });
    await call.finished;
  });

  it.each([
    ["a Node Readable", (chunks: Uint8Array[]) => Readable.from(chunks)],
    ["a Web ReadableStream", (chunks: Uint8Array[]) => ReadableStream.from(chunks)],
    ["a sync iterable", (chunks: Uint8Array[]) => chunks],
  ])("digest reads %s", async (_label, make) => {
    const { chunks, all } = randomChunks(2 * 1024 * 1024, 100_000);
    const call = client.invoke({ ...demo, method: "digest", methodParameters: record(inputStream.bytes(make(chunks))) });
    const result = await call.result;
    expect(result.kind === "value" ? result.js() : undefined).toEqual({ bytes: BigInt(all.length), sha256: sha256(all) });
    await call.finished;
  });

  it("count: stream<u32> items in order", async () => {
    const call = client.invoke({ ...demo, method: "count", methodParameters: record(u32(300), u32(0)) });
    const items = await collect((await firstStream(call)).values());
    expect(strings(items)).toEqual(Array.from({ length: 300 }, (_, i) => i));
    await call.finished;
  });

  it("blobs: 6 binary items of 3 MiB, each checked against the server's formula", async () => {
    const size = 3 * 1024 * 1024;
    const call = client.invoke({ ...demo, method: "blobs", methodParameters: record(u32(6), u32(size)) });
    const blobs = await collect((await firstStream(call)).blobs());
    expect(blobs).toHaveLength(6);
    blobs.forEach((blob, index) => {
      const expected = new Uint8Array(size);
      for (let j = 0; j < size; j++) expected[j] = (index + j) & 0xff;
      expect(sha256(blob.bytes)).toBe(sha256(expected));
      expect(blob.mimeType).toBe("application/octet-stream");
    });
    await call.finished;
  });

  it("split: one u8 input, two output streams (u8 and string) read concurrently", async () => {
    const lines = Array.from({ length: 2000 }, (_, i) => `line ${i} of the text ${"x".repeat(i % 200)}`);
    const text = new TextEncoder().encode(lines.join("\n"));
    const { chunks } = (() => {
      const out: Uint8Array[] = [];
      for (let at = 0; at < text.length; at += 7777) out.push(text.subarray(at, at + 7777));
      return { chunks: out };
    })();
    const call = client.invoke({ ...demo, method: "split", methodParameters: record(inputStream.bytes(chunks)) });
    const result = await call.result;
    if (result.kind !== "value") throw new Error("expected a value");
    const [upper, lineStream] = result.streams as [OutputStream, OutputStream];
    expect([upper.coordinate, lineStream.coordinate]).toEqual(["/value/fields/0", "/value/fields/1"]);
    const [upperBatches, lineItems] = await Promise.all([collect(upper.bytes()), collect(lineStream.values())]);
    const upperText = Buffer.concat(upperBatches).toString("utf8");
    expect(sha256(Buffer.from(upperText))).toBe(sha256(Buffer.from(lines.join("\n").toUpperCase())));
    expect(strings(lineItems)).toEqual(lines);
    await call.finished;
  });

  it("groups as JavaScript: records become objects, nested streams OutputStreams", async () => {
    const call = client.invoke({ ...demo, method: "groups", methodParameters: record(u32(3), u32(5)) });
    const result = await call.result;
    if (result.kind !== "value") throw new Error("expected a value");
    const outer = result.js() as OutputStream;
    const groups: { name: string; items: unknown[] }[] = [];
    const reads: Promise<unknown>[] = [];
    for await (const group of outer.js()) {
      const { name, items } = group as { name: string; items: OutputStream };
      const entry = { name, items: [] as unknown[] };
      groups.push(entry);
      reads.push(collect(items.js()).then((values) => (entry.items = values)));
    }
    await Promise.all(reads);
    expect(groups).toEqual([0, 1, 2].map((g) => ({ name: `group-${g}`, items: [0, 1, 2, 3, 4] })));
    await call.finished;
  });

  it("groups: nested output streams announced inside items", async () => {
    const call = client.invoke({ ...demo, method: "groups", methodParameters: record(u32(4), u32(50)) });
    const outer = await firstStream(call);
    const nested: Promise<unknown[]>[] = [];
    const names: unknown[] = [];
    for await (const group of outer.values()) {
      const [name, items] = fieldsOf(group);
      names.push(name?.value);
      const stream = call.stream(items!);
      expect(stream?.coordinate).toBe("/value/fields/1");
      nested.push(collect(stream!.values()).then(strings));
    }
    expect(names).toEqual(["group-0", "group-1", "group-2", "group-3"]);
    for (const items of await Promise.all(nested)) expect(items).toEqual(Array.from({ length: 50 }, (_, i) => i));
    await call.finished;
  });

  it("fail: items, then a producer-error end as a typed error", async () => {
    const call = client.invoke({ ...demo, method: "fail", methodParameters: record(u32(3)) });
    const seen: unknown[] = [];
    const error = await (async () => {
      try {
        for await (const item of (await firstStream(call)).values()) seen.push(item.value);
      } catch (e) {
        return e;
      }
    })();
    expect(seen).toEqual([0, 1, 2]);
    expect(error).toMatchObject({ kind: "stream-failed", code: "producer-error" });
    await call.finished.catch(() => undefined);
  });

  it("rejects an unknown method with not-found", async () => {
    const call = client.invoke({ ...demo, method: "nope", methodParameters: record() });
    await expect(call.finished).rejects.toMatchObject({ kind: "rejected", code: "not-found" });
  });

  it("rejects a wrong token at the handshake with unauthenticated", async () => {
    const other = createClient({ url: server.url, token: "wrong" });
    const call = other.invoke({ ...demo, method: "count", methodParameters: record(u32(1), u32(0)) });
    await expect(call.finished).rejects.toMatchObject({ kind: "rejected", code: "unauthenticated" });
  });
});

describe("cancellation", () => {
  it("the client cancels an output stream; the server ends it as cancelled", async () => {
    const call = client.invoke({ ...demo, method: "count", methodParameters: record(u32(100_000), u32(1)) });
    const stream = await firstStream(call);
    const iterator = stream.values()[Symbol.asyncIterator]();
    await iterator.next();
    await iterator.next();
    await stream.cancel();
    expect(await stream.ended).toEqual({ kind: "cancelled", reason: "cancelled" });
    await call.finished.catch(() => undefined);
  });

  it("leaving a for-await loop drops the stream (consumer-drop)", async () => {
    const call = client.invoke({ ...demo, method: "count", methodParameters: record(u32(100_000), u32(1)) });
    const stream = await firstStream(call);
    for await (const item of stream.values()) if (item.value === 3) break;
    expect(await stream.ended).toEqual({ kind: "cancelled", reason: "consumer-drop" });
    await call.finished.catch(() => undefined);
  });

  it("the client cancels an input stream; the agent sees its source fail", async () => {
    async function* endless() {
      for (;;) yield new Uint8Array(1024);
    }
    const input = inputStream.bytes(endless());
    const call = client.invoke({ ...demo, method: "digest", methodParameters: record(input) });
    await call.accepted;
    input.cancel();
    await expect(call.finished).rejects.toMatchObject({ kind: "invocation-failed" });
  });
});

describe("takeover from saved state", () => {
  it("a second client continues the output exactly after the delivered cursor", async () => {
    let saved: ResumeState | undefined;
    const first = client.invoke({
      ...demo,
      method: "count",
      methodParameters: record(u32(200), u32(0)),
      onCheckpoint: (state) => void (saved = state),
    });
    const stream = await firstStream(first);
    const iterator = stream.values()[Symbol.asyncIterator]();
    const seen: unknown[] = [];
    for (let i = 0; i < 10; i++) seen.push(((await iterator.next()).value as SchemaValueJson).value);
    const state = first.detach();
    expect(state?.outputCursors).toEqual(saved?.outputCursors);
    await expect(first.finished).rejects.toMatchObject({ kind: "aborted" });

    // Item 9 was handed out but never confirmed by a further pull: it is replayed.
    const second = createClient({ url: server.url, token: TOKEN }).takeover(saved!);
    expect((await second.accepted).operation).toBe("takeover");
    const rest = await collect((await firstStream(second)).values());
    expect([...seen.slice(0, 9), ...strings(rest)]).toEqual(Array.from({ length: 200 }, (_, i) => i));
    await second.finished;
  });

  it("a finished invocation taken over again: streams already complete, success, nothing replayed", async () => {
    let saved: ResumeState | undefined;
    const first = client.invoke({
      ...demo,
      method: "count",
      methodParameters: record(u32(5), u32(0)),
      onCheckpoint: (state) => void (saved = state),
    });
    expect(strings(await collect((await firstStream(first)).values()))).toEqual([0, 1, 2, 3, 4]);
    await first.finished;
    // The saved state holds the stream's terminal cursor (signed by the real server).
    const second = createClient({ url: server.url, token: TOKEN }).takeover(saved!);
    const stream = await firstStream(second);
    expect(await collect(stream.values())).toEqual([]);
    expect(await stream.ended).toEqual({ kind: "already-delivered" });
    expect(await second.finished).toEqual({ kind: "success" });
  });

  it("a frozen start saved before sending continues in a second client: accepted now, or its acceptance replayed", async () => {
    const frozen = async (): Promise<ResumeState> => {
      let saved: ResumeState | undefined;
      const never: Client = createClient({
        url: server.url,
        token: TOKEN,
        // A transport that never connects: the process "dies" right after saving its start.
        transport: { connect: () => new Promise(() => undefined) },
      });
      const call = never.invoke({
        ...demo,
        method: "count",
        methodParameters: record(u32(20), u32(0)),
        onCheckpoint: (state) => void (saved = state),
      });
      await new Promise((resolve) => setImmediate(resolve));
      call.detach();
      expect(saved?.pendingOperation?.type).toBe("invocationStart");
      return saved!;
    };
    // Never sent: the retry is the first the server sees.
    const state = await frozen();
    const second = createClient({ url: server.url, token: TOKEN }).takeover(state);
    expect((await second.accepted).attemptId).toBe(state.pendingOperation?.attemptId);
    expect(strings(await collect((await firstStream(second)).values()))).toEqual(Array.from({ length: 20 }, (_, i) => i));
    await second.finished;
    // Sent and accepted before: the same frozen start is answered with the committed acceptance.
    const third = createClient({ url: server.url, token: TOKEN }).takeover(state);
    const accepted = await third.accepted;
    expect(accepted.attemptId).toBe(state.pendingOperation?.attemptId);
    expect(third.sessionToken).toBeDefined();
    await expect(third.finished).resolves.toEqual({ kind: "success" });
  });

  it("the old owner is told it was replaced (revoked)", async () => {
    const first = client.invoke({ ...demo, method: "count", methodParameters: record(u32(100_000), u32(2)) });
    const revocations: unknown[] = [];
    const reconnects: unknown[] = [];
    first.on("revoked", (event) => revocations.push(event));
    first.on("reconnecting", (event) => reconnects.push(event));
    await first.accepted;
    const state = first.state!;
    const second = createClient({ url: server.url, token: TOKEN }).takeover(state);
    await second.accepted;
    // attachmentRevoked carries no public code (its only reason is `replaced`): kind revoked, no retry.
    await expect(first.finished).rejects.toSatisfy((e) => e instanceof ClientError && e.kind === "revoked" && e.code === undefined);
    expect(revocations).toEqual([{}]);
    expect(reconnects).toEqual([]);
    expect(first.signal.aborted).toBe(true);
    second.cancel();
  });
});
