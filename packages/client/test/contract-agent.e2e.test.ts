/**
 * Typed calls from a contract over real loopback WebSockets: every demo method
 * through `typedAgent(client, echoContract)`, a connection cut mid-stream, the
 * contract check against the catalogue, and a contract of its own served by a
 * `StaticAgentHost` next to an untyped definition.
 */
import { echoContract } from "@golem-stream/contract/demo";
import { implement, StaticAgentHost, type AgentTypeDefinition } from "@golem-stream/server";
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from "vitest";
import { ClientError, ContractError, createClient, defineAgentType, t, typedAgent, type Client, type TypedOutput } from "../src/index.js";
import { collect, randomChunks, sha256 } from "./support/demo.js";
import { TOKEN, startServerWithClient, type TestServer, startHostServer } from "./support/embedded.js";
import { startTcpProxy } from "@golem-stream/test-support";
import { typedMethods } from "../src/contract-agent.js";

let server: TestServer;
let client: Client;
beforeAll(async () => ({ server, client } = await startServerWithClient()));
afterAll(async () => server.dispose());

const where = { application: "demo", environment: "default" } as const;
const concat = (chunks: Uint8Array[]): Uint8Array => {
  const out = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.length, 0));
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
};

describe("typedAgent(client, echoContract): every demo method, typed", () => {
  it("reverse: a stream<string> parameter from an array, a TypedOutput<string> result", async () => {
    const echo = await typedAgent(client, echoContract, { ...where, constructorArgs: { name: "typed" } });
    const reversed = await echo.reverse({ input: ["abc", "héllo", "😀x"] });
    expect(await collect(reversed)).toEqual(["cba", "olléh", "x😀"]);
  });

  it("digest: a stream<u8> parameter from chunks, a record with a bigint", async () => {
    const echo = await typedAgent(client, echoContract, { ...where, constructorArgs: { name: "typed" } });
    const { chunks, all } = randomChunks(200_000, 30_000);
    const call = echo.digest({ data: chunks });
    expect(await call).toEqual({ bytes: BigInt(all.length), sha256: sha256(all) });
    await expect(call.finished).resolves.toEqual({ kind: "success" });
  });

  it("count, blobs: numbers and binary items", async () => {
    const echo = await typedAgent(client, echoContract, { ...where, constructorArgs: { name: "typed" } });
    expect(await collect(await echo.count({ to: 5, delayMs: 0 }))).toEqual([0, 1, 2, 3, 4]);
    const blobs = await collect(await echo.blobs({ count: 3, size: 4 }));
    expect(blobs.every((blob) => blob.bytes instanceof Uint8Array)).toBe(true);
    expect(blobs.map((blob) => ({ bytes: [...blob.bytes], mimeType: blob.mimeType }))).toEqual([
      { bytes: [0, 1, 2, 3], mimeType: "application/octet-stream" },
      { bytes: [1, 2, 3, 4], mimeType: "application/octet-stream" },
      { bytes: [2, 3, 4, 5], mimeType: "application/octet-stream" },
    ]);
  });

  it("split: two output streams of a record result, bytes and strings, read together", async () => {
    const echo = await typedAgent(client, echoContract, { ...where, constructorArgs: { name: "typed" } });
    const text = Array.from({ length: 400 }, (_, i) => `line ${i} ünïcode`).join("\n");
    const bytes = new TextEncoder().encode(text);
    const { upper, lines } = await echo.split({ data: [bytes.subarray(0, 1000), bytes.subarray(1000)] });
    const [upperChunks, lineItems] = await Promise.all([collect(upper), collect(lines)]);
    expect(new TextDecoder().decode(concat(upperChunks))).toBe(text.replace(/[a-z]/g, (c) => c.toUpperCase()));
    expect(lineItems).toEqual(text.split("\n"));
  });

  it("groups: a stream of records whose items are nested typed streams", async () => {
    const echo = await typedAgent(client, echoContract, { ...where, constructorArgs: { name: "typed" } });
    const groups = await echo.groups({ groups: 3, per: 4 });
    const seen: [string, number[]][] = [];
    for await (const group of groups) seen.push([group.name, await collect(group.items)]);
    expect(seen).toEqual([0, 1, 2].map((g) => [`group-${g}`, [0, 1, 2, 3]]));
  });

  it("fail: items, then the stream's typed error", async () => {
    const echo = await typedAgent(client, echoContract, { ...where, constructorArgs: { name: "typed" } });
    const failing = await echo.fail({ after: 2 });
    const seen: number[] = [];
    const error = await (async () => {
      try {
        for await (const item of failing) seen.push(item);
      } catch (e) {
        return e;
      }
    })();
    expect(seen).toEqual([0, 1]);
    expect(error).toMatchObject({ kind: "stream-failed", code: "producer-error" });
  });

  it("tally: a stream<string> from an async generator, a record of bigints", async () => {
    const echo = await typedAgent(client, echoContract, { ...where, constructorArgs: { name: "typed" } });
    async function* words(): AsyncGenerator<string> {
      for (let i = 0; i < 100; i++) yield `wörd-${i}`;
    }
    const expectedBytes = Array.from({ length: 100 }, (_, i) => Buffer.byteLength(`wörd-${i}`)).reduce((a, b) => a + b, 0);
    expect(await echo.tally({ input: words() })).toEqual({ items: 100n, bytes: BigInt(expectedBytes) });
  });

  it("exposes the untyped handle: the stream under a TypedOutput, cancel through it", async () => {
    const echo = await typedAgent(client, echoContract, { ...where, constructorArgs: { name: "typed" } });
    const call = echo.count({ to: 1_000_000, delayMs: 5 });
    const counted: TypedOutput<number> = await call;
    expect(counted.stream.coordinate).toBe("");
    const first: number[] = [];
    for await (const item of counted) {
      first.push(item);
      if (first.length === 3) break;
    }
    expect(first).toEqual([0, 1, 2]);
    await counted.cancel();
    await call.finished.catch(() => undefined);
    expect(call.invocation.streams).toHaveLength(1);
  });
});

