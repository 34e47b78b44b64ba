/**
 * `contractSource`: the golden property — for any catalogue, every graph of
 * the generated contract decodes equal to the server's (the comparison
 * `typedAgent` makes) — over (a) the demo catalogue, (b) hand-written graphs
 * with every kind, restriction, metadata and recursion; (c) random graphs in
 * codegen-random.slow.test.ts.
 */
import { describe, expect, it } from "vitest";
import { ContractError, contractDifferences, type AnyAgentContract } from "../src/index.js";
import { contractSource, type CatalogueEntry } from "../src/codegen/index.js";
import { echoContract } from "../src/demo.js";
import { loadGenerated, roundTrip, roundTripDifferences, served } from "./support/generated-module.js";
import { kitchenSink } from "./support/kitchen-sink.js";

const demo: CatalogueEntry = { ...echoContract.graphs };

describe("contractSource round-trips", () => {
  it("(a) the demo catalogue, as echoContract names it", () => {
    expect(roundTrip([demo])).toEqual({ echo: [] });
    const { source, exports } = contractSource([demo]);
    expect(exports).toEqual([{ agentType: "echo", name: "echoContract" }]);
    expect(source).toContain(
      [
        "    split: {",
        "      params: t.record({ data: t.stream(t.u8()) }),",
        "      result: t.record({ upper: t.stream(t.u8()), lines: t.stream(t.string()) }),",
        "    },",
        "    groups: {",
      ].join("\n"),
    );
    expect(source).toContain("    count: { params: t.record({ to: t.u32(), delayMs: t.u32() }), result: t.stream(t.u32()) },\n");
  });

  it("(b) every kind, restriction, metadata, recursive and shared defs, names that are not identifiers", () => {
    const differences = roundTrip(kitchenSink);
    expect(Object.keys(differences)).toEqual(kitchenSink.map((entry) => entry.name));
    for (const found of Object.values(differences)) expect(found).toEqual([]);
  });

  it("notices a generator that loses something (the check can fail)", () => {
    const entry = kitchenSink[0] as CatalogueEntry;
    const { source, exports } = contractSource([entry]);
    const lossy = source.replaceAll('t.u8({ max: { kind: "unsigned", value: "9" } })', "t.u8()");
    expect(lossy).not.toBe(source);
    const contract = loadGenerated(lossy)[exports[0]?.name as string] as AnyAgentContract;
    const lost = 'the contract has u8, the server u8 {"restrictions":{"max":{"kind":"unsigned","value":"9"}}}';
    expect(roundTripDifferences(contract, entry)).toEqual([
      `the constructor parameters differ at constructor.u8: ${lost}`,
      `method scalars: the parameters differ at parameters.u8: ${lost}`,
      `method scalars: the result differs at result.u8: ${lost}`,
    ]);
  });
});

describe("names", () => {
  it("derives stable, valid, distinct export names", () => {
    const { exports, source } = contractSource(kitchenSink);
    expect(exports.map((e) => e.name)).toEqual([
      "kitchenSinkContract",
      "myAgentContract",
      "myAgentContract_2",
      "myAgentContract_3",
      "classContract",
      "agent2faContract",
      "agentContract",
      "echoContract",
    ]);
    expect(contractSource(kitchenSink).source).toBe(source);
    // Def bodies are module-level consts named after the agent type, the method and the def id.
    expect(source).toContain("const kitchenSinkRecursiveParamsTreeDef = ");
    expect(source).toContain("const kitchenSinkRecursiveParams0Def = ");
    expect(source).toMatch(/const kitchenSinkRecursiveResultTreeDef = /);
  });

  it("types a ref by its def unless the def can reach back (a const cannot depend on itself)", () => {
    const { source } = contractSource(kitchenSink);
    // tree -> leaf is typed; tree -> tree and even <-> odd are not.
    expect(source).toContain(
      [
        "const kitchenSinkRecursiveParamsTreeDef = t.record({",
        '  value: t.ref<typeof kitchenSinkRecursiveParamsLeafDef>("leaf"),',
        '  kids: t.list(t.ref("tree")),',
        "});",
      ].join("\n"),
    );
    expect(source).toContain('const kitchenSinkRecursiveParamsEvenDef = t.option(t.record({ next: t.ref("odd") }));');
    expect(source).toContain(
      'const kitchenSinkRecursiveParamsOddDef = t.record({ next: t.meta(t.ref("even"), { doc: "a ref with metadata" }) });',
    );
    expect(source).toContain('const kitchenSinkRecursiveParams0Def = t.ref<typeof kitchenSinkRecursiveParamsAliasDef>("alias");');
    expect(source).toContain(
      '      params: t.graph(\n        t.ref<typeof kitchenSinkRecursiveParamsParamsDef>("params"),\n        [\n          { id: "tree", name: "Tree node", body: kitchenSinkRecursiveParamsTreeDef },',
    );
  });
});

