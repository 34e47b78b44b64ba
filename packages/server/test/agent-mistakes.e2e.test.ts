/**
 * Mistakes in a user's own agent code that must stay that agent's problem:
 * a push producer's write after its stream ended, left unawaited, must not
 * take the server (and every other invocation) down with an unhandled
 * rejection; a typed method whose result does not match its schema gets the
 * same public reason an untyped one does; a method named like a member of
 * `Object.prototype` must have its own implementation; a misspelt method is
 * refused beside the names the contract declares.
 */
import { afterEach, expect, it } from "vitest";
import type { SchemaValueJson } from "@golem-stream/wire";
import {
  MemorySessionStore,
  defineAgentType,
  implement,
  t,
  type AgentTypeDefinition,
  type OutputWriter,
  type SessionServer,
} from "../src/index.js";
import { RawClient, agentStart, serveTestAgents, v } from "./helpers.js";

let server: SessionServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const EMPTY = t.graph(t.record({}));

it("a producer's write after its stream ended, never awaited, fails only that write: the server serves the next invocation", async () => {
  let kept: OutputWriter | undefined;
  const lines: AgentTypeDefinition = {
    name: "lines",
    constructorParameters: EMPTY,
    config: [],
    methods: [{ name: "once", parameters: EMPTY, result: t.graph(t.stream(t.string())) }],
    implementations: {
      once: async (ctx) =>
        ctx.output(async (writer) => {
          await writer.write({ kind: "string", value: "first" } as SchemaValueJson);
          kept = writer;
        }),
    },
  };
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
  process.on("unhandledRejection", onUnhandled);
  try {
    let url: string;
    ({ server, url } = await serveTestAgents(new MemorySessionStore(), [lines]));
    const first = await RawClient.connect(url);
    first.send(agentStart("test", "lines", "once", v.record() as SchemaValueJson));
    expect((await first.all()).messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });

    // The producer's writer, used after its stream ended, and never awaited.
    void kept!.write({ kind: "string", value: "late" } as SchemaValueJson);
    // Node reports an unhandled rejection once the microtasks after a macrotask have run.
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(unhandled).toEqual([]);
    // Awaited, the same mistake is the producer's to see.
    await expect(kept!.write({ kind: "string", value: "late" } as SchemaValueJson)).rejects.toThrow(/already ended/);

    const second = await RawClient.connect(url);
    second.send(agentStart("test", "lines", "once", v.record() as SchemaValueJson));
    expect((await second.all()).messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
  } finally {
    process.off("unhandledRejection", onUnhandled);
  }
});

