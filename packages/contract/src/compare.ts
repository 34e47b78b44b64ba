/**
 * Does a server's catalogue describe the agent type the way a contract does?
 * Both sides are compared after `decodeSchemaGraph`, so spelling differences
 * the decoder normalises do not count; anything else does, because a value
 * built for one schema may be rejected, or read differently, under another.
 * Methods the server has and the contract does not are fine: a client may
 * declare only what it calls.
 */
import { decodeSchemaGraph } from "@golem-stream/schema-value";
import type { AnyAgentContract } from "./contract.js";
import { ContractError } from "./errors.js";
import { firstGraphDifference, sameJson, type GraphShape } from "./graph-difference.js";

export type { GraphShape } from "./graph-difference.js";

/** What a catalogue says about one agent type (the client's `AgentTypeSchema` satisfies it). */
export interface CatalogueAgentType {
  readonly constructorParameters: GraphShape;
  readonly methods: ReadonlyMap<string, { readonly parameters: GraphShape; readonly result: GraphShape | undefined }>;
}

/**
 * Every difference between `contract` and `served`, one line each; empty when they agree. A line
 * says where the graphs first part and what each side has there, e.g.
 * `method count: the parameters differ at parameters.to: the contract has u64, the server u32`.
 */
export function contractDifferences(contract: AnyAgentContract, served: CatalogueAgentType): string[] {
  const differences: string[] = [];
  const constructorParameters = decodeSchemaGraph(contract.graphs.constructorParameters);
  if (!sameGraph(constructorParameters, served.constructorParameters)) {
    differences.push(`the constructor parameters differ${where(constructorParameters, served.constructorParameters, "constructor")}`);
  }
  for (const method of contract.graphs.methods) {
    const theirs = served.methods.get(method.name);
    if (theirs === undefined) {
      differences.push(`method ${method.name} is not in the server's catalogue`);
      continue;
    }
    const parameters = decodeSchemaGraph(method.parameters);
    if (!sameGraph(parameters, theirs.parameters))
      differences.push(`method ${method.name}: the parameters differ${where(parameters, theirs.parameters, "parameters")}`);
    const mine = method.result === undefined ? undefined : decodeSchemaGraph(method.result);
    if (mine === undefined || theirs.result === undefined) {
      if (mine !== theirs.result)
        differences.push(`method ${method.name}: ${mine === undefined ? "the server's has a result" : "the server's has no result"}`);
    } else if (!sameGraph(mine, theirs.result))
      differences.push(`method ${method.name}: the result differs${where(mine, theirs.result, "result")}`);
  }
  return differences;
}

/**
 * How the result a server returned for `method` differs from the contract's result type, one
 * line, or undefined when they agree (and for a method the contract does not declare). A client
 * compares its contract with the catalogue once, when it connects; a server started since with
 * another build returns results of another type, which would reach code typed by the contract.
 * `returned` is the result's graph (protocol 4: a value result carries it), undefined for none.
 */
export function resultDifference(contract: AnyAgentContract, method: string, returned: GraphShape | undefined): string | undefined {
  const declared = contract.graphs.methods.find((candidate) => candidate.name === method);
  if (declared === undefined) return undefined;
  const mine = declared.result === undefined ? undefined : decodedResult(declared.result);
  if (mine === undefined || returned === undefined) {
    if (mine === returned) return undefined;
    return `method ${method}: ${mine === undefined ? "the server returned a result, the contract declares none" : "the server returned no result"}`;
  }
  return sameGraph(mine, returned) ? undefined : `method ${method}: the result differs${where(mine, returned, "result")}`;
}

/** A contract's result graphs, decoded once: every call of the method checks its result against it. */
const decodedResults = new WeakMap<object, GraphShape>();

function decodedResult(graph: NonNullable<AnyAgentContract["graphs"]["methods"][number]["result"]>): GraphShape {
  let decoded = decodedResults.get(graph);
  if (decoded === undefined) {
    decoded = decodeSchemaGraph(graph);
    decodedResults.set(graph, decoded);
  }
  return decoded;
}

/** Throws `ContractError` (`contract-mismatch`) listing the differences, if there are any. */
export function assertContractMatches(contract: AnyAgentContract, served: CatalogueAgentType): void {
  const differences = contractDifferences(contract, served);
  if (differences.length === 0) return;
  throw new ContractError(`agent type ${contract.name} does not match the server's catalogue: ${differences.join("; ")}`, {
    code: "contract-mismatch",
    differences,
  });
}

function sameGraph(a: GraphShape, b: GraphShape): boolean {
  return sameJson(a.root, b.root) && sameJson(a.defs, b.defs);
}

/** ` at PATH: the contract has X, the server Y`, or where the graphs differ only in their definitions. */
function where(mine: GraphShape, theirs: GraphShape, base: string): string {
  const found = firstGraphDifference(mine, theirs, base);
  return found === undefined
    ? " (in their type definitions)"
    : ` at ${found.path}: the contract has ${found.mine}, the server ${found.theirs}`;
}
