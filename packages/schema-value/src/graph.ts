/**
 * SchemaGraph: a root type plus named defs (decisions-v1 section 1).
 *
 * `decodeSchemaGraph` is the only way to obtain one, so every graph a value
 * decoder sees has passed all structural checks: no dangling ref, no
 * duplicate id, no ref chain that loops without a structural type, every
 * regex compiled (once, with the `u` flag), every union discriminator
 * applicable to its branch body.
 *
 * A graph built in memory may use one object at many places: it is decoded
 * once (type-decode.ts) and the graph keeps the sharing, so every walk over a
 * graph's nodes visits each node once (graph-walk.ts). What one decode may
 * read is bounded as json-shape.ts says (`withReadBudget`).
 */
import { getMember, ProtocolError, type JsonObject, type JsonValue } from "@golem-stream/wire";
import { clip, graphError, guard } from "./errors.js";
import { graphStreamsOption, isTypeArgument, optionsError } from "./options.js";
import { fieldIndex } from "./lookup.js";
import { array, members, withReadBudget } from "./json-shape.js";
import { children, reachedDefs, streamBearingNodes } from "./graph-walk.js";
import { decodeType, newTypeFacts, type TypeFacts } from "./type-decode.js";
import type { ResolvedType, SchemaDef, SchemaGraphJson, SchemaType } from "./types.js";

export interface DecodeGraphOptions {
  /**
   * `"allowed"` (default): stream types may appear (method parameters,
   * results and stream elements). `"forbidden"`: any stream type anywhere in
   * the graph is a `validation-error` (constructor parameters).
   */
  readonly streams?: "allowed" | "forbidden";
}

/** Only `decodeGraph` holds this, so every SchemaGraph instance was validated. */
const VALIDATED: unique symbol = Symbol("validated SchemaGraph");

/** A validated, immutable graph. Obtain one with `decodeSchemaGraph`. */
export class SchemaGraph {
  readonly root: SchemaType;
  /** Defs in declaration order. */
  readonly defs: readonly SchemaDef[];
  private readonly byId: ReadonlyMap<string, SchemaDef>;
  private readonly regexes: ReadonlyMap<string, RegExp>;
  /** The non-ref type each def id finally names. */
  private readonly aliasTargets: ReadonlyMap<string, ResolvedType>;
  /** Every type node of this graph: a type handed back by the graph needs no re-validation. */
  private readonly nodes = new WeakSet<object>();
  /** Graphs re-rooted at foreign types (see `rootedAt`), validated once per type object. */
  private readonly rerooted = new WeakMap<object, SchemaGraph>();

  /** @internal Use `decodeSchemaGraph`. */
  constructor(
    proof: typeof VALIDATED,
    root: SchemaType,
    defs: readonly SchemaDef[],
    byId: ReadonlyMap<string, SchemaDef>,
    regexes: ReadonlyMap<string, RegExp>,
    aliasTargets: ReadonlyMap<string, ResolvedType>,
  ) {
    if (proof !== VALIDATED) throw graphError("graph", "must come from decodeSchemaGraph");
    this.root = root;
    this.defs = defs;
    this.byId = byId;
    this.regexes = regexes;
    this.aliasTargets = aliasTargets;
    // Decoded types are private copies; freezing them keeps the graph's
    // invariants true for as long as the graph lives.
    const own = (type: SchemaType) => deepFreeze(type, this.nodes);
    own(root);
    defs.forEach((def) => (Object.freeze(def), own(def.body)));
    Object.freeze(defs);
    Object.freeze(this);
  }

  /** True when `type` is a node of this graph (so it was validated with it). */
  owns(type: SchemaType): boolean {
    return this.nodes.has(type);
  }

  /**
   * This graph with `type` as its root: `this` when the type is one of its
   * nodes, otherwise the defs plus `type`, validated like any graph (its
   * refs must name defs of this graph). Cached per type object.
   */
  rootedAt(type: SchemaType): SchemaGraph {
    if (type === this.root) return this;
    let graph = this.rerooted.get(type);
    if (graph === undefined) {
      const json: JsonObject = { root: type as unknown as JsonValue };
      if (this.defs.length > 0) json["defs"] = this.defs as unknown as JsonValue;
      graph = decodeGraph(json, "allowed");
      if (typeof type === "object" && type !== null) this.rerooted.set(type, graph);
    }
    return graph;
  }

  /** The def named `id`, if the graph declares it. */
  def(id: string): SchemaDef | undefined {
    return this.byId.get(id);
  }

  /**
   * Follows `ref`s to the first non-ref type, in constant time: every def's
   * target was computed once when the graph was decoded. A type foreign to
   * this graph that names an unknown def is a `validation-error`.
   */
  resolve(type: SchemaType): ResolvedType {
    if (type.kind !== "ref") return type;
    const target = this.aliasTargets.get(type.value.id);
    if (target === undefined) throw graphError("ref", `"${clip(type.value.id)}" does not name a def of this graph`);
    return target;
  }

