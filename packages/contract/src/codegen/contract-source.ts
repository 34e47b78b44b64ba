/**
 * `contractSource(catalogue)`: TypeScript source with one `defineAgentType`
 * per agent type of a server's catalogue (the discovery endpoint's document),
 * so a client of a server it did not write gets the same typed contracts as
 * one that imports the server's own.
 *
 * The guarantee: for every graph of the catalogue, `decodeSchemaGraph` of the
 * generated contract's graph equals the decoded original (the comparison
 * `typedAgent` makes), so a generated contract always passes the check
 * against the server it came from. A pure function: no I/O, the same
 * catalogue always gives the same text.
 */
import { decodeSchemaGraph, type SchemaDef, type SchemaGraphJson, type SchemaType } from "@golem-stream/schema-value";
import { ContractError } from "../errors.js";
import { camelCase, NameAllocator, propertyKey, wordsOf } from "./identifiers.js";
import { layout, literal, typeSource } from "./type-source.js";

/** A graph as the discovery endpoint sends it, or decoded (`SchemaGraph` satisfies it). */
export interface CatalogueGraph {
  readonly root: SchemaType;
  readonly defs?: readonly SchemaDef[] | undefined;
}

/** One agent type of a catalogue (the CLI's `AgentTypeSignature` satisfies it). */
export interface CatalogueEntry {
  readonly name: string;
  readonly constructorParameters: CatalogueGraph;
  readonly methods: readonly { readonly name: string; readonly parameters: CatalogueGraph; readonly result?: CatalogueGraph | undefined }[];
  readonly config?: readonly { readonly path: readonly string[] }[] | undefined;
}

export interface ContractSourceOptions {
  /** Where the generated module imports `defineAgentType` and `t` from (default `@golem-stream/contract`). */
  readonly importFrom?: string;
  /** Named in the header comment, e.g. the server URL and catalogue (one line; default none). */
  readonly origin?: string;
}

export const DEFAULT_CONTRACT_IMPORT = "@golem-stream/contract";

/**
 * Method names a typed agent cannot have, and why. `then` would make the
 * agent a thenable (`await client.connect(…)` would call it), so the client
 * refuses a contract that declares it.
 */
export const UNTYPABLE_METHODS: ReadonlyMap<string, string> = new Map([
  ["then", "a typed agent with a method named then would be a thenable; call it with client.agent"],
]);

/** A method of the catalogue that the generated contract leaves out, and why. */
export interface OmittedMethod {
  readonly agentType: string;
  readonly method: string;
  readonly reason: string;
}

/** The generated module, the exported name of each agent type's contract, in catalogue order, and the methods left out. */
export interface GeneratedContracts {
  readonly source: string;
  readonly exports: readonly { readonly agentType: string; readonly name: string }[];
  /** Methods the contracts do not declare (see `UNTYPABLE_METHODS`); the rest of their agent type is typed as usual. */
  readonly omitted: readonly OmittedMethod[];
}

/**
 * Every graph is validated with `decodeSchemaGraph` first (the catalogue is
 * someone else's data); a bad one, an empty or repeated name throws
 * `ContractError` (`invalid-contract`) naming the part at fault. A method
 * the typed client cannot have (`then`) is validated, then left out with a
 * comment in the source and an entry in `omitted`: a contract may declare
 * fewer methods than the server has, so the others stay usable.
 */
