/**
 * `defineAgentType`: one declaration of an agent type — its name, constructor
 * record, configuration entries and methods — written with schema-value's `t`
 * builders. The declaration keeps the builders' compile-time types, so the
 * server (`implement`) and the client (`typedAgent`) derive their JavaScript
 * signatures from the same object; at run time it carries the SchemaGraph JSON
 * the agent host and the discovery endpoint already speak.
 */
import { decodeSchemaGraph, t, type GraphOf, type JsonValue, type SchemaGraphJson, type SchemaType } from "@golem-stream/schema-value";
import { ContractError } from "./errors.js";

/**
 * A record type, as `t.record({...})` builds it: constructors and method
 * parameters are records. Where the schema needs definitions (`t.ref`), pass
 * a graph instead: `t.graph(root, defs)` whose root is, or refers to, a record.
 */
export type RecordSchema = (SchemaType & { readonly kind: "record" }) | GraphOf;

/** A method's result: a type, or a graph (`t.graph(root, defs)`) when it needs definitions. */
export type ResultSchema = SchemaType | GraphOf;

/**
 * What the server does with a running invocation of a method when it loses it (a restart):
 * `"none"` (the default) finishes it `invocation-failed`; `"replay"` runs the method again from
 * the start and continues it (the server's docs/durable-execution.md). The server's business only:
 * not served by discovery, not compared with a client's contract.
 */
export type Durability = "none" | "replay";

export interface MethodSpec {
  /** The method's parameters, one record field per parameter. */
  readonly params: RecordSchema;
  /** The result type; omit it for a method without a result. */
  readonly result?: ResultSchema;
  /** This method's durability; without it, the agent type's. */
  readonly durability?: Durability;
}

/** A declared configuration entry (protocol section 4.2); `accepts` runs on the server only. */
export interface ConfigDeclaration {
  readonly path: readonly string[];
  /** Returns false for an application-JSON value this entry does not accept. */
  readonly accepts?: (value: JsonValue) => boolean;
}

export interface AgentTypeSpec<N extends string, C extends RecordSchema, M extends Readonly<Record<string, MethodSpec>>> {
  readonly name: N;
  readonly constructor: C;
  readonly config?: readonly ConfigDeclaration[];
  /** Methods in declaration order (the order the catalogue lists them in). */
  readonly methods: M;
  /** The durability of every method that does not declare its own (default `"none"`). */
  readonly durability?: Durability;
}

/** One method in the catalogue's form: graphs rooted at the parameter record and at the result. */
export interface MethodGraphs {
  readonly name: string;
  readonly parameters: SchemaGraphJson;
  readonly result?: SchemaGraphJson;
}

/** The agent type in the form the agent host and the discovery endpoint carry. */
export interface AgentTypeGraphs {
  readonly name: string;
  readonly constructorParameters: SchemaGraphJson;
  readonly methods: readonly MethodGraphs[];
  readonly config: readonly ConfigDeclaration[];
}

export interface AgentContract<
  N extends string = string,
  C extends RecordSchema = RecordSchema,
  M extends Readonly<Record<string, MethodSpec>> = Readonly<Record<string, MethodSpec>>,
> {
  readonly name: N;
  readonly constructor: C;
  readonly config: readonly ConfigDeclaration[];
  readonly methods: M;
  /** The same agent type as SchemaGraph JSON, validated when the contract was defined. */
  readonly graphs: AgentTypeGraphs;
  /**
   * The durability of each method that declares one, or whose agent type does (the method's own
   * first). Kept beside the graphs, which are what discovery serves and a client compares.
   */
  readonly durability: Readonly<Record<string, Durability>>;
}

/** Any contract; what functions that accept every contract take. */
export type AnyAgentContract = AgentContract<string, RecordSchema, Readonly<Record<string, MethodSpec>>>;

/** The method names of a contract. */
export type MethodName<C extends AnyAgentContract> = keyof C["methods"] & string;

