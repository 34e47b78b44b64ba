/**
 * Runs generated contract source the way a user's build would, minus the
 * type check: TypeScript's own transpiler turns it into CommonJS, which is
 * evaluated with `require` answering this package's source. The type check
 * of generated source is `codegen-tsc.slow.test.ts`'s job.
 */
import ts from "typescript";
import { decodeSchemaGraph, type SchemaGraphJson } from "@golem-stream/schema-value";
import * as contractPackage from "../../src/index.js";
import { contractDifferences, type AnyAgentContract, type CatalogueAgentType } from "../../src/index.js";
import { contractSource, type CatalogueEntry } from "../../src/codegen/index.js";

export function loadGenerated(source: string): Record<string, unknown> {
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 },
  });
  const exports: Record<string, unknown> = {};
  const require = (specifier: string) => {
    if (specifier !== "@golem-stream/contract") throw new Error(`generated code imports ${specifier}`);
    return contractPackage;
  };
  new Function("require", "exports", outputText)(require, exports);
  return exports;
}

/** The catalogue entry as a typed client sees it: every graph decoded. */
export function served(entry: CatalogueEntry): CatalogueAgentType {
  const decode = (graph: { root: unknown; defs?: readonly unknown[] | undefined }) =>
    decodeSchemaGraph(
      (graph.defs === undefined || graph.defs.length === 0
        ? { root: graph.root }
        : { defs: graph.defs, root: graph.root }) as SchemaGraphJson,
    );
  return {
    constructorParameters: decode(entry.constructorParameters),
    methods: new Map(
      entry.methods.map((m) => [
        m.name,
        { parameters: decode(m.parameters), result: m.result === undefined ? undefined : decode(m.result) },
      ]),
    ),
  };
}

/** Every way the generated contract differs from the catalogue entry (empty when it round-trips). */
export function roundTripDifferences(contract: AnyAgentContract, entry: CatalogueEntry): string[] {
  const differences = contractDifferences(contract, served(entry));
  if (contract.name !== entry.name) differences.push(`name ${contract.name}`);
  const mine = contract.graphs.methods.map((m) => m.name);
  // The catalogue's order, as a JavaScript object keeps it (integer-like names first).
  const theirs = Object.keys(Object.fromEntries(entry.methods.map((m) => [m.name, true])));
  if (JSON.stringify(mine) !== JSON.stringify(theirs)) differences.push(`methods ${JSON.stringify(mine)} vs ${JSON.stringify(theirs)}`);
  if (JSON.stringify(contract.config.map((c) => c.path)) !== JSON.stringify((entry.config ?? []).map((c) => c.path)))
    differences.push("config");
  return differences;
}

/** Generates, runs the module, and returns every difference per agent type (none when it round-trips). */
export function roundTrip(entries: readonly CatalogueEntry[]): Record<string, string[]> {
  const { source, exports } = contractSource(entries);
  const module = loadGenerated(source);
  const differences: Record<string, string[]> = {};
  exports.forEach(({ agentType, name }, i) => {
    const contract = module[name] as AnyAgentContract | undefined;
    differences[agentType] = contract === undefined ? ["not exported"] : roundTripDifferences(contract, entries[i] as CatalogueEntry);
  });
  return differences;
}