describe("typed calls across a connection cut", () => {
  it("count and split deliver every item exactly once, in order, when the connection dies mid-stream", async () => {
    const proxy = await startTcpProxy({ upstream: server.url });
    try {
      const cutting = createClient({ url: proxy.url, token: TOKEN, reconnect: { initialDelayMs: 5, maxDelayMs: 40, maxAttempts: 30 } });
      const echo = await typedAgent(cutting, echoContract, { ...where, constructorArgs: { name: "cut" } });

      const numbers: number[] = [];
      for await (const n of await echo.count({ to: 400, delayMs: 0 })) {
        numbers.push(n);
        if (n === 100 || n === 250) proxy.cutOpen();
      }
      expect(numbers).toEqual(Array.from({ length: 400 }, (_, i) => i));

      const { chunks, all } = randomChunks(600_000, 40_000);
      const text = new TextDecoder().decode(all);
      const call = echo.split({ data: chunks });
      const { upper, lines } = await call;
      let cutDone = false;
      const [upperChunks, lineCount] = await Promise.all([
        (async () => {
          const out: Uint8Array[] = [];
          for await (const chunk of upper) {
            out.push(chunk);
            if (!cutDone && out.length === 3) {
              cutDone = true;
              proxy.cutOpen();
            }
          }
          return out;
        })(),
        (async () => {
          let count = 0;
          for await (const _line of lines) count++;
          return count;
        })(),
      ]);
      await call.finished;
      expect(sha256(concat(upperChunks))).toBe(sha256(all.map((b) => (b >= 0x61 && b <= 0x7a ? b - 0x20 : b))));
      expect(lineCount).toBe(text.endsWith("\n") ? text.split("\n").length - 1 : text.split("\n").length);
      expect(proxy.cuts).toBeGreaterThanOrEqual(3);
    } finally {
      await proxy.close();
    }
  });
});

