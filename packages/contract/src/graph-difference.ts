/**
 * Where two schema graphs part, said so a person can act on it: the path of the first place they
 * disagree (`parameters.to`, `result[stream item]`) and both types there, briefly (`u32`, `u64`).
 * Used for the `contract-mismatch` differences, whose bare "the result differs" left the reader
 * to diff two graphs by hand.
 *
 * Paths: `.name` a record field, `[]` a list's element, `[stream item]` a stream's, `[0]` a tuple
 * element, `?` an option's inner type, `{key}`/`{value}` a map's, `:case` a variant case's payload,
 * `:ok`/`:err` a result's, `|tag` a union branch. References are followed on both sides.
 */
import type { SchemaDef, SchemaType } from "@golem-stream/schema-value";

/** A decoded graph (`SchemaGraph` satisfies it). */
export interface GraphShape {
  readonly root: SchemaType;
  readonly defs: readonly SchemaDef[];
}

export interface GraphDifference {
  /** Where, starting at the `base` given (`parameters`, `result`, `constructor`). */
  readonly path: string;
  /** The contract's type there, briefly, and the server's. */
  readonly mine: string;
  readonly theirs: string;
}

/** How deep `brief` spells nested types before `…`. */
const BRIEF_DEPTH = 2;
/** How long a brief type may get (a huge record or a long restriction is cut). */
const BRIEF_MAX_CHARS = 120;

/**
 * The first place `mine` and `theirs` disagree, depth first in declaration order; undefined when
 * no node differs (they may still differ in definitions nothing refers to).
 */
export function firstGraphDifference(mine: GraphShape, theirs: GraphShape, base: string): GraphDifference | undefined {
  const walk = new Walk(mine, theirs);
  return walk.compare(mine.root, theirs.root, base);
}

class Walk {
  readonly #mine: ReadonlyMap<string, SchemaType>;
  readonly #theirs: ReadonlyMap<string, SchemaType>;
  /**
   * Pairs of type objects already compared, or being compared: each pair is compared once. So the
   * walk of a recursive type ends wherever its references fall on either side (one side may name
   * a type the other spells out, at another depth), and a graph that shares type objects costs
   * the pairs it has, not the paths to them (twenty levels of `tuple<x, x>` are a million paths).
   * A pair met again found no difference the first time, or the walk would have stopped there.
   */
  readonly #compared = new Map<SchemaType, Set<SchemaType>>();

  constructor(mine: GraphShape, theirs: GraphShape) {
    this.#mine = new Map(mine.defs.map((def) => [def.id, def.body]));
    this.#theirs = new Map(theirs.defs.map((def) => [def.id, def.body]));
  }

  compare(a: SchemaType, b: SchemaType, path: string): GraphDifference | undefined {
    let compared = this.#compared.get(a);
    if (compared?.has(b) === true) return undefined;
    if (compared === undefined) this.#compared.set(a, (compared = new Set()));
    compared.add(b);
    if (a.kind === "ref" || b.kind === "ref") {
      const left = a.kind === "ref" ? this.#mine.get(a.value.id) : a;
      const right = b.kind === "ref" ? this.#theirs.get(b.value.id) : b;
      if (left === undefined || right === undefined) return this.#differ(a, b, path);
      return this.compare(left, right, path);
    }
    if (a.kind !== b.kind) return this.#differ(a, b, path);
    switch (a.kind) {
      case "record": {
        const right = (b as typeof a).value.fields;
        const left = a.value.fields;
        if (
          !sameJson(
            left.map((f) => f.name),
            right.map((f) => f.name),
          )
        )
          return this.#differ(a, b, path);
        for (const [i, field] of left.entries()) {
          const found = this.compare(field.body, (right[i] as typeof field).body, `${path}.${field.name}`);
          if (found !== undefined) return found;
        }
        return this.#rest(a, b, path, ["fields"]);
      }
      case "list":
      case "fixed-list":
        return this.compare(a.value.element, (b as typeof a).value.element, `${path}[]`) ?? this.#rest(a, b, path, ["element"]);
      case "stream":
        return this.compare(a.value.inner, (b as typeof a).value.inner, `${path}[stream item]`) ?? this.#rest(a, b, path, ["inner"]);
      case "option":
        return this.compare(a.value.inner, (b as typeof a).value.inner, `${path}?`) ?? this.#rest(a, b, path, ["inner"]);
      case "tuple": {
        const right = (b as typeof a).value.elements;
        if (a.value.elements.length !== right.length) return this.#differ(a, b, path);
        for (const [i, element] of a.value.elements.entries()) {
          const found = this.compare(element, right[i] as SchemaType, `${path}[${i}]`);
          if (found !== undefined) return found;
        }
        return this.#rest(a, b, path, ["elements"]);
      }
      case "map": {
        const right = (b as typeof a).value;
        return (
          this.compare(a.value.key, right.key, `${path}{key}`) ??
          this.compare(a.value.value, right.value, `${path}{value}`) ??
          this.#rest(a, b, path, ["key", "value"])
        );
      }
      case "variant": {
        const right = (b as typeof a).value.cases;
        if (
          !sameJson(
            a.value.cases.map((c) => [c.name, c.payload === undefined]),
            right.map((c) => [c.name, c.payload === undefined]),
          )
        )
          return this.#differ(a, b, path);
        for (const [i, item] of a.value.cases.entries()) {
          const theirs = (right[i] as typeof item).payload;
          const found =
            item.payload === undefined || theirs === undefined ? undefined : this.compare(item.payload, theirs, `${path}:${item.name}`);
          if (found !== undefined) return found;
        }
        return this.#rest(a, b, path, ["cases"]);
      }
      case "result": {
        const left = a.value.spec;
        const right = (b as typeof a).value.spec;
        if ((left.ok === undefined) !== (right.ok === undefined) || (left.err === undefined) !== (right.err === undefined))
          return this.#differ(a, b, path);
        const ok = left.ok === undefined || right.ok === undefined ? undefined : this.compare(left.ok, right.ok, `${path}:ok`);
        const err = left.err === undefined || right.err === undefined ? undefined : this.compare(left.err, right.err, `${path}:err`);
        return ok ?? err ?? this.#rest(a, b, path, ["spec"]);
      }
      case "union": {
        const right = (b as typeof a).value.spec.branches;
        const left = a.value.spec.branches;
        if (
          !sameJson(
            left.map((x) => [x.tag, x.discriminator]),
            right.map((x) => [x.tag, x.discriminator]),
          )
        )
          return this.#differ(a, b, path);
        for (const [i, branch] of left.entries()) {
          const found = this.compare(branch.body, (right[i] as typeof branch).body, `${path}|${branch.tag}`);
          if (found !== undefined) return found;
        }
        return this.#rest(a, b, path, ["spec"]);
      }
      default:
        return sameJson(a, b) ? undefined : this.#differ(a, b, path);
    }
  }

