/**
 * Walks over the type nodes of a graph. A decoded graph may hold one node at many places (a graph
 * built in memory that used one object at many places is decoded once per object and keeps the
 * sharing: `x = t.tuple(x, x)` twenty times is 21 nodes for a million places), so every walk here
 * visits each node once, never once per place: its work is linear in the nodes, not in the tree
 * they spell. Each walk keeps an explicit stack, so neither a long chain of defs nor a deep type
 * exhausts the call stack.
 */
import type { SchemaDef, SchemaType } from "./types.js";

/** The direct child types of a type node (refs not followed). */
export function children(type: SchemaType): SchemaType[] {
  switch (type.kind) {
    case "record":
      return type.value.fields.map((f) => f.body);
    case "variant":
      return type.value.cases.flatMap((c) => (c.payload === undefined ? [] : [c.payload]));
    case "tuple":
      return type.value.elements;
    case "list":
    case "fixed-list":
      return [type.value.element];
    case "map":
      return [type.value.key, type.value.value];
    case "option":
    case "stream":
      return [type.value.inner];
    case "result":
      return [type.value.spec.ok, type.value.spec.err].filter((t): t is SchemaType => t !== undefined);
    case "union":
      return type.value.spec.branches.map((b) => b.body);
    default:
      return [];
  }
}

/**
 * Every node reachable from `starts` without following refs, each once: `visit` is called once
 * per node with its children, and may return one more node to walk from (a def's body, say).
 */
function eachNode(starts: readonly SchemaType[], visit: (node: SchemaType, kids: readonly SchemaType[]) => SchemaType | undefined): void {
  const seen = new Set<SchemaType>();
  const pending = [...starts];
  while (pending.length > 0) {
    const node = pending.pop() as SchemaType;
    if (seen.has(node)) continue;
    seen.add(node);
    const kids = children(node);
    for (const kid of kids) pending.push(kid);
    const next = visit(node, kids);
    if (next !== undefined) pending.push(next);
  }
}

/** Adds `value` to the list `map` holds for `key`. */
function link<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

/**
 * The ids of the defs `type` reaches through refs, followed to any length. A ref to an id that
 * `def` does not know is the caller's to report: `unknown` is called with it.
 */
export function reachedDefs(type: SchemaType, def: (id: string) => SchemaDef | undefined, unknown: (id: string) => never): Set<string> {
  const reached = new Set<string>();
  eachNode([type], (node) => {
    if (node.kind !== "ref" || reached.has(node.value.id)) return undefined;
    const target = def(node.value.id) ?? unknown(node.value.id);
    reached.add(node.value.id);
    return target.body;
  });
  return reached;
}

/**
 * The nodes of the graph (`roots` and every def's body) a value of which can hold a stream leaf,
 * in time linear in the nodes: every stream node, then, backwards along the edges from a node to
 * its parents and from a def's body to the refs that name the def, every node that reaches one.
 */
export function streamBearingNodes(roots: readonly SchemaType[], defs: readonly SchemaDef[]): Set<SchemaType> {
  const parents = new Map<SchemaType, SchemaType[]>();
  const refsTo = new Map<string, SchemaType[]>();
  const defsOf = new Map<SchemaType, string[]>();
  for (const def of defs) link(defsOf, def.body, def.id);
  const bearing = new Set<SchemaType>();
  const queue: SchemaType[] = [];
  const mark = (node: SchemaType) => {
    if (bearing.has(node)) return;
    bearing.add(node);
    queue.push(node);
  };
  eachNode([...roots, ...defs.map((d) => d.body)], (node, kids) => {
    if (node.kind === "stream") mark(node);
    else if (node.kind === "ref") link(refsTo, node.value.id, node);
    for (const kid of kids) link(parents, kid, node);
    return undefined;
  });
  while (queue.length > 0) {
    const node = queue.pop() as SchemaType;
    for (const parent of parents.get(node) ?? []) mark(parent);
    for (const id of defsOf.get(node) ?? []) for (const ref of refsTo.get(id) ?? []) mark(ref);
  }
  return bearing;
}