describe("the contract is checked against the catalogue", () => {
  it("a contract whose schema differs fails with contract-mismatch, listing each difference", async () => {
    const drifted = defineAgentType({
      name: "echo",
      constructor: t.record({ name: t.string() }),
      methods: {
        count: { params: t.record({ to: t.u64(), delayMs: t.u32() }), result: t.stream(t.u32()) },
        shout: { params: t.record({ text: t.string() }), result: t.string() },
      },
    });
    const error = await typedAgent(client, drifted, { ...where, constructorArgs: { name: "x" } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ClientError);
    expect(error).toMatchObject({ kind: "contract-mismatch" });
    const cause = (error as ClientError).cause;
    expect(cause).toBeInstanceOf(ContractError);
    expect((cause as ContractError).differences).toEqual([
      "method count: the parameters differ at parameters.to: the contract has u64, the server u32",
      "method shout is not in the server's catalogue",
    ]);
  });

  it("a different constructor is a contract-mismatch, found before the arguments are converted", async () => {
    const renamed = defineAgentType({ name: "echo", constructor: t.record({ title: t.u32() }), methods: {} });
    // { title: 1 } does not fit the server's {name: string}: the check must come first to say why.
    const error = await typedAgent(client, renamed, { ...where, constructorArgs: { title: 1 } }).catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: "contract-mismatch" });
    expect(((error as ClientError).cause as ContractError).differences).toEqual([
      "the constructor parameters differ at constructor: the contract has record{title: u32}, the server record{name: string}",
    ]);
  });

  it("an agent type the server does not have is rejected with not-found", async () => {
    const absent = defineAgentType({ name: "nobody", constructor: t.record({}), methods: {} });
    await expect(typedAgent(client, absent, { ...where, constructorArgs: {} })).rejects.toMatchObject({
      kind: "rejected",
      code: "not-found",
    });
  });

  it("an application the server does not have is rejected with not-found, naming the application and environment asked for", async () => {
    const error = await typedAgent(client, echoContract, { ...where, application: "dem0", constructorArgs: { name: "x" } }).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ kind: "rejected", code: "not-found" });
    expect((error as ClientError).message).toContain(`(asked for application "dem0", environment "${where.environment}")`);
  });

  it("a contract method named then is refused (the agent would be a thenable)", () => {
    const thenable = defineAgentType({ name: "echo", constructor: t.record({}), methods: { then: { params: t.record({}) } } });
    const untyped = { schema: undefined as never, invoke: () => undefined as never };
    expect(() => typedMethods(thenable, untyped)).toThrow(expect.objectContaining({ kind: "invalid-argument" }));
  });

  it("contract methods named __proto__ and constructor are the typed agent's own methods, each invoking its method", () => {
    const odd = defineAgentType({
      name: "odd",
      constructor: t.record({}),
      methods: { ["__proto__"]: { params: t.record({}) }, constructor: { params: t.record({}) } },
    });
    const invoked: string[] = [];
    const recording = {
      schema: undefined as never,
      invoke: (name: string) => (invoked.push(name), new Promise<never>(() => undefined)) as never,
    };
    const typed = typedMethods(odd, recording) as unknown as Record<string, (params: unknown) => unknown>;
    expect(Object.getPrototypeOf(typed)).toBe(Object.prototype);
    expect(Object.keys(typed).sort()).toEqual(["__proto__", "constructor"]);
    for (const name of ["__proto__", "constructor"]) (Object.getOwnPropertyDescriptor(typed, name)?.value as (p: unknown) => unknown)({});
    expect(invoked).toEqual(["__proto__", "constructor"]);
  });

  it("a result of another type than the contract's (the catalogue changed after the check) is a contract-mismatch; the untyped result is still there", async () => {
    // The contract the client was built with, against a server since started with another build
    // (digest's bytes a u64 now, count's items u32): typed on the untyped agent, as after a check that passed.
    const older = defineAgentType({
      name: "echo",
      constructor: t.record({ name: t.string() }),
      methods: {
        digest: { params: t.record({ data: t.stream(t.u8()) }), result: t.record({ bytes: t.u32(), sha256: t.string() }) },
        count: { params: t.record({ to: t.u32(), delayMs: t.u32() }), result: t.stream(t.u64()) },
        reverse: { params: t.record({ input: t.stream(t.string()) }), result: t.stream(t.string()) },
      },
    });
    const agent = await client.agent({ ...where, agentType: "echo", constructorArgs: { name: "drift" } });
    const typed = typedMethods(older, agent);
    const digest = typed.digest({ data: [Uint8Array.of(1, 2, 3)] });
    const error = await digest.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ClientError);
    expect(error).toMatchObject({ kind: "contract-mismatch" });
    expect(((error as ClientError).cause as ContractError).differences).toEqual([
      "method digest: the result differs at result.bytes: the contract has u32, the server u64",
    ]);
    expect((error as ClientError).message).toContain("call.invocation.result still has this result, untyped");
    const untyped = await digest.invocation.result;
    expect(untyped.kind === "value" && untyped.js()).toEqual({ bytes: 3n, sha256: sha256(Uint8Array.of(1, 2, 3)) });
    await expect(digest.finished).resolves.toEqual({ kind: "success" });
    // A stream result's element type is part of the result's graph.
    await expect(typed.count({ to: 2, delayMs: 0 })).rejects.toMatchObject({ kind: "contract-mismatch" });
    // A method whose result still agrees is typed as before.
    expect(await collect(await typed.reverse({ input: ["ab"] }))).toEqual(["ba"]);
  });

  it("constructor arguments are converted with the schema: a wrong shape is invalid-argument", async () => {
    const wrong = { ...where, constructorArgs: { name: 7 } } as unknown as Parameters<typeof typedAgent<typeof echoContract>>[2];
    await expect(typedAgent(client, echoContract, wrong)).rejects.toMatchObject({ kind: "invalid-argument", code: "validation-error" });
  });
});