  /** The members of a compound node besides its children (metadata): compared whole. */
  #rest(a: SchemaType, b: SchemaType, path: string, children: readonly string[]): GraphDifference | undefined {
    const strip = (type: SchemaType): unknown => Object.fromEntries(Object.entries(type.value).filter(([key]) => !children.includes(key)));
    return sameJson(strip(a), strip(b)) ? undefined : this.#differ(a, b, path);
  }

  #differ(a: SchemaType, b: SchemaType, path: string): GraphDifference {
    return { path, mine: brief(a, BRIEF_DEPTH), theirs: brief(b, BRIEF_DEPTH) };
  }
}

/** A short spelling of a type: `u32`, `stream<u8>`, `record{to: u64, delayMs: u32}`, with its restrictions and metadata when it has any. */
export function brief(type: SchemaType, depth: number): string {
  const text = spell(type, depth);
  return text.length <= BRIEF_MAX_CHARS ? text : `${text.slice(0, BRIEF_MAX_CHARS - 1)}…`;
}

function spell(type: SchemaType, depth: number): string {
  const inner = (child: SchemaType): string => (depth <= 0 ? "…" : spell(child, depth - 1));
  switch (type.kind) {
    case "ref":
      return `ref ${type.value.id}`;
    case "record":
      return `record{${type.value.fields.map((f) => `${f.name}: ${inner(f.body)}`).join(", ")}}${extras(type, ["fields"])}`;
    case "list":
      return `list<${inner(type.value.element)}>${extras(type, ["element"])}`;
    case "fixed-list":
      return `list<${inner(type.value.element)}, ${type.value.length}>${extras(type, ["element", "length"])}`;
    case "stream":
      return `stream<${inner(type.value.inner)}>${extras(type, ["inner"])}`;
    case "option":
      return `option<${inner(type.value.inner)}>${extras(type, ["inner"])}`;
    case "tuple":
      return `tuple<${type.value.elements.map(inner).join(", ")}>${extras(type, ["elements"])}`;
    case "map":
      return `map<${inner(type.value.key)}, ${inner(type.value.value)}>${extras(type, ["key", "value"])}`;
    case "result": {
      const { ok, err } = type.value.spec;
      return `result<${ok === undefined ? "_" : inner(ok)}, ${err === undefined ? "_" : inner(err)}>${extras(type, ["spec"])}`;
    }
    case "variant":
      return `variant{${type.value.cases.map((c) => (c.payload === undefined ? c.name : `${c.name}(${inner(c.payload)})`)).join(", ")}}${extras(type, ["cases"])}`;
    case "enum":
      return `enum{${type.value.cases.join(", ")}}${extras(type, ["cases"])}`;
    case "flags":
      return `flags{${type.value.flags.join(", ")}}${extras(type, ["flags"])}`;
    case "union":
      return `union{${type.value.spec.branches.map((b) => `${b.tag}: ${inner(b.body)}`).join(", ")}}${extras(type, ["spec"])}`;
    default:
      return `${type.kind}${extras(type, [])}`;
  }
}

/** The node's other members (restrictions, metadata) as JSON, or nothing when it has none. */
function extras(type: SchemaType, children: readonly string[]): string {
  // An empty member (`restrictions: {}`) says nothing; it is left out.
  const rest = Object.entries(type.value as Record<string, unknown>).filter(([key, value]) => !children.includes(key) && !isEmpty(value));
  return rest.length === 0 ? "" : ` ${JSON.stringify(Object.fromEntries(rest))}`;
}

function isEmpty(value: unknown): boolean {
  return value === undefined || (typeof value === "object" && value !== null && Object.keys(value).length === 0);
}

/** Structural equality of JSON-like data; object member order does not matter, absent equals undefined. */
export function sameJson(a: unknown, b: unknown): boolean {
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
