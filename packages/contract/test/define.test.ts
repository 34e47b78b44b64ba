/**
 * `defineAgentType` at run time: the graphs it produces, the contracts it
 * refuses, and the demo contract's graphs, which must equal the literal
 * decisions-v1 section 7 catalogue the server served before contracts.
 */
import { decodeSchemaGraph, type JsonObject, type SchemaGraphJson } from "@golem-stream/schema-value";
import { describe, expect, it } from "vitest";
import { ContractError, defineAgentType, t, type RecordSchema } from "../src/index.js";
import { echoContract } from "../src/demo.js";

// The catalogue as it was written out literally in packages/server/src/demo/catalogue.ts.
const string: JsonObject = { kind: "string", value: {} };
const u8: JsonObject = { kind: "u8", value: {} };
const u32: JsonObject = { kind: "u32", value: {} };
const u64: JsonObject = { kind: "u64", value: {} };
const f64: JsonObject = { kind: "f64", value: {} };
const binary: JsonObject = { kind: "binary", value: { restrictions: {} } };
const stream = (inner: JsonObject): JsonObject => ({ kind: "stream", value: { inner } });
const record = (...fields: [string, JsonObject][]): JsonObject => ({
  kind: "record",
  value: { fields: fields.map(([name, body]) => ({ name, body })) },
});
const atMost = (kind: string, max: number): JsonObject => ({
  kind,
  value: { restrictions: { max: { kind: "unsigned", value: String(max) } } },
});
const graph = (root: JsonObject): SchemaGraphJson => ({ root }) as unknown as SchemaGraphJson;
const LITERAL_METHODS = [
  { name: "reverse", parameters: graph(record(["input", stream(string)])), result: graph(stream(string)) },
  { name: "digest", parameters: graph(record(["data", stream(u8)])), result: graph(record(["bytes", u64], ["sha256", string])) },
  { name: "count", parameters: graph(record(["to", u32], ["delayMs", u32])), result: graph(stream(u32)) },
  {
    name: "blobs",
    parameters: graph(record(["count", atMost("u32", 65_536)], ["size", atMost("u32", 16 * 1024 * 1024)])),
    result: graph(stream(binary)),
  },
  {
    name: "split",
    parameters: graph(record(["data", stream(u8)])),
    result: graph(record(["upper", stream(u8)], ["lines", stream(string)])),
  },
  {
    name: "groups",
    parameters: graph(record(["groups", u32], ["per", u32])),
    result: graph(stream(record(["name", string], ["items", stream(u32)]))),
  },
  { name: "fail", parameters: graph(record(["after", u32])), result: graph(stream(u32)) },
  { name: "tally", parameters: graph(record(["input", stream(string)])), result: graph(record(["items", u64], ["bytes", u64])) },
  {
    name: "journal",
    parameters: graph(record(["to", u32], ["delayMs", u32])),
    result: graph(stream(record(["index", u32], ["step", string], ["now", u64], ["random", f64]))),
  },
];

describe("the demo contract", () => {
  it("has exactly the literal section 7 graphs (blobs bounded), in order, member for member", () => {
    expect(echoContract.name).toBe("echo");
    expect(echoContract.graphs.constructorParameters).toStrictEqual(graph(record(["name", string])));
    // JSON text too: the discovery endpoint serialises these objects as they are.
    expect(JSON.stringify(echoContract.graphs.methods)).toBe(JSON.stringify(LITERAL_METHODS));
    expect(echoContract.graphs.config).toEqual([]);
  });
});

describe("defineAgentType: durability", () => {
  it("resolves each method's durability (its own, else the agent type's) beside the graphs, which stay as discovery serves them", () => {
    const spec = {
      name: "jobs",
      constructor: t.record({}),
      durability: "replay" as const,
      methods: {
        run: { params: t.record({}), result: t.u32() },
        notify: { params: t.record({}), durability: "none" as const },
      },
    };
    const jobs = defineAgentType(spec);
    expect(jobs.durability).toEqual({ run: "replay", notify: "none" });
    expect(jobs.graphs.methods.map((m) => Object.keys(m).sort())).toEqual([
      ["name", "parameters", "result"],
      ["name", "parameters"],
    ]);
    expect(defineAgentType({ ...spec, durability: undefined }).durability).toEqual({ notify: "none" });
    expect(echoContract.durability).toMatchObject({ count: "replay", digest: "replay", fail: "none" });
  });

  it("keeps the durability of methods named __proto__ and constructor as their own entries", () => {
    const odd = defineAgentType({
      name: "odd",
      constructor: t.record({}),
      durability: "replay",
      methods: { ["__proto__"]: { params: t.record({}) }, constructor: { params: t.record({}), durability: "none" as const } },
    });
    expect(Object.getPrototypeOf(odd.durability)).toBe(Object.prototype);
    expect(Object.entries(odd.durability).sort()).toEqual([
      ["__proto__", "replay"],
      ["constructor", "none"],
    ]);
  });

  it("refuses a durability that is neither none nor replay", () => {
    const bad = { name: "jobs", constructor: t.record({}), methods: { run: { params: t.record({}), durability: "always" } } };
    expect(() => defineAgentType(bad as never)).toThrow(/agent type jobs: method run: durability must be "none" or "replay", not "always"/);
    expect(() => defineAgentType({ name: "jobs", constructor: t.record({}), durability: 1, methods: {} } as never)).toThrow(ContractError);
  });
});