it("a typed method whose result does not match its schema fails with the server's public reason, as an untyped one does", async () => {
  const small = defineAgentType({ name: "small", constructor: t.record({}), methods: { byte: { params: t.record({}), result: t.u8() } } });
  // A JavaScript caller (no type checker) returning 300 where a u8 is declared.
  const typed = implement(small, { byte: () => 300 as never });
  let url: string;
  ({ server, url } = await serveTestAgents(new MemorySessionStore(), [typed]));
  const client = await RawClient.connect(url);
  client.send(agentStart("test", "small", "byte", v.record() as SchemaValueJson));
  expect((await client.all()).messages.at(-1)).toEqual({
    type: "invocationFinished",
    outcome: {
      kind: "failure",
      code: "invocation-failed",
      message: expect.stringMatching(/^the method's result does not match its declared schema: .*255/),
    },
  });
});

it("a typed result or output item over the value's byte charge is refused as over a limit, not as a schema mismatch", async () => {
  const big = defineAgentType({
    name: "big",
    constructor: t.record({}),
    methods: { one: { params: t.record({}), result: t.string() }, many: { params: t.record({}), result: t.stream(t.string()) } },
  });
  const huge = "x".repeat(8 * 1024 * 1024 + 10);
  const typed = implement(big, { one: () => huge, many: () => ["small", huge] });
  let url: string;
  ({ server, url } = await serveTestAgents(new MemorySessionStore(), [typed]));
  const one = await RawClient.connect(url);
  one.send(agentStart("test", "big", "one", v.record() as SchemaValueJson));
  expect((await one.all()).messages.at(-1)).toMatchObject({
    type: "invocationFinished",
    outcome: { kind: "failure", message: expect.stringMatching(/^the method's result is over a limit: .*byte charge exceeds 8388608/) },
  });
  const many = await RawClient.connect(url);
  many.send(agentStart("test", "big", "many", v.record() as SchemaValueJson));
  expect((await many.all()).messages).toContainEqual(
    expect.objectContaining({
      type: "outputStreamEnd",
      outcome: {
        kind: "error",
        code: "producer-error",
        message: expect.stringMatching(/^an output item is over a limit: .*byte charge exceeds 8388608/),
      },
    }),
  );
});

it("an untyped result or output item whose charge fits but whose text passes 8 MiB is refused as not fitting in a message, not as producer failed", async () => {
  // Charged at its bytes (within the 8 MiB charge), but its node's text around it passes the 8 MiB a message holds.
  const nearly = { kind: "string", value: "x".repeat(8 * 1024 * 1024 - 10) } as SchemaValueJson;
  const big: AgentTypeDefinition = {
    name: "near",
    constructorParameters: EMPTY,
    config: [],
    methods: [
      { name: "one", parameters: EMPTY, result: t.graph(t.string()) },
      { name: "many", parameters: EMPTY, result: t.graph(t.stream(t.string())) },
    ],
    implementations: { one: async () => nearly, many: async (ctx) => ctx.output([nearly]) },
  };
  let url: string;
  ({ server, url } = await serveTestAgents(new MemorySessionStore(), [big]));
  const one = await RawClient.connect(url);
  one.send(agentStart("test", "near", "one", v.record() as SchemaValueJson));
  expect((await one.all()).messages.at(-1)).toMatchObject({
    type: "invocationFinished",
    outcome: { kind: "failure", message: "the result does not fit in one 8 MiB message" },
  });
  const many = await RawClient.connect(url);
  many.send(agentStart("test", "near", "many", v.record() as SchemaValueJson));
  expect((await many.all()).messages).toContainEqual(
    expect.objectContaining({
      type: "outputStreamEnd",
      outcome: { kind: "error", code: "producer-error", message: "an output item does not fit in one 8 MiB message" },
    }),
  );
});

it("a typed method declared without a result ignores what a JavaScript implementation returns, as a void function type does; an untyped one's value is refused", async () => {
  const cache = new Map([["k", 1]]);
  const store = defineAgentType({
    name: "store",
    constructor: t.record({}),
    methods: { forget: { params: t.record({ key: t.string() }) } },
  });
  // A JavaScript module (no type checker) returning what `Map.prototype.delete` returns, a boolean.
  const typed = implement(store, { forget: ((_ctx: unknown, { key }: { key: string }) => cache.delete(key)) as never });
  const untyped: AgentTypeDefinition = {
    name: "raw",
    constructorParameters: EMPTY,
    config: [],
    methods: [{ name: "forget", parameters: EMPTY }],
    implementations: { forget: async () => ({ kind: "bool", value: true }) as SchemaValueJson },
  };
  let url: string;
  ({ server, url } = await serveTestAgents(new MemorySessionStore(), [typed, untyped]));
  const client = await RawClient.connect(url);
  client.send(agentStart("test", "store", "forget", v.record(v.str("k")) as SchemaValueJson));
  expect((await client.all()).messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
  expect(cache.has("k")).toBe(false);
  const raw = await RawClient.connect(url);
  raw.send(agentStart("test", "raw", "forget", v.record() as SchemaValueJson));
  expect((await raw.all()).messages.at(-1)).toMatchObject({
    type: "invocationFinished",
    outcome: { kind: "failure", message: "the method has no result, yet returned a value" },
  });
});

it("a typed method whose result's stream is not one: the public reason and the log say so, not only that the value is not well-formed", async () => {
  const lines: unknown[] = [];
  const logger = { info: () => undefined, error: () => undefined, warn: (_message: string, fields?: unknown) => void lines.push(fields) };
  const streaming = defineAgentType({
    name: "streaming",
    constructor: t.record({}),
    methods: { lines: { params: t.record({}), result: t.stream(t.string()) } },
  });
  // A JavaScript caller returning a number where the stream's source belongs.
  const typed = implement(streaming, { lines: () => 42 as never });
  let url: string;
  ({ server, url } = await serveTestAgents(new MemorySessionStore(), [typed], { logger }));
  const client = await RawClient.connect(url);
  client.send(agentStart("test", "streaming", "lines", v.record() as SchemaValueJson));
  expect((await client.all()).messages.at(-1)).toEqual({
    type: "invocationFinished",
    outcome: {
      kind: "failure",
      code: "invocation-failed",
      message:
        "the method's result does not match its declared schema: an output stream at the result must be an async iterable, an iterable or a function of a writer",
    },
  });
  expect(lines).toContainEqual(
    expect.objectContaining({
      event: "invocation.failed",
      error: expect.stringMatching(/: an output stream at the result must be an async iterable/),
    }),
  );
});

it("an agent that throws a value with no string form, or an error caused by one, fails its invocation; the server logs it and serves on", async () => {
  const lines: unknown[] = [];
  const logger = { info: () => undefined, error: () => undefined, warn: (_message: string, fields?: unknown) => void lines.push(fields) };
  const unprintable: AgentTypeDefinition = {
    name: "unprintable",
    constructorParameters: EMPTY,
    config: [],
    methods: [
      { name: "bare", parameters: EMPTY },
      { name: "caused", parameters: EMPTY },
    ],
    implementations: {
      bare: () => Promise.reject(Object.create(null) as Error),
      caused: () => Promise.reject(new Error("the agent failed", { cause: Object.create(null) })),
    },
  };
  let url: string;
  ({ server, url } = await serveTestAgents(new MemorySessionStore(), [unprintable], { logger }));
  for (const method of ["bare", "caused", "bare"]) {
    const client = await RawClient.connect(url);
    client.send(agentStart("test", "unprintable", method, v.record() as SchemaValueJson));
    expect((await client.all()).messages.at(-1)).toEqual({
      type: "invocationFinished",
      outcome: { kind: "failure", code: "invocation-failed", message: "invocation failed" },
    });
  }
  expect(lines).toContainEqual(expect.objectContaining({ event: "invocation.failed", error: "[object Object]" }));
  expect(lines).toContainEqual(
    expect.objectContaining({ event: "invocation.failed", error: "Error: the agent failed (caused by [object Object])" }),
  );
});

it("implement refuses a method named like an Object.prototype member that it was not given", () => {
  const named = defineAgentType({
    name: "named",
    constructor: t.record({}),
    methods: { toString: { params: t.record({}), result: t.string() } },
  });
  expect(() => implement(named, {} as never)).toThrow(/method toString has no implementation/);
  expect(() => implement(named, { toString: () => "own" })).not.toThrow();
});

it("implement gives methods named __proto__ and constructor their own implementations, which a server runs", async () => {
  const odd = defineAgentType({
    name: "odd",
    constructor: t.record({}),
    methods: { ["__proto__"]: { params: t.record({}), result: t.string() }, constructor: { params: t.record({}), result: t.string() } },
  });
  const definition = implement(odd, { ["__proto__"]: () => "proto", constructor: () => "constructor" } as never);
  expect(Object.getPrototypeOf(definition.implementations)).toBe(Object.prototype);
  expect(Object.keys(definition.implementations).sort()).toEqual(["__proto__", "constructor"]);
  let url: string;
  ({ server, url } = await serveTestAgents(new MemorySessionStore(), [definition]));
  for (const name of ["__proto__", "constructor"]) {
    const client = await RawClient.connect(url);
    client.send(agentStart("test", "odd", name, v.record() as SchemaValueJson));
    const { messages } = await client.all();
    expect(messages.find((m) => m.type === "invocationResult")).toMatchObject({
      result: { kind: "value", value: { kind: "string", value: name === "__proto__" ? "proto" : "constructor" } },
    });
  }
});

it("implement refuses a method its contract does not declare, listing the methods it does", () => {
  const tally = defineAgentType({
    name: "tally",
    constructor: t.record({}),
    methods: { sum: { params: t.record({}), result: t.u32() }, countdown: { params: t.record({}), result: t.u32() } },
  });
  // A JavaScript caller (no type checker) misspelling countdown.
  const misspelt = { sum: () => 1, countdown: () => 2, countDown: () => 3 } as never;
  expect(() => implement(tally, misspelt)).toThrow(/^agent type tally declares no method countDown \(methods: sum, countdown\)$/);
});