  /** The compiled form of a regex declared by this graph (compiled once, `u` flag). */
  regex(source: string): RegExp {
    const compiled = this.regexes.get(source);
    if (compiled === undefined) throw graphError("regex", "is not declared by this graph");
    return compiled;
  }

  /** The graph's JSON form; `canonicalJson(graph.toJSON())` is its canonical text. */
  toJSON(): SchemaGraphJson {
    const json: SchemaGraphJson = { root: structuredClone(this.root) };
    if (this.defs.length > 0) json.defs = structuredClone([...this.defs]);
    return json;
  }
}

/**
 * Decodes and validates a SchemaGraph. Throws only `ProtocolError`, always
 * `validation-error` (a non-object included: a graph always arrives inside a
 * message that is already valid JSON, so a bad graph is a schema fault),
 * except for options that are not an object (null or undefined are the
 * defaults) or hold a wrong member: the caller's `internal-error`.
 */
export function decodeSchemaGraph(json: JsonValue | SchemaGraphJson, options: DecodeGraphOptions = {}): SchemaGraph {
  // Read before the graph, outside the guard: the caller's mistake is never blamed on the graph.
  const streams = graphStreamsOption(options);
  return guard("schema graph", () => decodeGraph(json as JsonValue, streams));
}

function decodeGraph(json: JsonValue, streams: "allowed" | "forbidden"): SchemaGraph {
  return withReadBudget(() => decodeGraphJson(json, streams));
}

function decodeGraphJson(json: JsonValue, streams: "allowed" | "forbidden"): SchemaGraph {
  const top = members(json, "graph", ["defs", "root"], ["root"]);
  const facts = newTypeFacts();
  const defs: SchemaDef[] = [];
  const byId = new Map<string, SchemaDef>();
  const defsJson = getMember(top, "defs");
  if (defsJson !== undefined) {
    // "defs is omitted when empty": an explicit [] is not canonical.
    if (array(defsJson, "defs").length === 0) throw graphError("defs", "must be omitted when empty");
    (defsJson as JsonValue[]).forEach((entry, i) => {
      const path = `defs[${i}]`;
      const d = members(entry, path, ["id", "name", "body"], ["id", "body"]);
      const id = d["id"];
      if (typeof id !== "string" || id.length === 0) throw graphError(`${path}.id`, "must be a non-empty string");
      if (byId.has(id)) throw graphError(`${path}.id`, `duplicate def id "${clip(id)}"`);
      const def: SchemaDef = { id, body: decodeType(d["body"], `${path}.body`, facts) };
      if (d["name"] !== undefined) {
        if (typeof d["name"] !== "string") throw graphError(`${path}.name`, "must be a string");
        def.name = d["name"];
      }
      defs.push(def);
      byId.set(id, def);
    });
  }
  const root = decodeType(getMember(top, "root"), "root", facts);
  for (const ref of facts.refs) {
    if (!byId.has(ref.id)) throw graphError(ref.path, `dangling ref "${clip(ref.id)}"`);
  }
  const aliasTargets = resolveAliases(byId);
  if (streams === "forbidden" && facts.streams.length > 0) {
    throw graphError(facts.streams[0]?.path ?? "root", "stream types are not allowed here");
  }
  const graph = new SchemaGraph(VALIDATED, root, defs, byId, compileRegexes(facts), aliasTargets);
  checkDeferred(graph, facts);
  return graph;
}

function deepFreeze(value: unknown, nodes: WeakSet<object>): void {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return;
  nodes.add(value);
  for (const member of Object.values(value)) deepFreeze(member, nodes);
  Object.freeze(value);
}

/**
 * The non-ref type every def finally names, refusing a ref chain that comes
 * back to itself without a structural type (it could never hold a value).
 * Each def is walked once: a chain stops at the first def already resolved,
 * so a long alias chain costs linear, not quadratic, time.
 */
function resolveAliases(byId: ReadonlyMap<string, SchemaDef>): Map<string, ResolvedType> {
  const targets = new Map<string, ResolvedType>();
  const onChain = new Set<string>();
  for (const start of byId.keys()) {
    const chain: string[] = [];
    let id = start;
    let target: ResolvedType | undefined = targets.get(id);
    while (target === undefined) {
      if (onChain.has(id)) throw graphError(`def "${clip(id)}"`, "ref chain loops without a structural type");
      onChain.add(id);
      chain.push(id);
      const body = (byId.get(id) as SchemaDef).body; // refs were checked for dangling first
      if (body.kind === "ref") {
        id = body.value.id;
        target = targets.get(id);
      } else target = body;
    }
    for (const link of chain) {
      targets.set(link, target);
      onChain.delete(link);
    }
  }
  return targets;
}