describe("defineAgentType", () => {
  it("builds one graph per method, a result only where one is declared, config kept", () => {
    const contract = defineAgentType({
      name: "store",
      constructor: t.record({ bucket: t.string() }),
      config: [{ path: ["limits", "size"] }],
      methods: {
        put: { params: t.record({ key: t.string(), body: t.stream(t.u8()) }) },
        size: { params: t.record({}), result: t.u64() },
      },
    });
    expect(contract.graphs.methods.map((method) => method.name)).toEqual(["put", "size"]);
    expect(contract.graphs.methods[0]).not.toHaveProperty("result");
    expect(contract.graphs.methods[1]?.result).toEqual({ root: { kind: "u64", value: {} } });
    expect(contract.graphs.config).toEqual([{ path: ["limits", "size"] }]);
    for (const method of contract.graphs.methods) expect(() => decodeSchemaGraph(method.parameters)).not.toThrow();
    expect(Object.isFrozen(contract)).toBe(true);
  });

  it("takes graphs where a schema needs defs, keeping them as given; a parameter record may sit behind a ref", () => {
    const node = t.record({ value: t.u8(), next: t.option(t.ref("node")) });
    const params = t.graph(t.ref("args"), [
      { id: "args", body: t.record({ head: t.ref<typeof node>("node") }) },
      { id: "node", name: "Node", body: node },
    ]);
    const result = t.graph(t.list(t.ref<typeof node>("node")), { node });
    const contract = defineAgentType({ name: "lists", constructor: t.graph(t.record({})), methods: { walk: { params, result } } });
    expect(contract.graphs.methods[0]?.parameters).toBe(params);
    expect(contract.graphs.methods[0]?.result).toBe(result);
    expect(contract.graphs.constructorParameters).toEqual({ root: { kind: "record", value: { fields: [] } } });
  });

  const refusals: [string, () => unknown, RegExp][] = [
    [
      "a parameter graph whose root is not a record",
      () => defineAgentType({ name: "x", constructor: t.record({}), methods: { m: { params: t.graph(t.ref("d"), { d: t.u8() }) } } }),
      /method m: params must be a record type.*or a graph rooted at one/,
    ],
    [
      "a graph with a dangling ref",
      () => defineAgentType({ name: "x", constructor: t.graph(t.record({ a: t.ref("nowhere") })), methods: {} }),
      /constructor.*dangling ref/,
    ],
    ["an empty name", () => defineAgentType({ name: "", constructor: t.record({}), methods: {} }), /non-empty name/],
    [
      "a constructor that is not a record",
      () => defineAgentType({ name: "x", constructor: t.string() as unknown as RecordSchema, methods: {} }),
      /constructor must be a record/,
    ],
    [
      "method params that are not a record",
      () => defineAgentType({ name: "x", constructor: t.record({}), methods: { m: { params: t.u8() as unknown as RecordSchema } } }),
      /method m: params must be a record/,
    ],
    [
      "a dangling ref",
      () => defineAgentType({ name: "x", constructor: t.record({}), methods: { m: { params: t.record({ a: t.ref("nowhere") }) } } }),
      /method m: params/,
    ],
    [
      "an invalid result type",
      () =>
        defineAgentType({
          name: "x",
          constructor: t.record({}),
          methods: { m: { params: t.record({}), result: t.fixedList(t.u8(), -1) } },
        }),
      /method m: result.*length/,
    ],
    [
      "a constructor that holds a stream (protocol 3.1)",
      () => defineAgentType({ name: "x", constructor: t.record({ s: t.stream(t.u8()) }), methods: {} }),
      /constructor.*stream types are not allowed/,
    ],
    [
      "a bad config entry",
      () => defineAgentType({ name: "x", constructor: t.record({}), config: [{ path: "a" as unknown as string[] }], methods: {} }),
      /config/,
    ],
    [
      "an empty config path (protocol 4.2)",
      () => defineAgentType({ name: "x", constructor: t.record({}), config: [{ path: [] }], methods: {} }),
      /config.*each path non-empty/,
    ],
    [
      "a config path with an empty name (protocol 4.2)",
      () => defineAgentType({ name: "x", constructor: t.record({}), config: [{ path: ["a", ""] }], methods: {} }),
      /config.*of non-empty names/,
    ],
  ];
  it.each(refusals)("refuses %s with invalid-contract", (_label, define, message) => {
    let thrown: unknown;
    try {
      define();
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ContractError);
    expect((thrown as ContractError).code).toBe("invalid-contract");
    expect((thrown as ContractError).message).toMatch(message);
  });
});
