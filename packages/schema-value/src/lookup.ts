/**
 * Membership tests against lists that come from a schema (languages, MIME
 * types, suffixes, union tags). A schema can make these lists long and a
 * value can test them once per node, so past a few entries each list gets
 * a Set, built once: graph types are frozen, so the cache stays true.
 */
import type { RecordField, UnionBranch } from "./types.js";

const SHORT = 8;
const exact = new WeakMap<readonly string[], ReadonlySet<string>>();
const folded = new WeakMap<readonly string[], ReadonlySet<string>>();
const branches = new WeakMap<readonly UnionBranch[], ReadonlyMap<string, UnionBranch>>();
const fieldIndexes = new WeakMap<readonly RecordField[], ReadonlyMap<string, number>>();

export function listIncludes(list: readonly string[], item: string): boolean {
  if (list.length <= SHORT) return list.includes(item);
  let set = exact.get(list);
  if (set === undefined) exact.set(list, (set = new Set(list)));
  return set.has(item);
}

/** Case-insensitive (ASCII-lower-cased, as URL schemes and hosts compare). */
export function listIncludesIgnoringCase(list: readonly string[], item: string): boolean {
  const lower = item.toLowerCase();
  if (list.length <= SHORT) return list.some((entry) => entry.toLowerCase() === lower);
  let set = folded.get(list);
  if (set === undefined) folded.set(list, (set = new Set(list.map((entry) => entry.toLowerCase()))));
  return set.has(lower);
}

export function branchByTag(list: readonly UnionBranch[], tag: string): UnionBranch | undefined {
  if (list.length <= SHORT) return list.find((branch) => branch.tag === tag);
  let map = branches.get(list);
  if (map === undefined) branches.set(list, (map = new Map(list.map((branch) => [branch.tag, branch]))));
  return map.get(tag);
}

/**
 * The index of the record field named `name`, or -1. Union discriminators
 * ask this once per branch and once per value, and many branches may share
 * one large record def through refs: a scan per question would make a
 * hostile graph quadratic (40k branches over a 30k-field def took a minute).
 */
export function fieldIndex(fields: readonly RecordField[], name: string): number {
  if (fields.length <= SHORT) return fields.findIndex((field) => field.name === name);
  let map = fieldIndexes.get(fields);
  if (map === undefined) {
    const byName = new Map<string, number>();
    // Field names are unique (the graph checked), so first and last index agree.
    fields.forEach((field, index) => byName.set(field.name, index));
    fieldIndexes.set(fields, (map = byName));
  }
  return map.get(name) ?? -1;
}