/**
 * Declares an agent type. Every schema is checked with `decodeSchemaGraph`
 * here, so a contract that exists is one the protocol accepts; a bad one
 * throws `ContractError` (`invalid-contract`) naming the part at fault.
 */
export function defineAgentType<const N extends string, C extends RecordSchema, M extends Readonly<Record<string, MethodSpec>>>(
  spec: AgentTypeSpec<N, C, M>,
): AgentContract<N, C, M> {
  if (typeof spec !== "object" || spec === null) throw new ContractError("defineAgentType needs a specification object");
  const { name, methods } = spec;
  const constructorType: unknown = Object.hasOwn(spec, "constructor") ? spec.constructor : undefined;
  if (typeof name !== "string" || name.length === 0) throw new ContractError("an agent type needs a non-empty name");
  const config = spec.config ?? [];
  if (
    !Array.isArray(config) ||
    // Protocol 4.2: each path a non-empty array of non-empty strings.
    config.some(
      (entry) =>
        !Array.isArray(entry?.path) ||
        entry.path.length === 0 ||
        entry.path.some((part: unknown) => typeof part !== "string" || part.length === 0),
    )
  ) {
    throw new ContractError(`agent type ${name}: config must be a list of {path: string[]}, each path non-empty, of non-empty names`);
  }
  // Protocol 4.1: "Constructor parameters MUST NOT contain streams".
  const constructorParameters = recordGraph(constructorType, `agent type ${name}: constructor`, "forbidden");
  if (typeof methods !== "object" || methods === null) throw new ContractError(`agent type ${name}: methods must be an object`);
  const typeDurability = checkedDurability(spec.durability, `agent type ${name}`);
  const durability: Record<string, Durability> = {};
  const methodGraphs: MethodGraphs[] = Object.entries(methods).map(([method, body]) => {
    const where = `agent type ${name}: method ${method}`;
    if (typeof body !== "object" || body === null) throw new ContractError(`${where} must be {params, result?}`);
    const parameters = recordGraph(body.params, `${where}: params`);
    const declared = checkedDurability(body.durability, where) ?? typeDurability;
    // Defined, not assigned: a method named `__proto__` would set the map's prototype instead.
    if (declared !== undefined)
      Object.defineProperty(durability, method, { value: declared, enumerable: true, writable: true, configurable: true });
    if (body.result === undefined) return { name: method, parameters };
    return { name: method, parameters, result: checkedGraph(body.result, `${where}: result`) };
  });
  return Object.freeze({
    name,
    constructor: constructorType as C,
    config,
    methods,
    graphs: Object.freeze({ name, constructorParameters, methods: Object.freeze(methodGraphs), config }),
    durability: Object.freeze(durability),
  });
}

function checkedDurability(durability: unknown, where: string): Durability | undefined {
  if (durability === undefined || durability === "none" || durability === "replay") return durability;
  throw new ContractError(`${where}: durability must be "none" or "replay", not ${JSON.stringify(durability) ?? String(durability)}`);
}

function recordGraph(schema: unknown, where: string, streams: "allowed" | "forbidden" = "allowed"): SchemaGraphJson {
  const notRecord = () => new ContractError(`${where} must be a record type (t.record({...})), or a graph rooted at one`);
  if (typeof schema !== "object" || schema === null) throw notRecord();
  const graph = checkedGraph(schema as ResultSchema, where, streams);
  if (decodeSchemaGraph(graph).resolve(graph.root).kind !== "record") throw notRecord();
  return graph;
}

/** The schema as graph JSON (a type becomes a graph without defs), validated. */
function checkedGraph(schema: ResultSchema, where: string, streams: "allowed" | "forbidden" = "allowed"): SchemaGraphJson {
  const graph: SchemaGraphJson = "root" in schema ? schema : t.graph(schema);
  try {
    decodeSchemaGraph(graph, { streams });
  } catch (cause) {
    throw new ContractError(`${where}: ${cause instanceof Error ? cause.message : "not a valid schema"}`, { cause });
  }
  return graph;
}