// A contract of its own: binary input, a result-less method, a stream inside a variant,
// a push-style (writer) output, the constructor as JavaScript, a result the codec refuses,
// and graphs with defs: a parameter record behind a ref, a recursive def, a ref typed by its def.
const treeNode = t.record({ value: t.u32(), kids: t.list(t.ref("node")) });
const walkArgs = t.record({ tree: t.ref<typeof treeNode>("node") });
const leaf = t.meta(t.u32(), { doc: "one node's value" });
const lab = defineAgentType({
  name: "lab",
  constructor: t.record({ owner: t.string(), quota: t.u64() }),
  methods: {
    whoami: { params: t.record({}), result: t.record({ owner: t.string(), quota: t.u64() }) },
    upload: {
      params: t.record({ files: t.stream(t.binary()), label: t.option(t.string()) }),
      result: t.record({ count: t.u32(), total: t.u64(), types: t.list(t.string()), label: t.option(t.string()) }),
    },
    ping: { params: t.record({ n: t.u32() }) },
    maybeLines: { params: t.record({ text: t.option(t.string()) }), result: t.variant({ lines: t.stream(t.string()), nothing: null }) },
    ticks: { params: t.record({ n: t.u32() }), result: t.stream(t.record({ at: t.u32(), even: t.bool() })) },
    tooBig: { params: t.record({}), result: t.u8() },
    walk: {
      params: t.graph(t.ref<typeof walkArgs>("args"), [
        { id: "args", body: walkArgs },
        { id: "node", name: "Tree node", body: treeNode },
      ]),
      result: t.graph(t.stream(t.ref<typeof leaf>("leaf")), { leaf }),
    },
  },
});

type TreeNode = { value: number; kids: TreeNode[] };

const pings: number[] = [];
const LAB = implement(lab, {
  async whoami(ctx) {
    return ctx.constructorArgs;
  },
  async upload(_ctx, { files, label }) {
    let count = 0;
    let total = 0n;
    const types: string[] = [];
    for await (const file of files) {
      count++;
      total += BigInt(file.bytes.length);
      types.push(file.mimeType ?? "");
    }
    return { count, total, types, label };
  },
  async ping(_ctx, { n }) {
    pings.push(n);
  },
  async maybeLines(_ctx, { text }) {
    return text === undefined ? { case: "nothing" } : { case: "lines", value: text.split("\n") };
  },
  async ticks(_ctx, { n }) {
    return async (writer) => {
      for (let at = 0; at < n; at++) await writer.write({ at, even: at % 2 === 0 });
    };
  },
  async tooBig() {
    // A lie the compiler cannot see: the codec refuses it before anything is recorded.
    return 300;
  },
  async walk(_ctx, { tree }) {
    // tree.kids is unknown[] to the compiler (a recursive def); the codec built it from the schema.
    const values = (node: TreeNode): number[] => [node.value, ...node.kids.flatMap(values)];
    return values(tree as TreeNode);
  },
});

