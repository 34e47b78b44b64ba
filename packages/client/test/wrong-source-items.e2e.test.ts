/**
 * A source whose items do not fit its stream's element type, passed to a typed call: a Node stream
 * of bytes (`process.stdin`) for a `stream<string>` or `stream<f64>` type-checks (a `Readable`
 * iterates `any`), so the item is refused at run time, in the caller's words: the parameter's place
 * in the call, the item's index, what it is, and for bytes how to send what was meant.
 */
import { Readable } from "node:stream";
import { implement } from "@golem-stream/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClientError, defineAgentType, inputStream, t, type Client } from "../src/index.js";
import { collect } from "./support/demo.js";
import { startHostServer } from "./support/embedded.js";

const tally = defineAgentType({
  name: "tally",
  constructor: t.record({ unit: t.string() }),
  methods: {
    sum: { params: t.record({ numbers: t.stream(t.f64()) }), result: t.record({ count: t.u32(), total: t.f64() }) },
    echo: { params: t.record({ lines: t.stream(t.string()) }), result: t.stream(t.string()) },
    jobs: { params: t.record({ jobs: t.stream(t.record({ name: t.string(), log: t.stream(t.string()) })) }), result: t.u32() },
    hexdump: { params: t.record({ data: t.stream(t.u8()) }), result: t.u32() },
    files: { params: t.record({ files: t.stream(t.binary()) }), result: t.u32() },
  },
});

const TALLY = implement(tally, {
  async sum(_ctx, { numbers }) {
    let count = 0;
    let total = 0;
    for await (const n of numbers) (count++, (total += n));
    return { count, total };
  },
  async echo(_ctx, { lines }) {
    return lines;
  },
  async hexdump(_ctx, { data }) {
    let bytes = 0;
    for await (const chunk of data) bytes += chunk.byteLength;
    return bytes;
  },
  async files(_ctx, { files }) {
    let count = 0;
    for await (const _file of files) count++;
    return count;
  },
  async jobs(_ctx, { jobs }) {
    let lines = 0;
    for await (const job of jobs) for await (const _line of job.log) lines++;
    return lines;
  },
});

let close: () => Promise<void>;
let client: Client;
beforeAll(async () => ({ client, close } = await startHostServer({ app: { prod: [TALLY] } })));
afterAll(async () => close());

/** A byte stream as `process.stdin` is one. */
const stdinLike = (text: string): Readable => Readable.from([Buffer.from(text)], { objectMode: false });

const connect = () => client.connect(tally, { application: "app", environment: "prod", constructor: { unit: "m" } });

describe("an input item that does not fit its stream", () => {
  it("a byte stream for a stream<string>: the parameter, the item, a Buffer, and how to split it", async () => {
    const agent = await connect();
    // Compiles: a Readable is an AsyncIterable<any>.
    const call = agent.echo({ lines: stdinLike("a\nb\n") });
    const failed = new Promise<unknown>((resolve) => call.invocation.on("inputFailed", ({ error }) => resolve(error)));
    const error = await collect(await call).catch((e: unknown) => e);
    const refusal =
      "echo.lines: item 0: expected a string, got a Buffer (a byte stream such as process.stdin yields chunks of bytes: to send its lines, split it first, e.g. with node:readline)";
    expect(await failed).toMatchObject({ kind: "invalid-argument", code: "validation-error", message: refusal });
    expect(error).toBeInstanceOf(ClientError);
    expect(error).toMatchObject({
      kind: "stream-failed",
      code: "producer-error",
      message: `an input of this call failed: ${refusal}. The client cancelled that input, and the agent's method then failed this output (the server says: producer failed)`,
    });
    expect((error as ClientError).cause).toBe(await failed);
  });

  it("a byte stream for a stream<f64>: split and convert each line", async () => {
    const agent = await connect();
    const call = agent.sum({ numbers: stdinLike("1\n2\n") });
    const error = await call.catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: "invocation-failed" });
    expect(((error as ClientError).cause as Error).message).toBe(
      "sum.numbers: item 0: expected a number, got a Buffer (a byte stream such as process.stdin yields chunks of bytes: to send one item per line, split it first, e.g. with node:readline, and convert each line)",
    );
  });

  it("a later item, and a place inside an item: its index, then the field, then a nested stream's own items", async () => {
    const agent = await connect();
    const third = await agent.sum({ numbers: [1, 2, "3" as never] }).catch((e: unknown) => e);
    expect(((third as ClientError).cause as Error).message).toBe('sum.numbers: item 2: expected a number, got "3"');
    const named = await agent
      .jobs({
        jobs: [
          { name: "a", log: [] },
          { name: 2 as never, log: [] },
        ],
      })
      .catch((e: unknown) => e);
    expect(((named as ClientError).cause as Error).message).toBe("jobs.jobs: item 1: name: expected a string, got 2");
    const nested = await agent.jobs({ jobs: [{ name: "a", log: ["x", null as never] }] }).catch((e: unknown) => e);
    expect(((nested as ClientError).cause as Error).message).toBe("jobs.jobs: item 0: log: item 1: expected a string, got null");
  });
});

describe("an item of a byte stream that is not bytes", () => {
  it("stream<u8>: the parameter, the item's index and what it got, as for a value stream", async () => {
    const agent = await connect();
    const error = await agent.hexdump({ data: [new Uint8Array([1, 2]), "oops" as never] }).catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: "invocation-failed" });
    const refusal = (error as ClientError).cause;
    expect(refusal).toMatchObject({ kind: "invalid-argument" });
    expect((refusal as Error).message).toBe('hexdump.data: item 1: expected bytes (a Uint8Array, Buffer or ArrayBuffer), got "oops"');
  });

  it("stream<binary>: an item that is no blob, and a blob whose bytes are not bytes", async () => {
    const agent = await connect();
    const noBlob = await agent.files({ files: [new Uint8Array([1]), 7 as never] }).catch((e: unknown) => e);
    expect(((noBlob as ClientError).cause as Error).message).toBe(
      "files.files: item 1: expected bytes, a { bytes, mimeType } or a Blob, got 7",
    );
    const badBytes = await agent.files({ files: [{ bytes: [1, 2] as never }] }).catch((e: unknown) => e);
    expect(((badBytes as ClientError).cause as Error).message).toBe(
      "files.files: item 0: bytes: expected bytes (a Uint8Array, Buffer or ArrayBuffer), got an array",
    );
  });

  it("inputStream.bytes outside a typed call: the item's index and what it got", async () => {
    const call = client.invoke({
      application: "app",
      environment: "prod",
      agentType: "tally",
      constructorParameters: { kind: "record", value: { fields: [{ kind: "string", value: "m" }] } },
      method: "hexdump",
      methodParameters: { kind: "record", value: { fields: [inputStream.bytes([new Uint8Array([1]), { length: 2 } as never])] } },
    });
    const failed = new Promise<unknown>((resolve) => call.on("inputFailed", ({ error }) => resolve(error)));
    await call.finished.catch(() => undefined);
    expect((await failed) as Error).toMatchObject({
      kind: "invalid-argument",
      message: "item 1: expected bytes (a Uint8Array, Buffer or ArrayBuffer), got an object",
    });
  });
});
