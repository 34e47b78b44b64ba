/**
 * Catalogues: `defineCatalogue`'s checks (each mistake named where it is),
 * and the host `agentsHost` builds from one, beside the demo or without it.
 */
import { describe, expect, it } from "vitest";
import {
  CatalogueError,
  agentsHost,
  checkAgents,
  defineAgentType,
  defineCatalogue,
  implement,
  t,
  type AgentHost,
  type AgentTypeDefinition,
  type Catalogue,
} from "../src/index.js";

const EMPTY = t.graph(t.record({}));
const U32 = t.graph(t.u32());

const greeter = defineAgentType({
  name: "greeter",
  constructor: t.record({}),
  methods: { hello: { params: t.record({}), result: t.string() } },
});
const typed = implement(greeter, { hello: () => "hello" });

/** An untyped agent type whose one method `answer` returns 42. */
const untyped: AgentTypeDefinition = {
  name: "answers",
  constructorParameters: EMPTY,
  config: [],
  methods: [{ name: "answer", parameters: EMPTY, result: U32 }],
  implementations: { answer: async () => ({ kind: "u32", value: 42 }) as never },
};

const catalogue = (types: unknown): unknown => ({ applications: { test: { default: types } } });

describe("defineCatalogue / checkAgents", () => {
  it("returns a good catalogue unchanged, typed and untyped agent types side by side", () => {
    const good = { applications: { test: { default: [typed, untyped] }, other: { prod: [untyped] } } };
    expect(defineCatalogue(good)).toBe(good);
    expect(checkAgents(good)).toBe(good);
  });

  it("takes an AgentHost as it is", () => {
    const host: AgentHost = { agentTypes: () => undefined, invoke: async () => undefined };
    expect(checkAgents(host)).toBe(host);
  });

  it.each<[string, unknown, RegExp]>([
    ["not an object", "text", /^the catalogue must be an object \{ applications: \{\.\.\.\} \}, not a string$/],
    ["a function", () => catalogue([typed]), /^the catalogue is a function/],
    ["no applications", { test: { default: [typed] } }, /^the catalogue has an unknown field "test"/],
    ["empty", { applications: {} }, /^the catalogue has no application$/],
    [
      "an environment that is no list",
      { applications: { test: { default: typed } } },
      /^application "test": environment "default" must be a list of agent types, not an object$/,
    ],
    ["an empty environment", catalogue([]), /^application "test": environment "default" has no agent type$/],
    [
      "an entry that is no definition",
      catalogue([greeter.name]),
      /^application "test": environment "default": agent type #1 must be an agent type definition/,
    ],
    [
      "a contract instead of its implementation",
      catalogue([greeter]),
      /^application "test": environment "default": agent type "greeter": the catalogue holds the contract of agent type "greeter", not an implementation: serve implement\(contract, \{ hello: … \}\)$/,
    ],
    [
      "a contract of many methods, some not named as identifiers",
      catalogue([
        defineAgentType({
          name: "many",
          constructor: t.record({}),
          methods: Object.fromEntries(["a", "b-c", "d", "e", "f", "g", "h", "i", "j"].map((name) => [name, { params: t.record({}) }])),
        }),
      ]),
      /: serve implement\(contract, \{ a: …, "b-c": …, d: …, e: …, f: …, g: …, h: …, i: …, … \}\)$/,
    ],
    [
      "a contract as the whole catalogue",
      greeter,
      /^the catalogue is the contract of agent type "greeter", not a catalogue: serve defineCatalogue\(\{ applications: \{ <application>: \{ <environment>: \[implement\(contract, \{ hello: … \}\)\] \} \} \}\)$/,
    ],
    [
      "constructor parameters left out",
      catalogue([{ ...untyped, constructorParameters: undefined }]),
      /agent type "answers": constructor parameters must be a schema graph \{root, defs\?\} \(t\.graph\(\.\.\.\)\), not undefined$/,
    ],
    [
      "a method list left out",
      catalogue([{ ...untyped, methods: undefined }]),
      /"methods" must be a list of \{name, parameters, result\?\}, not undefined$/,
    ],
    ["a type listed twice", catalogue([typed, typed]), /agent type "greeter" is listed twice in the environment$/],
    ["a name too long", catalogue([{ ...untyped, name: "x".repeat(129) }]), /over the 128 a selector name may have/],
    ["an application name empty", { applications: { "": { default: [typed] } } }, /application name must be a non-empty string/],
    [
      "a constructor with a stream",
      catalogue([{ ...untyped, constructorParameters: t.graph(t.record({ s: t.stream(t.u8()) })) }]),
      /agent type "answers": constructor parameters: .*stream/,
    ],
    [
      "parameters that are no record",
      catalogue([{ ...untyped, methods: [{ name: "answer", parameters: U32, result: U32 }] }]),
      /method "answer": parameters must be a record \(t\.record\(\{\.\.\.\}\)\), not u32$/,
    ],
    [
      "an invalid result schema",
      catalogue([{ ...untyped, methods: [{ name: "answer", parameters: EMPTY, result: { root: { kind: "u33", value: {} } } }] }]),
      /method "answer": result: /,
    ],
    [
      "a method without implementation",
      catalogue([{ ...untyped, implementations: {} }]),
      /method "answer" has no implementation function$/,
    ],
    [
      "an implementation without method",
      catalogue([{ ...untyped, implementations: { ...untyped.implementations, extra: async () => undefined } }]),
      /implementation "extra" is for no declared method$/,
    ],
    [
      "a method declared twice",
      catalogue([{ ...untyped, methods: [untyped.methods[0], untyped.methods[0]] }]),
      /method "answer" is declared twice$/,
    ],
    ["a bad config", catalogue([{ ...untyped, config: [{ path: "a" }] }]), /"config" must be a list of \{path, accepts\?\}/],
    ["a config path that is empty", catalogue([{ ...untyped, config: [{ path: [] }] }]), /each path a non-empty list of non-empty strings/],
    ["a config path with an empty name", catalogue([{ ...untyped, config: [{ path: ["a", ""] }] }]), /each path a non-empty list/],
    [
      "a method whose only implementation is inherited (toString)",
      catalogue([{ ...untyped, methods: [{ ...untyped.methods[0], name: "toString" }], implementations: {} }]),
      /method "toString" has no implementation function$/,
    ],
    [
      "a method named constructor without implementation",
      catalogue([{ ...untyped, methods: [{ ...untyped.methods[0], name: "constructor" }], implementations: {} }]),
      /method "constructor" has no implementation function$/,
    ],
    [
      "a method's durability that is no durability",
      catalogue([{ ...untyped, methods: [{ ...untyped.methods[0], durability: "yes" }] }]),
      /method "answer": "durability" must be "none" or "replay", not a string$/,
    ],
    [
      "an agent type's durability that is no durability",
      catalogue([{ ...untyped, durability: true }]),
      /agent type "answers": "durability" must be "none" or "replay", not a boolean$/,
    ],
  ])("refuses %s with CatalogueError naming where", (_what, value, message) => {
    const thrown = (() => {
      try {
        checkAgents(value);
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect(thrown).toBeInstanceOf(CatalogueError);
    expect((thrown as CatalogueError).code).toBe("invalid-catalogue");
    expect((thrown as Error).message).toMatch(message);
    expect((thrown as Error).message).not.toContain("\n");
    if (typeof value === "object" && value !== null) expect(() => defineCatalogue(value as Catalogue)).toThrow(CatalogueError);
  });
});

describe("a type used at many places", () => {
  /** `levels` of a tuple of the level below twice: one object per level, 2^levels leaves spelled out. */
  const doubling = (levels: number) => {
    let type: ReturnType<typeof t.string> | ReturnType<typeof t.tuple> = t.string();
    for (let i = 0; i < levels; i++) type = t.tuple(type, type);
    return type;
  };
  /** `methods` methods each taking `levels` of it. */
  const sharing = (levels: number, methods = 1): AgentTypeDefinition => {
    const x = doubling(levels);
    const declared = Object.fromEntries(Array.from({ length: methods }, (_, i) => [`take${i}`, { params: t.record({ x }) }]));
    const contract = defineAgentType({ name: "shared", constructor: t.record({}), methods: declared });
    return implement(
      contract,
      Object.fromEntries(Object.keys(declared).map((name) => [name, () => undefined])) as never,
    ) as AgentTypeDefinition;
  };

  it("is taken while the catalogue spelled out stays within the bound (a thousand copies, in ten methods)", () => {
    expect(() => checkAgents(catalogue([sharing(10, 10)]))).not.toThrow();
  });

  it("is refused, naming the place, when spelled out it passes the bound: thirty levels are a billion copies, which discovery and the fingerprint would have written out", () => {
    expect(() => checkAgents(catalogue([sharing(30)]))).toThrow(
      /^application "test": environment "default": agent type "shared": method "take0": parameters takes the catalogue past 33554432 units of JSON text .* use refs to it$/,
    );
  });

  it("is refused when many graphs, each within the bound, pass it together: the bound is the catalogue's", () => {
    expect(() => checkAgents(catalogue([sharing(18, 1)]))).not.toThrow();
    expect(() => checkAgents(catalogue([sharing(18, 8)]))).toThrow(/: method "take\d": parameters takes the catalogue past 33554432 units/);
  });
});

describe("agentsHost", () => {
  const own = { applications: { test: { default: [untyped] } } };

  it("is the demo without agents, the agents alone with them, both with demo: true", () => {
    expect(
      agentsHost({})
        .agentTypes("demo", "default")
        ?.map((type) => type.name),
    ).toEqual(["echo"]);
    const alone = agentsHost({ agents: own });
    expect(alone.agentTypes("demo", "default")).toBeUndefined();
    expect(alone.agentTypes("test", "default")?.map((type) => type.name)).toEqual(["answers"]);
    const both = agentsHost({ agents: own, demo: true });
    expect(both.agentTypes("demo", "default")?.map((type) => type.name)).toEqual(["echo"]);
    expect(both.agentTypes("test", "default")?.map((type) => type.name)).toEqual(["answers"]);
  });

  it("refuses agents that claim the demo's environment when the demo is served too, and nothing to serve", () => {
    const clash = { applications: { demo: { default: [untyped] } } };
    expect(() => agentsHost({ agents: clash, demo: true })).toThrow(/application "demo", environment "default" is the demo's/);
    expect(
      agentsHost({ agents: clash })
        .agentTypes("demo", "default")
        ?.map((type) => type.name),
    ).toEqual(["answers"]);
    expect(() => agentsHost({ demo: false })).toThrow(/nothing to serve/);
  });
});