// Untyped, in the same host: the old way still works next to contracts.
const RAW: AgentTypeDefinition = {
  name: "raw",
  constructorParameters: { root: { kind: "record", value: { fields: [] } } },
  methods: [{ name: "one", parameters: { root: { kind: "record", value: { fields: [] } } }, result: { root: { kind: "u32", value: {} } } }],
  config: [],
  implementations: { one: async () => ({ kind: "u32", value: 1 }) },
};

describe("a contract of its own, next to an untyped definition", () => {
  let url: string;
  let close: () => Promise<void>;
  let labClient: Client;
  beforeAll(async () => ({ url, client: labClient, close } = await startHostServer({ app: { prod: [LAB, RAW] } })));
  afterAll(async () => close());

  const at = { application: "app", environment: "prod" } as const;

  it("the constructor reaches the method as JavaScript (a bigint for u64)", async () => {
    const agent = await typedAgent(labClient, lab, { ...at, constructorArgs: { owner: "ada", quota: 2n ** 40n } });
    expect(await agent.whoami({})).toEqual({ owner: "ada", quota: 2n ** 40n });
  });

  it("stream<binary> input: bytes and blobs with MIME types; options in and out", async () => {
    const agent = await typedAgent(labClient, lab, { ...at, constructorArgs: { owner: "ada", quota: 1n } });
    const files = [Uint8Array.from([1, 2, 3]), { bytes: Uint8Array.from([4]), mimeType: "text/plain" }];
    expect(await agent.upload({ files, label: "two" })).toEqual({ count: 2, total: 4n, types: ["", "text/plain"], label: "two" });
    expect(await agent.upload({ files: [], label: undefined })).toEqual({ count: 0, total: 0n, types: [], label: undefined });
  });

  it("a method without a result resolves to undefined after running", async () => {
    const agent = await typedAgent(labClient, lab, { ...at, constructorArgs: { owner: "ada", quota: 1n } });
    const call = agent.ping({ n: 42 });
    expect(await call).toBeUndefined();
    await call.finished;
    expect(pings).toContain(42);
  });

  it("a stream inside a variant, and a writer-style producer of records", async () => {
    const agent = await typedAgent(labClient, lab, { ...at, constructorArgs: { owner: "ada", quota: 1n } });
    const some = await agent.maybeLines({ text: "a\nb" });
    if (some.case !== "lines") throw new Error("expected lines");
    expect(await collect(some.value)).toEqual(["a", "b"]);
    expect(await agent.maybeLines({ text: undefined })).toEqual({ case: "nothing" });
    expect(await collect(await agent.ticks({ n: 3 }))).toEqual([
      { at: 0, even: true },
      { at: 1, even: false },
      { at: 2, even: true },
    ]);
  });

  it("a result the schema refuses fails the invocation; nothing invalid is sent", async () => {
    const agent = await typedAgent(labClient, lab, { ...at, constructorArgs: { owner: "ada", quota: 1n } });
    const call = agent.tooBig({});
    await expect(call.result).rejects.toMatchObject({ kind: "invocation-failed" });
  });

  it("graphs with defs: a parameter record behind a ref, a recursive def, a stream of a typed ref", async () => {
    const agent = await typedAgent(labClient, lab, { ...at, constructorArgs: { owner: "ada", quota: 1n } });
    const tree: TreeNode = {
      value: 1,
      kids: [
        { value: 2, kids: [] },
        { value: 3, kids: [{ value: 4, kids: [] }] },
      ],
    };
    const walked = await agent.walk({ tree });
    expectTypeOf(walked).toEqualTypeOf<TypedOutput<number>>();
    expect(await collect(walked)).toEqual([1, 2, 3, 4]);
    // The codec checks the recursive part too.
    const refused = (() => {
      try {
        return agent.walk({ tree: { value: 1, kids: [{ value: -1, kids: [] }] } });
      } catch (error) {
        return error;
      }
    })();
    expect(refused).toMatchObject({
      kind: "invalid-argument",
      message: expect.stringMatching(/^walk\.tree\.kids\[0\]\.value: must be an integer/),
    });
  });

  it("the untyped definition in the same host answers untyped calls", async () => {
    const call = labClient.invoke({
      ...at,
      agentType: "raw",
      constructorParameters: { kind: "record", value: { fields: [] } },
      method: "one",
      methodParameters: { kind: "record", value: { fields: [] } },
    });
    const result = await call.result;
    expect(result.kind === "value" ? result.value : undefined).toEqual({ kind: "u32", value: 1 });
  });
});