describe("hostile catalogues", () => {
  const ok = { root: { kind: "record", value: { fields: [] } } } as CatalogueEntry["constructorParameters"];
  const cases: [string, CatalogueEntry[]][] = [
    ["an empty agent type name", [{ name: "", constructorParameters: ok, methods: [] }]],
    [
      "a repeated agent type",
      [
        { name: "a", constructorParameters: ok, methods: [] },
        { name: "a", constructorParameters: ok, methods: [] },
      ],
    ],
    [
      "a repeated method",
      [
        {
          name: "a",
          constructorParameters: ok,
          methods: [
            { name: "m", parameters: ok },
            { name: "m", parameters: ok },
          ],
        },
      ],
    ],
    [
      "a dangling ref",
      [{ name: "a", constructorParameters: ok, methods: [{ name: "m", parameters: { root: { kind: "ref", value: { id: "x" } } } }] }],
    ],
    [
      "a stream in the constructor",
      [{ name: "a", constructorParameters: { root: { kind: "stream", value: { inner: { kind: "u8", value: {} } } } }, methods: [] }],
    ],
    [
      "an unknown kind",
      [{ name: "a", constructorParameters: ok, methods: [{ name: "m", parameters: { root: { kind: "nope", value: {} } as never } }] }],
    ],
  ];
  it.each(cases)("refuses %s with ContractError", (_, entries) => {
    expect(() => contractSource(entries)).toThrow(ContractError);
  });
});

describe("names an editor would not show as they are", () => {
  it("writes bidi controls, C1 controls and invisible characters as escapes, and the contract keeps the names", () => {
    const ok = { root: { kind: "record", value: { fields: [] } } } as CatalogueEntry["constructorParameters"];
    // A right-to-left override in a method name reorders how the line shows (Trojan Source).
    const names = ["user\u202e\u2066nimda\u2069", "next\u0085line", "zero\u200bwidth\u00ad", "line\u2028sep"];
    const entries: CatalogueEntry[] = [
      { name: "a\u202eb", constructorParameters: ok, methods: names.map((name) => ({ name, parameters: ok })) },
    ];
    const { source, exports } = contractSource(entries);
    expect(source).not.toMatch(/[\u007f-\u009f\u00ad\u200b-\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/);
    expect(source).toContain("\\u202e");
    const contract = loadGenerated(source)[exports[0]!.name] as AnyAgentContract;
    expect(contract.name).toBe("a\u202eb");
    expect(roundTrip(entries)).toEqual({ "a\u202eb": [] });
  });
});

describe("methods a typed agent cannot have", () => {
  it("leaves out a method named then, says so in the source and in omitted, and keeps the rest", () => {
    const entry: CatalogueEntry = {
      ...demo,
      name: "thenable",
      methods: [...demo.methods, { name: "then", parameters: demo.methods[0]!.parameters }],
    };
    const { source, exports, omitted } = contractSource([entry]);
    expect(omitted).toEqual([
      { agentType: "thenable", method: "then", reason: expect.stringMatching(/thenable; call it with client\.agent/) },
    ]);
    expect(source).toContain(
      '    // "then" is left out: a typed agent with a method named then would be a thenable; call it with client.agent.',
    );
    const contract = loadGenerated(source)[exports[0]!.name] as AnyAgentContract;
    expect(contract.graphs.methods.map((m) => m.name)).toEqual(demo.methods.map((m) => m.name));
    // What is left still passes the client's check against the catalogue that has then.
    expect(contractDifferences(contract, served(entry))).toEqual([]);
    expect(contractSource([demo]).omitted).toEqual([]);
  });

  it("still validates the graphs of the method it leaves out", () => {
    const entry: CatalogueEntry = {
      ...demo,
      methods: [{ name: "then", parameters: { root: { kind: "ref", value: { id: "x" } } } as CatalogueEntry["constructorParameters"] }],
    };
    expect(() => contractSource([entry])).toThrow(ContractError);
  });
});