export function contractSource(agentTypes: readonly CatalogueEntry[], options: ContractSourceOptions = {}): GeneratedContracts {
  const names = new NameAllocator(["t", "defineAgentType"]);
  const agentNames = new Set<string>();
  const declarations: string[] = [];
  const exports: { agentType: string; name: string }[] = [];
  const omitted: OmittedMethod[] = [];
  for (const agentType of agentTypes) {
    const name = nonEmpty(agentType.name, "an agent type name");
    if (agentNames.has(name)) throw new ContractError(`agent type ${JSON.stringify(name)} appears twice in the catalogue`);
    agentNames.add(name);
    const words = wordsOf(name);
    const exported = names.allocate(`${camelCase(words, "agent")}Contract`);
    exports.push({ agentType: name, name: exported });
    const defConsts: string[] = [];
    const schema = (graph: CatalogueGraph, part: string[], where: string, streams: "allowed" | "forbidden", indent: string) =>
      graphSource(checked(graph, where, streams), [...words, ...part], names, defConsts, indent);
    const lines = [`export const ${exported} = defineAgentType({`, `  name: ${JSON.stringify(name)},`];
    lines.push(
      `  constructor: ${schema(agentType.constructorParameters, ["constructor"], `agent type ${name}: constructor`, "forbidden", "  ")},`,
    );
    const config = agentType.config ?? [];
    if (config.length > 0) lines.push(`  config: ${literal(config.map((entry) => ({ path: [...entry.path] })))},`);
    lines.push("  methods: {");
    const methodNames = new Set<string>();
    for (const method of agentType.methods) {
      const where = `agent type ${name}: method ${JSON.stringify(method.name)}`;
      nonEmpty(method.name, "a method name");
      if (methodNames.has(method.name)) throw new ContractError(`${where} appears twice`);
      methodNames.add(method.name);
      const methodWords = wordsOf(method.name);
      // Members sit at six spaces when the method breaks over lines; on one line they are short anyway.
      const members = [`params: ${schema(method.parameters, [...methodWords, "params"], `${where}: parameters`, "allowed", "      ")}`];
      if (method.result !== undefined)
        members.push(`result: ${schema(method.result, [...methodWords, "result"], `${where}: result`, "allowed", "      ")}`);
      const untypable = UNTYPABLE_METHODS.get(method.name);
      if (untypable !== undefined) {
        omitted.push({ agentType: name, method: method.name, reason: untypable });
        lines.push(`    // ${JSON.stringify(method.name)} is left out: ${untypable}.`);
        continue;
      }
      lines.push(`    ${layout(`${propertyKey(method.name)}: { `, members, " }", "    ")},`);
    }
    lines.push("  },", "});");
    declarations.push([...(defConsts.length === 0 ? [] : [defConsts.join("\n")]), lines.join("\n")].join("\n\n"));
  }
  const origin = options.origin === undefined ? "" : ` from ${options.origin.replace(/[\r\n\u2028\u2029]+/g, " ")}`;
  const header = [
    `// Generated by \`golem-stream codegen\`${origin}.`,
    "// Do not edit: generate it again when the server's catalogue changes.",
    `import { defineAgentType, t } from ${JSON.stringify(options.importFrom ?? DEFAULT_CONTRACT_IMPORT)};`,
  ];
  return { source: visible(`${[header.join("\n"), ...declarations].join("\n\n")}\n`), exports, omitted };
}

/**
 * Characters a catalogue's names may hold that an editor shows as nothing, or that reorder what it
 * shows (bidi controls: "Trojan Source", CVE-2021-42574), as `\u` escapes. `JSON.stringify`
 * escapes only C0 controls; the rest would reach the generated file as they are, where a reviewer
 * reads something other than what runs. The generated code outside its string literals and
 * comments is ASCII, and inside them an escape means the same character (in a comment, it is
 * only shown).
 */
const INVISIBLE = /[\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2069\ufeff]/g;

function visible(source: string): string {
  return source.replace(INVISIBLE, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

function nonEmpty(name: unknown, what: string): string {
  if (typeof name !== "string" || name.length === 0) throw new ContractError(`${what} must be a non-empty string`);
  return name;
}

function checked(graph: CatalogueGraph, where: string, streams: "allowed" | "forbidden"): SchemaGraphJson {
  const json: SchemaGraphJson =
    graph.defs === undefined || graph.defs.length === 0 ? { root: graph.root } : { defs: [...graph.defs], root: graph.root };
  try {
    return decodeSchemaGraph(json, { streams }).toJSON();
  } catch (cause) {
    throw new ContractError(`${where}: ${cause instanceof Error ? cause.message : "not a valid schema"}`, { cause });
  }
}

/**
 * The graph as a builder expression: the root type alone, or `t.graph(root,
 * [defs])`. Each def body becomes a module-level const (pushed to `consts`),
 * so refs can say what they point at (`t.ref<typeof body>`) and `JsOf` types
 * them — except refs inside a cycle of defs, which stay untyped: a const's
 * type cannot depend on itself.
 */
function graphSource(graph: SchemaGraphJson, words: readonly string[], names: NameAllocator, consts: string[], indent: string): string {
  const defs = graph.defs ?? [];
  if (defs.length === 0) return typeSource(graph.root, () => undefined, indent);
  const constOf = new Map(defs.map((def) => [def.id, names.allocate(`${camelCase([...words, ...wordsOf(def.id)], "def")}Def`)]));
  const reaches = reachability(defs);
  for (const def of defs) {
    // A ref from this def may be typed when its target cannot reach back here.
    const namer = (id: string) => (reaches.get(id)?.has(def.id) === true ? undefined : constOf.get(id));
    consts.push(`const ${constOf.get(def.id) as string} = ${typeSource(def.body, namer)};`);
  }
  const inner = `${indent}  `;
  const list = defs.map((def) => {
    const members = [
      `id: ${JSON.stringify(def.id)}`,
      ...(def.name === undefined ? [] : [`name: ${JSON.stringify(def.name)}`]),
      `body: ${constOf.get(def.id) as string}`,
    ];
    return `{ ${members.join(", ")} }`;
  });
  return layout("t.graph(", [typeSource(graph.root, (id) => constOf.get(id), inner), layout("[", list, "]", inner)], ")", indent);
}

/** For each def id, every def id its body reaches through refs (itself included when it is on a cycle). */
function reachability(defs: readonly SchemaDef[]): Map<string, Set<string>> {
  const direct = new Map(defs.map((def) => [def.id, refsIn(def.body, new Set<string>())]));
  const closure = new Map<string, Set<string>>();
  for (const def of defs) {
    const seen = new Set<string>();
    const pending = [...(direct.get(def.id) ?? [])];
    for (let id = pending.pop(); id !== undefined; id = pending.pop()) {
      if (seen.has(id)) continue;
      seen.add(id);
      pending.push(...(direct.get(id) ?? []));
    }
    closure.set(def.id, seen);
  }
  return closure;
}

function refsIn(value: unknown, found: Set<string>): Set<string> {
  if (Array.isArray(value)) value.forEach((item) => refsIn(item, found));
  else if (typeof value === "object" && value !== null) {
    const node = value as { kind?: unknown; value?: { id?: unknown } };
    if (node.kind === "ref" && typeof node.value?.id === "string") found.add(node.value.id);
    else Object.values(value).forEach((member) => refsIn(member, found));
  }
  return found;
}