describe("client.connect(contract, { application, environment, constructor }): the issue's entry point", () => {
  it("types every method from the contract, as typedAgent does: split gives typed upper and lines", async () => {
    const echo = await client.connect(echoContract, { ...where, constructor: { name: "connected" } });
    const { upper, lines } = await echo.split({ data: [new TextEncoder().encode("ab\ncd\n")] });
    const [upperChunks, lineItems] = await Promise.all([collect(upper), collect(lines)]);
    expect(new TextDecoder().decode(concat(upperChunks))).toBe("AB\nCD\n");
    expect(lineItems).toEqual(["ab", "cd"]);
  });

  it("takes constructorArgs too, and refuses options without the constructor's parameters (every object inherits a constructor)", async () => {
    const echo = await client.connect(echoContract, { ...where, constructorArgs: { name: "connected" } });
    expect(await collect(await echo.count({ to: 2, delayMs: 0 }))).toEqual([0, 1]);
    // As a caller who forgot the option would get past the compiler: every object has a constructor.
    const missing = { ...where } as unknown as { application: string; environment: string; constructor: { name: string } };
    await expect(async () => client.connect(echoContract, missing)).rejects.toMatchObject({ kind: "invalid-argument" });
  });
});

describe("errors say what the library knows", () => {
  it("an input source that throws: the output's failure names the input and carries its error", async () => {
    const echo = await typedAgent(client, echoContract, { ...where, constructorArgs: { name: "typed" } });
    const boom = new Error("the disk went away");
    async function* failing(): AsyncGenerator<string> {
      yield "abc";
      throw boom;
    }
    const reversed = await echo.reverse({ input: failing() });
    const error = await collect(reversed).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ClientError);
    expect(error).toMatchObject({
      kind: "stream-failed",
      code: "producer-error",
      message:
        "an input of this call failed: the disk went away. The client cancelled that input, and the agent's method then failed this output (the server says: producer failed)",
    });
    expect((error as ClientError).cause).toBe(boom);
  });

  it("a server that cannot be reached: connection-lost names the discovery URL and the cause", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const nowhere = createClient({ url: `ws://127.0.0.1:${port}`, token: TOKEN });
    const error = await typedAgent(nowhere, echoContract, { ...where, constructorArgs: { name: "x" } }).catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: "connection-lost" });
    expect((error as ClientError).message).toBe(
      `could not reach the discovery endpoint http://127.0.0.1:${port}/v1/agents/types?application=demo&environment=default: connect ECONNREFUSED 127.0.0.1:${port}`,
    );
  });

  it("a contract-mismatch says where the schemas part and what each side has", async () => {
    const drifted = defineAgentType({
      name: "echo",
      constructor: t.record({ name: t.string() }),
      methods: { count: { params: t.record({ to: t.u32(), delayMs: t.u32() }), result: t.stream(t.u64()) } },
    });
    const error = await typedAgent(client, drifted, { ...where, constructorArgs: { name: "x" } }).catch((e: unknown) => e);
    expect((error as ClientError).message).toContain(
      "method count: the result differs at result[stream item]: the contract has u64, the server u32",
    );
  });
});
