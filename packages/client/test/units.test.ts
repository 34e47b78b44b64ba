/** The small pure pieces: sources, reconnect delays, URL handling, argument checks. */
import { readFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { createReadStream } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { echoContract } from "@golem-stream/contract/demo";
import type { JsonValue } from "@golem-stream/wire";
import { ClientError, createClient, inputStream, reconnectDelay, sessionUrl, DEFAULT_RECONNECT_POLICY } from "../src/index.js";
import { pullFrom, toBytes } from "../src/sources.js";
import { findProvisionalRefs, findStreamTokens, renewProvisionalRefs } from "../src/values.js";
import { echo, acceptanceOf, inputMapping, isStart, memoryClient, provisionalRefOf } from "./support/fixtures.js";

async function drain<T>(source: Parameters<typeof pullFrom<T>>[0]): Promise<T[]> {
  const iterator = pullFrom<T>(source);
  const out: T[] = [];
  for (let r = await iterator.next(); !r.done; r = await iterator.next()) out.push(r.value);
  return out;
}

describe("sources", () => {
  it("reads async iterables, iterables, Web ReadableStreams and Node Readables alike", async () => {
    async function* gen() {
      yield 1;
      yield 2;
    }
    expect(await drain(gen())).toEqual([1, 2]);
    expect(await drain([1, 2])).toEqual([1, 2]);
    expect(await drain(new ReadableStream({ start: (c) => (c.enqueue(1), c.enqueue(2), c.close()) }))).toEqual([1, 2]);
    expect(await drain(Readable.from([1, 2]))).toEqual([1, 2]);
  });

  it("a sync iterable's items are also at hand at once (nextNow), exactly as next() gives them; sources that may wait have no nextNow", async () => {
    const returned: string[] = [];
    function* gen() {
      try {
        yield "a";
        yield "b";
        throw new Error("the source broke");
      } finally {
        returned.push("finally");
      }
    }
    const now = pullFrom(gen());
    expect(now.nextNow?.()).toEqual({ done: false, value: "a" });
    expect(await now.next()).toEqual({ done: false, value: "b" }); // the two take turns on one iterator
    expect(() => now.nextNow?.()).toThrow("the source broke"); // what next() would reject with
    const ended = pullFrom(["x"]);
    expect([ended.nextNow?.(), ended.nextNow?.(), ended.nextNow?.()]).toEqual([
      { done: false, value: "x" },
      { done: true, value: undefined },
      { done: true, value: undefined },
    ]);
    const closed = pullFrom(gen());
    closed.nextNow?.();
    await closed.close();
    expect(returned).toEqual(["finally", "finally"]); // close() returns the iterator
    expect(closed.nextNow?.()).toEqual({ done: true, value: undefined });
    async function* asyncGen() {
      yield 1;
    }
    for (const waits of [asyncGen(), new ReadableStream(), Readable.from([1])]) expect(pullFrom(waits).nextNow).toBeUndefined();
  });

  it("a Node Readable that fails before its first read fails that read, and never the process; closed unread, it is destroyed", async () => {
    const missing = createReadStream(join(tmpdir(), `golem-stream-missing-${randomUUID()}`));
    const failing = pullFrom(missing);
    // The open fails now, long before anything reads: with no listener, its error event would throw.
    await new Promise<void>((resolve) => missing.once("close", () => resolve()));
    await expect(failing.next()).rejects.toMatchObject({ code: "ENOENT" });
    await failing.close();
    const waiting = new Readable({ read() {} });
    const unread = pullFrom(waiting);
    await unread.close();
    expect(waiting.destroyed).toBe(true);
  });

  it("pulls lazily: nothing is read before next()", async () => {
    let pulled = 0;
    const stream = new ReadableStream({ pull: (c) => void (pulled++, c.enqueue(pulled)) }, { highWaterMark: 0 });
    const iterator = pullFrom(stream);
    await new Promise((r) => setImmediate(r));
    expect(pulled).toBe(0);
    await iterator.next();
    expect(pulled).toBe(1);
    await iterator.close();
  });

  it("normalises byte chunks and rejects anything else", () => {
    expect([...toBytes(Buffer.from([1, 2]))]).toEqual([1, 2]);
    expect(toBytes(new Uint16Array([0x0101]).buffer)).toEqual(new Uint8Array([1, 1]));
    expect(toBytes(new DataView(new Uint8Array([7, 8, 9]).buffer, 1, 2))).toEqual(new Uint8Array([8, 9]));
    for (const bad of ["text", 1, null, undefined, {}, [1, 2]])
      expect(() => toBytes(bad)).toThrow(expect.objectContaining({ kind: "invalid-argument" }));
  });
});

describe("reconnect policy", () => {
  const policy = { ...DEFAULT_RECONNECT_POLICY, random: () => 0.999999 };
  it("grows exponentially to the cap and stops after maxAttempts", () => {
    const delays = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((n) => reconnectDelay(policy, n));
    expect(delays.slice(0, 4)).toEqual([99, 199, 399, 799]);
    expect(Math.max(...(delays as number[]))).toBe(4999);
    expect(reconnectDelay(policy, 11)).toBeUndefined();
  });
  it("applies full jitter", () => {
    expect(reconnectDelay({ ...policy, random: () => 0 }, 5)).toBe(0);
    expect(reconnectDelay({ ...policy, random: () => 0.5 }, 1)).toBe(50);
  });
  it.each([
    { maxAttempts: -1 },
    { maxAttempts: 1.5 },
    { initialDelayMs: Number.NaN },
    { maxDelayMs: -5 },
    { maxDelayMs: 2 ** 31 },
    { multiplier: 0.5 },
    { stableAfterMs: Number.POSITIVE_INFINITY },
    { random: 0.5 },
    { retries: 3 },
  ])("refuses the unusable policy %j before any I/O", (reconnect) => {
    expect(() => createClient({ url: "ws://127.0.0.1:1", token: "t", reconnect: reconnect as never })).toThrow(
      expect.objectContaining({ kind: "invalid-argument", message: expect.stringContaining("reconnect.") }),
    );
  });
});

describe("session URL", () => {
  it.each([
    ["http://127.0.0.1:8080", "ws://127.0.0.1:8080/v1/agents/invoke-agent-session"],
    ["https://h", "wss://h/v1/agents/invoke-agent-session"],
    ["ws://h:1/", "ws://h:1/v1/agents/invoke-agent-session"],
    ["ws://h:1/custom/path", "ws://h:1/custom/path"],
  ])("%s → %s", (input, expected) => expect(sessionUrl(input)).toBe(expected));
  it.each(["ftp://h", "not a url", ""])("rejects %j", (input) => expect(() => sessionUrl(input)).toThrow(ClientError));
});

describe("provisional references in a frozen start", () => {
  const a = "0dff1c71-f12f-4bb1-996c-23d693bdc825";
  const b = "47be00cd-78aa-4e41-a41d-2517060e540e";
  const value: JsonValue = {
    kind: "record",
    value: {
      fields: [
        { kind: "stream", value: { provisionalRef: a } },
        { kind: "string", value: "provisionalRef" },
        { kind: "list", value: { elements: [{ kind: "stream", value: { provisionalRef: b } }] } },
      ],
    },
  };
  it("finds every one, nested ones included, in document order", () => {
    expect(findProvisionalRefs(value)).toEqual([a, b]);
  });
  it("renews every one and touches nothing else", () => {
    const renewed = renewProvisionalRefs(value, (ref) => (ref === a ? "A" : "B"));
    expect(findProvisionalRefs(renewed)).toEqual(["A", "B"]);
    expect(JSON.stringify(renewed)).toBe(JSON.stringify(value).replace(a, "A").replace(b, "B"));
    expect(findProvisionalRefs(value)).toEqual([a, b]); // the original is not modified
  });
});

describe("stream leaves in server values", () => {
  it("finds nested stream tokens with their JSON pointers", () => {
    const value: JsonValue = {
      kind: "record",
      value: {
        fields: [
          { kind: "stream", value: { streamToken: "a" } },
          { kind: "list", value: { elements: [{ kind: "stream", value: { streamToken: "b" } }] } },
        ],
      },
    };
    expect(findStreamTokens(value)).toEqual([
      { coordinate: "/value/fields/0", streamToken: "a" },
      { coordinate: "/value/fields/1/value/elements/0", streamToken: "b" },
    ]);
  });
});

describe("wrong-typed arguments", () => {
  it.each([
    [{ url: "ws://h" }],
    [{ url: "ws://h", token: "t", getToken: () => "t" }],
    [{ url: "gopher://h", token: "t" }],
    [{ url: "ws://h", token: "t", maxUnackedInputBytes: 0 }],
    [{ url: "ws://h", token: "t", maxQueuedBytes: -1 }],
    [{ url: "ws://h", token: "t", maxQueuedEntriesPerStream: 1.5 }],
  ])("createClient(%j) throws invalid-argument", (options) => {
    expect(() => createClient(options)).toThrow(expect.objectContaining({ kind: "invalid-argument" }));
  });

  it("rejects an empty or oversized idempotency key", () => {
    const { client } = memoryClient();
    for (const idempotencyKey of ["", "x".repeat(1025)]) {
      expect(() => client.invoke({ ...echo, method: "count", methodParameters: { kind: "bool", value: true }, idempotencyKey })).toThrow(
        expect.objectContaining({ kind: "invalid-argument", code: "validation-error" }),
      );
    }
  });

  it("rejects one input stream at two coordinates (affine ownership)", () => {
    const { client } = memoryClient();
    const shared = inputStream.strings(["a"]);
    expect(() =>
      client.invoke({ ...echo, method: "reverse", methodParameters: { kind: "tuple", value: { elements: [shared, shared] } } }),
    ).toThrow(expect.objectContaining({ code: "stream-already-consumed" }));
  });

  it("rejects parameters that are not JSON", () => {
    const { client } = memoryClient();
    for (const bad of [undefined, () => 1, 1n, Symbol("s")]) {
      expect(() => client.invoke({ ...echo, method: "count", methodParameters: { kind: "x", value: { v: bad } } as never })).toThrow(
        ClientError,
      );
    }
  });

  it.each([
    ["a non-string application", { application: 5 }],
    ["a malformed phantom id", { phantomId: "not-a-uuid" }],
    ["a config entry with an empty path", { config: [{ path: [], value: 1 }] }],
    ["constructor parameters that are no SchemaValue", { constructorParameters: { kind: "bool" } }],
  ])("invoke() throws invalid-argument for %s, before any connection", (_label, patch) => {
    const { client, transport } = memoryClient();
    expect(() => client.invoke({ ...echo, method: "m", methodParameters: { kind: "bool", value: true }, ...(patch as object) })).toThrow(
      expect.objectContaining({ kind: "invalid-argument", code: "invalid-message" }),
    );
    expect(transport.connections).toHaveLength(0);
  });

  it("an input item that is no SchemaValue fails its source, not the connection", async () => {
    const { client, transport } = memoryClient();
    const input = inputStream.values([{ kind: "string", value: "ok" }, { nope: true } as never]);
    const call = client.invoke({ ...echo, method: "reverse", methodParameters: { kind: "record", value: { fields: [input] } } });
    const failures: unknown[] = [];
    call.on("inputFailed", (event) => failures.push(event.error));
    const server = await transport.nextConnection();
    const start = await server.waitUntil(isStart);
    server.send(acceptanceOf(start, [inputMapping(1, provisionalRefOf(start))], { sessionToken: "s" }));
    expect(await server.waitUntil((m) => m.type === "streamCancel")).toMatchObject({ reason: "source-unavailable" });
    expect(failures).toEqual([expect.objectContaining({ kind: "invalid-argument" })]);
    expect(input.failure).toBe(failures[0]);
    call.cancel();
  });
});

describe("a getToken that fails", () => {
  const failures: [string, () => string | Promise<string>, string][] = [
    ["rejects", () => Promise.reject(new Error("vault sealed")), "vault sealed"],
    [
      "throws",
      () => {
        throw new Error("vault sealed");
      },
      "vault sealed",
    ],
    ["resolves to nothing", (() => Promise.resolve(undefined)) as never, "getToken must give a non-empty string, not undefined"],
    ["gives a number", (() => 42) as never, "getToken must give a non-empty string, not number"],
    ["gives an empty string", () => "", "getToken must give a non-empty string, not an empty string"],
    ["resolves to null", (() => Promise.resolve(null)) as never, "getToken must give a non-empty string, not null"],
    [
      "gives a line read from a file",
      () => "gai1_token\n",
      "getToken must give visible ASCII with no space or line end around it: trim it (a token read from a file keeps its newline)",
    ],
    [
      "gives a token with a space inside",
      () => "two words",
      "getToken must give visible ASCII only (no spaces, line ends or other characters outside ! to ~)",
    ],
  ];
  it.each(failures)(
    "%s: invoke, agent and connect fail alike, with invalid-argument and the original as cause",
    async (_label, getToken, why) => {
      const { client, transport } = memoryClient({ token: undefined, getToken });
      const failed = expect.objectContaining({
        name: "ClientError",
        kind: "invalid-argument",
        message: "getToken failed",
        cause: expect.objectContaining({ message: why }),
      });
      await expect(client.invoke({ ...echo, method: "m", methodParameters: { kind: "bool", value: true } }).finished).rejects.toEqual(
        failed,
      );
      const where = { application: "a", environment: "e" };
      await expect(client.agent({ ...where, agentType: "echo", constructorArgs: {} })).rejects.toEqual(failed);
      await expect(client.connect(echoContract, { ...where, constructor: { name: "n" } })).rejects.toEqual(failed);
      expect(transport.connections).toHaveLength(0);
    },
  );
});

describe("a refused invoke consumes nothing", () => {
  it("leaves the input source unclaimed, so it can be used again", () => {
    const { client } = memoryClient();
    const lines = inputStream.strings(["a"]);
    expect(() =>
      client.invoke({
        ...echo,
        application: 5 as never,
        method: "reverse",
        methodParameters: { kind: "record", value: { fields: [lines] } },
      }),
    ).toThrow(expect.objectContaining({ kind: "invalid-argument" }));
    const call = client.invoke({ ...echo, method: "reverse", methodParameters: { kind: "record", value: { fields: [lines] } } });
    call.cancel();
  });
});
