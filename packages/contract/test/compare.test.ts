/** `contractDifferences`: a contract against the decoded graphs a catalogue holds. */
import { decodeSchemaGraph, type SchemaGraphJson } from "@golem-stream/schema-value";
import { describe, expect, it } from "vitest";
import {
  assertContractMatches,
  ContractError,
  contractDifferences,
  defineAgentType,
  resultDifference,
  t,
  type CatalogueAgentType,
} from "../src/index.js";
import { echoContract } from "../src/demo.js";

/** The catalogue a server built from `graphs` would serve, decoded as the client decodes it. */
function served(graphs: {
  constructorParameters: SchemaGraphJson;
  methods: readonly { name: string; parameters: SchemaGraphJson; result?: SchemaGraphJson }[];
}): CatalogueAgentType {
  return {
    constructorParameters: decodeSchemaGraph(JSON.parse(JSON.stringify(graphs.constructorParameters))),
    methods: new Map(
      graphs.methods.map((method) => [
        method.name,
        {
          parameters: decodeSchemaGraph(JSON.parse(JSON.stringify(method.parameters))),
          result: method.result === undefined ? undefined : decodeSchemaGraph(JSON.parse(JSON.stringify(method.result))),
        },
      ]),
    ),
  };
}

describe("contractDifferences", () => {
  it("finds none between a contract and the catalogue made from it, member order aside", () => {
    expect(contractDifferences(echoContract, served(echoContract.graphs))).toEqual([]);
    const reordered = JSON.parse(
      JSON.stringify(echoContract.graphs, (_key, value: unknown) =>
        typeof value === "object" && value !== null && !Array.isArray(value) ? Object.fromEntries(Object.entries(value).reverse()) : value,
      ),
    );
    expect(contractDifferences(echoContract, served(reordered))).toEqual([]);
  });

  it("accepts a contract that declares only some of the served methods", () => {
    const partial = defineAgentType({
      name: "echo",
      constructor: t.record({ name: t.string() }),
      methods: { count: echoContract.methods.count },
    });
    expect(contractDifferences(partial, served(echoContract.graphs))).toEqual([]);
  });

  it("lists every difference: constructor, parameters, result, result presence, missing method", () => {
    const other = defineAgentType({
      name: "echo",
      constructor: t.record({ name: t.string(), extra: t.u8() }),
      methods: {
        count: { params: t.record({ to: t.u64(), delayMs: t.u32() }), result: t.stream(t.u32()) },
        digest: { params: echoContract.methods.digest.params, result: t.record({ bytes: t.u64(), sha256: t.binary() }) },
        fail: { params: echoContract.methods.fail.params },
        missing: { params: t.record({}) },
      },
    });
    expect(contractDifferences(other, served(echoContract.graphs))).toEqual([
      "the constructor parameters differ at constructor: the contract has record{name: string, extra: u8}, the server record{name: string}",
      "method count: the parameters differ at parameters.to: the contract has u64, the server u32",
      "method digest: the result differs at result.sha256: the contract has binary, the server string",
      "method fail: the server's has a result",
      "method missing is not in the server's catalogue",
    ]);
    let thrown: unknown;
    try {
      assertContractMatches(other, served(echoContract.graphs));
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ContractError);
    expect((thrown as ContractError).code).toBe("contract-mismatch");
    expect((thrown as ContractError).differences).toHaveLength(5);
  });

  it("says where inside a stream, a list, an option and through references the types part", () => {
    const served1 = served({
      constructorParameters: t.graph(t.record({})),
      methods: [
        { name: "count", parameters: t.graph(t.record({})), result: t.graph(t.stream(t.u32())) },
        {
          name: "tree",
          parameters: t.graph(t.record({ root: t.ref("node") }), {
            node: t.record({ label: t.option(t.string()), children: t.list(t.ref("node")) }),
          }),
        },
      ],
    });
    const mine = defineAgentType({
      name: "a",
      constructor: t.record({}),
      methods: {
        count: { params: t.record({}), result: t.stream(t.u64()) },
        // Other ids, the same shape down to the option's inner type.
        tree: {
          params: t.graph(t.record({ root: t.ref("n") }), { n: t.record({ label: t.option(t.char()), children: t.list(t.ref("n")) }) }),
        },
      },
    });
    expect(contractDifferences(mine, served1)).toEqual([
      "method count: the result differs at result[stream item]: the contract has u64, the server u32",
      "method tree: the parameters differ at parameters.root.label?: the contract has char, the server string",
    ]);
    const renamedOnly = defineAgentType({
      name: "a",
      constructor: t.record({}),
      methods: {
        tree: {
          params: t.graph(t.record({ root: t.ref("n") }), { n: t.record({ label: t.option(t.string()), children: t.list(t.ref("n")) }) }),
        },
      },
    });
    expect(contractDifferences(renamedOnly, served1)).toEqual(["method tree: the parameters differ (in their type definitions)"]);
  });

  it("tells a served result the contract lacks", () => {
    const served1 = served({ constructorParameters: t.graph(t.record({})), methods: [{ name: "m", parameters: t.graph(t.record({})) }] });
    const withResult = defineAgentType({
      name: "a",
      constructor: t.record({}),
      methods: { m: { params: t.record({}), result: t.bool() } },
    });
    expect(contractDifferences(withResult, served1)).toEqual(["method m: the server's has no result"]);
  });
});

describe("resultDifference: one call's result against the contract", () => {
  const contract = defineAgentType({
    name: "tools",
    constructor: t.record({}),
    methods: {
      sum: { params: t.record({}), result: t.record({ total: t.u32() }) },
      run: { params: t.record({}) },
    },
  });
  const graphOf = (schema: Parameters<typeof defineAgentType>[0]["methods"][string]["result"]) =>
    decodeSchemaGraph(
      defineAgentType({ name: "x", constructor: t.record({}), methods: { m: { params: t.record({}), result: schema } } }).graphs.methods[0]!
        .result!,
    );

  it("is none for the declared type, and for a method the contract does not declare", () => {
    expect(resultDifference(contract, "sum", graphOf(t.record({ total: t.u32() })))).toBeUndefined();
    expect(resultDifference(contract, "run", undefined)).toBeUndefined();
    expect(resultDifference(contract, "other", graphOf(t.string()))).toBeUndefined();
  });

  it("says where another type parts from the declared one, and tells a result present or missing", () => {
    expect(resultDifference(contract, "sum", graphOf(t.record({ total: t.u64() })))).toBe(
      "method sum: the result differs at result.total: the contract has u32, the server u64",
    );
    expect(resultDifference(contract, "sum", undefined)).toBe("method sum: the server returned no result");
    expect(resultDifference(contract, "run", graphOf(t.string()))).toBe(
      "method run: the server returned a result, the contract declares none",
    );
  });
});