function compileRegexes(facts: TypeFacts): Map<string, RegExp> {
  const compiled = new Map<string, RegExp>();
  for (const { source, path } of facts.regexes) {
    if (compiled.has(source)) continue;
    try {
      compiled.set(source, new RegExp(source, "u"));
    } catch (cause) {
      throw new ProtocolError("validation-error", `schema graph ${path}: not a valid regular expression`, { path, cause });
    }
  }
  return compiled;
}

const STRING_LIKE: ReadonlySet<string> = new Set(["string", "text", "url", "path"]);

/** Checks that need refs resolved: discriminator applicability and map keys. */
function checkDeferred(graph: SchemaGraph, facts: TypeFacts): void {
  for (const { type, path } of facts.unions) {
    type.value.spec.branches.forEach((branch, i) => {
      const at = `${path}.branches[${i}].discriminator`;
      const body = graph.resolve(branch.body);
      const d = branch.discriminator;
      switch (d.rule) {
        case "prefix":
        case "suffix":
        case "contains":
        case "regex":
          if (!STRING_LIKE.has(body.kind)) throw graphError(at, `rule ${d.rule} needs a string, text, url or path body`);
          return;
        case "field-equals":
        case "field-absent": {
          if (body.kind !== "record") throw graphError(at, `rule ${d.rule} needs a record body`);
          const field = body.value.fields[fieldIndex(body.value.fields, d.value.fieldName)];
          if (d.rule === "field-absent") {
            if (field !== undefined) throw graphError(at, `the body declares field "${clip(d.value.fieldName)}"`);
            return;
          }
          if (field === undefined) throw graphError(at, `the body does not declare field "${clip(d.value.fieldName)}"`);
          if (d.value.literal !== undefined && !STRING_LIKE.has(graph.resolve(field.body).kind)) {
            throw graphError(at, "a literal needs a string, text, url or path field");
          }
          return;
        }
      }
    });
  }
  if (facts.mapKeys.length === 0) return;
  const bearing = streamBearingNodes([graph.root], graph.defs);
  for (const { type, path } of facts.mapKeys) {
    if (bearing.has(type)) throw graphError(path, "a map key cannot contain a stream");
  }
}

/**
 * The direct child types of a type node (refs not followed). The node is
 * not validated here: anything but a node of a decoded graph (or one shaped
 * like it) is the caller's mistake, `internal-error`.
 */
export function childTypes(type: SchemaType): SchemaType[] {
  try {
    if (typeof type !== "object" || type === null || typeof type.kind !== "string")
      throw optionsError("childTypes", "type must be a SchemaType node");
    return children(type);
  } catch (cause) {
    if (cause instanceof ProtocolError) throw cause;
    // A member missing or of the wrong type, or a getter of the caller's that throws.
    throw optionsError("childTypes", "type is not a SchemaType node", cause);
  }
}

/**
 * The graph and type a value of `type` (default: the root) is checked
 * against: a foreign type (one not taken from `graph`) is validated first,
 * so a value is never decoded against an unchecked type.
 */
export function checkedType(graph: SchemaGraph, type: SchemaType | undefined): [SchemaGraph, SchemaType] {
  if (!(graph instanceof SchemaGraph)) throw graphError("graph", "must come from decodeSchemaGraph");
  if (!isTypeArgument(type)) throw optionsError("the type argument", "must be a SchemaType");
  if (type === undefined) return [graph, graph.root];
  if (graph.owns(type)) return [graph, type];
  const rooted = graph.rootedAt(type);
  return [rooted, rooted.root];
}

/**
 * The self-contained graph rooted at `type` (protocol section 3.3): only the
 * defs `type` reaches, ids kept, in the original declaration order.
 */
export function extractGraph(graph: SchemaGraph, type: SchemaType): SchemaGraph {
  return guard("schema graph", () => {
    if (!(graph instanceof SchemaGraph)) throw graphError("graph", "must be a decoded SchemaGraph");
    const reached = reachedDefs(
      type,
      (id) => graph.def(id),
      (id) => {
        throw graphError("ref", `"${clip(id)}" does not name a def of this graph`);
      },
    );
    const json: JsonObject = { root: type as unknown as JsonValue };
    const defs = graph.defs.filter((d) => reached.has(d.id));
    if (defs.length > 0) json["defs"] = defs as unknown as JsonValue;
    return decodeGraph(json, "allowed");
  });
}

/**
 * Whether a stream of `elementType` is direct-binary (decisions-v1 section
 * 3): its element resolves to `u8` or `binary`.
 */
export function isDirectBinary(graph: SchemaGraph, elementType: SchemaType): "u8" | "binary" | undefined {
  return guard("stream element type", () => {
    const resolved = graph.resolve(elementType);
    return resolved.kind === "u8" || resolved.kind === "binary" ? resolved.kind : undefined;
  });
}
