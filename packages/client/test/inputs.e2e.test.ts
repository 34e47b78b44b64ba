/**
 * Input streams end to end against the real server on loopback: every kind
 * of source for every kind of element, many MiB of `stream<binary>` with
 * SHA-256 computed on both sides, and an input the agent stops reading
 * (the server cancels it; the client must release the source).
 */
import { randomBytes } from "node:crypto";
import { createReadStream, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inputStream, type BinaryBlob, type Client } from "../src/index.js";
import { collect, demo, fieldsOf, firstStream, randomChunks, record, sha256, u32 } from "./support/demo.js";
import { startDemoAndProbe, type DemoAndProbe } from "./support/demo-and-probe.js";
import { PROBE, blobsDigest } from "./support/probe-server.js";

let servers: DemoAndProbe;
let client: Client;
let probeClient: Client;

beforeAll(async () => {
  servers = await startDemoAndProbe();
  ({ client, probeClient } = servers);
});
afterAll(async () => servers.dispose());

const resultFields = async (call: ReturnType<Client["invoke"]>): Promise<unknown[]> => {
  const result = await call.result;
  await call.finished;
  if (result.kind !== "value") throw new Error("expected a value");
  return fieldsOf(result.value).map((field) => field.value);
};

describe("stream<u8> sources: byte chunks of any type and size", () => {
  async function* asyncChunks(chunks: readonly Uint8Array[]): AsyncGenerator<Uint8Array> {
    for (const chunk of chunks) {
      await Promise.resolve();
      yield chunk;
    }
  }
  /** Buffers, plain Uint8Arrays, other typed-array views and ArrayBuffers, in turn. */
  const mixedTypes = (chunks: readonly Uint8Array[]): unknown[] =>
    chunks.map((chunk, i) => {
      const copy = new Uint8Array(chunk);
      switch (i % 4) {
        case 0:
          return Buffer.from(copy);
        case 1:
          return copy;
        case 2:
          return copy.byteLength % 2 === 0 ? new Uint16Array(copy.buffer) : new DataView(copy.buffer);
        default:
          return copy.buffer;
      }
    });

  it.each([
    ["an async generator", (chunks: Uint8Array[]) => asyncChunks(chunks)],
    ["a Web ReadableStream", (chunks: Uint8Array[]) => ReadableStream.from(chunks)],
    ["chunks of mixed byte types", (chunks: Uint8Array[]) => mixedTypes(chunks) as Uint8Array[]],
  ])("digest reads 5 MiB from %s; SHA-256 equal on both sides", async (_label, make) => {
    // Chunk sizes from 1 byte to 1.5 MiB: batches are cut at 1 MiB, small chunks are sent as they come.
    const { chunks, all } = randomChunks(5 * 1024 * 1024, 1536 * 1024);
    chunks.splice(1, 0, new Uint8Array(0), all.subarray(0, 0));
    const call = client.invoke({ ...demo, method: "digest", methodParameters: record(inputStream.bytes(make(chunks))) });
    expect(await resultFields(call)).toEqual([String(all.length), sha256(all)]);
  });

  it("digest reads a Blob (as a browser's File would be read: through blob.stream())", async () => {
    const { chunks, all } = randomChunks(5 * 1024 * 1024, 1536 * 1024);
    const call = client.invoke({ ...demo, method: "digest", methodParameters: record(inputStream.bytes(new Blob(chunks))) });
    expect(await resultFields(call)).toEqual([String(all.length), sha256(all)]);
  });

  it("digest reads a file through fs.createReadStream (a Node Readable of 64 KiB Buffers)", async () => {
    const all = randomBytes(5 * 1024 * 1024 + 3);
    const dir = mkdtempSync(join(tmpdir(), "golem-stream-input-"));
    try {
      writeFileSync(join(dir, "data.bin"), all);
      const call = client.invoke({
        ...demo,
        method: "digest",
        methodParameters: record(inputStream.bytes(createReadStream(join(dir, "data.bin")))),
      });
      expect(await resultFields(call)).toEqual([String(all.length), sha256(all)]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("an input source that fails", () => {
  it("the invocation that fails after it says why: its source's error is the cause", async () => {
    const failing = new Error("the disk went away");
    const source = (async function* () {
      yield new Uint8Array([1, 2, 3]);
      throw failing;
    })();
    const call = client.invoke({ ...demo, method: "digest", methodParameters: record(inputStream.bytes(source)) });
    const error = await call.finished.then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toMatchObject({ kind: "invocation-failed", code: "invocation-failed", cause: failing });
    expect((error as Error).message).toContain("after an input of this call failed here: the disk went away");
  });
});

describe("stream<string> sources", () => {
  const lines = Array.from({ length: 500 }, (_, i) => `line ${i}: ${"é".repeat(i % 7)}😀`);
  const reversed = lines.map((line) => Array.from(line).reverse().join(""));
  it.each([
    ["an array", () => lines],
    [
      "an async generator",
      () =>
        (async function* () {
          yield* lines;
        })(),
    ],
    ["a Web ReadableStream", () => ReadableStream.from(lines)],
    ["a Node Readable in object mode", () => Readable.from(lines)],
  ])("reverse reads %s", async (_label, make) => {
    const call = client.invoke({ ...demo, method: "reverse", methodParameters: record(inputStream.strings(make() as Iterable<string>)) });
    const items = await collect((await firstStream(call)).values());
    expect(items.map((item) => item.value)).toEqual(reversed);
    await call.finished;
  });

  it.each([
    ["a number", 42, "item 1: a string input yielded a number, not a string"],
    [
      "a Buffer (a Node stream without setEncoding)",
      Buffer.from("abc"),
      'item 1: a string input yielded bytes (decode them first, e.g. setEncoding("utf8") on a Node stream, or use inputStream.bytes), not a string',
    ],
  ])(
    "an item that is %s fails the input here, naming its index: the server never sees it, no violation, the invocation ends",
    async (_label, wrong, message) => {
      const call = client.invoke({ ...demo, method: "reverse", methodParameters: record(inputStream.strings(["a", wrong as never, "b"])) });
      const failures: unknown[] = [];
      call.on("inputFailed", (event) => failures.push(event.error));
      const items = (await firstStream(call)).values();
      await expect(collect(items)).rejects.toMatchObject({ kind: "stream-failed" });
      expect(failures).toEqual([expect.objectContaining({ kind: "invalid-argument", message })]);
      // The output's producer read the input's cancel (source-unavailable) and failed its stream; the
      // invocation is over, not left running behind a connection the server closed over a bad item
      // (validation-error), which the client reported as a rejection.
      expect(await call.finished).toEqual({ kind: "success" });
    },
  );

  it("tally counts what a one-way stream<string> delivered", async () => {
    const call = client.invoke({ ...demo, method: "tally", methodParameters: record(inputStream.strings(ReadableStream.from(lines))) });
    const bytes = lines.reduce((sum, line) => sum + Buffer.byteLength(line), 0);
    expect(await resultFields(call)).toEqual([String(lines.length), String(bytes)]);
  });
});

describe("stream<binary> input of many MiB (probe agent)", () => {
  /** 24 MiB in items from 0 bytes to 3 MiB, every third with its own MIME type. */
  function blobs(): BinaryBlob[] {
    const { chunks } = randomChunks(24 * 1024 * 1024, 3 * 1024 * 1024);
    const items: BinaryBlob[] = chunks.map((bytes, i) => (i % 3 === 0 ? { bytes, mimeType: `application/x-part-${i}` } : { bytes }));
    items.splice(2, 0, { bytes: new Uint8Array(0) });
    return items;
  }
  const expected = (items: readonly BinaryBlob[], fallbackMime?: string): unknown[] => [
    String(items.length),
    String(items.reduce((sum, item) => sum + item.bytes.byteLength, 0)),
    blobsDigest(items.map((item) => ({ bytes: item.bytes, mimeType: item.mimeType ?? fallbackMime }))),
  ];
  const params = (data: ReturnType<typeof inputStream.binary>) => record(data);

  it.each([
    [
      "an async generator",
      (items: BinaryBlob[]) =>
        (async function* () {
          yield* items;
        })(),
    ],
    ["a Web ReadableStream", (items: BinaryBlob[]) => ReadableStream.from(items)],
    ["a Node Readable in object mode", (items: BinaryBlob[]) => Readable.from(items)],
  ])("every item, its bytes and MIME type arrive once, from %s", async (_label, make) => {
    const items = blobs();
    const call = probeClient.invoke({ ...PROBE, method: "blobDigest", methodParameters: params(inputStream.binary(make(items))) });
    expect(await resultFields(call)).toEqual(expected(items));
  });

  it("Blobs and Files are one item each, with their own type or else the binding's default", async () => {
    const items = blobs();
    const files = items.map((item, i) =>
      i % 2 === 0
        ? new File([item.bytes], `part-${i}`, item.mimeType === undefined ? {} : { type: item.mimeType })
        : new Blob([item.bytes], item.mimeType === undefined ? {} : { type: item.mimeType }),
    );
    const call = probeClient.invoke({
      ...PROBE,
      method: "blobDigest",
      methodParameters: params(inputStream.binary(files, { mimeType: "image/png" })),
    });
    expect(await resultFields(call)).toEqual(expected(items, "image/png"));
  });

  it("bare byte chunks become items with the binding's default MIME type", async () => {
    const items = blobs().map((item) => item.bytes);
    const call = probeClient.invoke({
      ...PROBE,
      method: "blobDigest",
      methodParameters: params(inputStream.binary(items, { mimeType: "image/png" })),
    });
    expect(await resultFields(call)).toEqual(
      expected(
        items.map((bytes) => ({ bytes })),
        "image/png",
      ),
    );
  });
});

describe("the server cancels an input the agent stopped reading", () => {
  it("the source is released, nothing more is read from it, and the invocation succeeds", async () => {
    let produced = 0;
    let released = false;
    const block = new Uint8Array(64 * 1024).map((_, i) => i & 0xff);
    async function* endless(): AsyncGenerator<Uint8Array> {
      try {
        for (;;) {
          produced++;
          yield block;
        }
      } finally {
        released = true;
      }
    }
    const input = inputStream.bytes(endless());
    const limit = 3 * 1024 * 1024 + 17;
    const call = probeClient.invoke({ ...PROBE, method: "head", methodParameters: record(input, u32(limit)) });
    const wanted = Buffer.concat(Array.from({ length: Math.ceil(limit / block.length) }, () => block)).subarray(0, limit);
    expect(await resultFields(call)).toEqual([String(limit), sha256(wanted)]);
    // The client closed the generator (its finally ran): nothing can be pulled from it any more.
    expect(released).toBe(true);
    expect(produced * block.length).toBeGreaterThanOrEqual(limit);
    expect(input.failure).toBeUndefined();
  });
});
