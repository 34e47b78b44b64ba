/**
 * Error paths people can follow. `fromJs` reports where it is in the native
 * value (`value.fields[0].elements[2]`); a person wrote plain JSON, so the
 * same place is named the way they wrote it (`--constructor.name[2]`).
 */
import type { SchemaGraph, SchemaType } from "@golem-stream/schema-value";

const SEGMENT = /^\.([a-z]+)((?:\[[0-9]+\])*)/;

/**
 * The plain-JSON path of native path `nativePath` (rooted at `value`) in a
 * value of `type`, under `base`; undefined when a step has no plain
 * spelling (then the native path is the best there is).
 */
export function plainPath(graph: SchemaGraph, type: SchemaType, nativePath: string, base: string): string | undefined {
  if (!nativePath.startsWith("value")) return undefined;
  let rest = nativePath.slice("value".length);
  let path = base;
  let current = type;
  while (rest !== "") {
    const match = SEGMENT.exec(rest);
    if (match === null) return undefined;
    rest = rest.slice(match[0].length);
    const member = match[1] as string;
    const indexes = [...(match[2] ?? "").matchAll(/\[([0-9]+)\]/g)].map((m) => Number(m[1]));
    const resolved = graph.resolve(current);
    if (member === "fields" && resolved.kind === "record") {
      const field = resolved.value.fields[indexes[0] ?? -1];
      if (field === undefined) return undefined;
      path += /^[A-Za-z_][A-Za-z0-9_-]*$/.test(field.name) ? `.${field.name}` : `[${JSON.stringify(field.name)}]`;
      current = field.body;
    } else if (member === "elements" && (resolved.kind === "list" || resolved.kind === "fixed-list")) {
      path += `[${indexes[0]}]`;
      current = resolved.value.element;
    } else if (member === "elements" && resolved.kind === "tuple") {
      const element = resolved.value.elements[indexes[0] ?? -1];
      if (element === undefined) return undefined;
      path += `[${indexes[0]}]`;
      current = element;
    } else if (member === "inner" && resolved.kind === "option") {
      current = resolved.value.inner;
    } else if (member === "payload" && resolved.kind === "variant") {
      // The case is not in the path; only a lone payload-carrying case can be followed.
      const payloads = resolved.value.cases.filter((c) => c.payload !== undefined);
      if (payloads.length !== 1) return rest === "" ? `${path}.value` : undefined;
      path += ".value";
      current = payloads[0]!.payload as SchemaType;
    } else {
      return undefined;
    }
  }
  return path;
}
