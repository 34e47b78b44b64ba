/**
 * Does a server's catalogue describe the agent type the way a contract does?
 * Both sides are compared after `decodeSchemaGraph`, so spelling differences
 * the decoder normalises do not count; anything else does, because a value
 * built for one schema may be rejected, or read differently, under another.
 * Methods the server has and the contract does not are fine: a client may
 * declare only what it calls.
 */
import { decodeSchemaGraph, type SchemaDef, type SchemaType } from "@golem-stream/schema-value";
import type { AnyAgentContract } from "./contract.js";
import { ContractError } from "./errors.js";

/** A decoded graph (`SchemaGraph` satisfies it). */
export interface GraphShape {
  readonly root: SchemaType;
  readonly defs: readonly SchemaDef[];
}

/** What a catalogue says about one agent type (the client's `AgentTypeSchema` satisfies it). */
export interface CatalogueAgentType {
  readonly constructorParameters: GraphShape;
  readonly methods: ReadonlyMap<string, { readonly parameters: GraphShape; readonly result: GraphShape | undefined }>;
}

/** Every difference between `contract` and `served`, one line each; empty when they agree. */
export function contractDifferences(contract: AnyAgentContract, served: CatalogueAgentType): string[] {
  const differences: string[] = [];
  if (!sameGraph(decodeSchemaGraph(contract.graphs.constructorParameters), served.constructorParameters)) {
    differences.push("the constructor parameters differ");
  }
  for (const method of contract.graphs.methods) {
    const theirs = served.methods.get(method.name);
    if (theirs === undefined) {
      differences.push(`method ${method.name} is not in the server's catalogue`);
      continue;
    }
    if (!sameGraph(decodeSchemaGraph(method.parameters), theirs.parameters)) differences.push(`method ${method.name}: the parameters differ`);
    const mine = method.result === undefined ? undefined : decodeSchemaGraph(method.result);
    if (mine === undefined || theirs.result === undefined) {
      if (mine !== theirs.result) differences.push(`method ${method.name}: ${mine === undefined ? "the server's has a result" : "the server's has no result"}`);
    } else if (!sameGraph(mine, theirs.result)) differences.push(`method ${method.name}: the result differs`);
  }
  return differences;
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

/** Structural equality of JSON-like data; object member order does not matter, absent equals undefined. */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((item, i) => sameJson(item, b[i]));
  }
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = new Set([...Object.keys(left), ...Object.keys(right)]);
  for (const key of keys) if (!sameJson(left[key], right[key])) return false;
  return true;
}
