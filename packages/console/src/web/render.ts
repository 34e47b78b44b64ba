/**
 * Text for what the page shows: an output item (a native value, through the
 * stream's element schema when it is known, so records show field names) and
 * a readable name for a stream from its JSON pointer inside a value.
 */
import type { ElementSchema, SchemaValueJson } from "@golem-stream/client";
import { toJs, type SchemaGraph, type SchemaType } from "@golem-stream/schema-value";

/** JSON with bigints as numbers' text, Maps and Sets as arrays, bytes as a size. */
function stringify(data: unknown): string {
  return JSON.stringify(data, (_key, value: unknown) => {
    if (typeof value === "bigint") return value.toString();
    if (value instanceof Map) return [...value.entries()];
    if (value instanceof Set) return [...value];
    if (value instanceof Uint8Array) return `<${value.byteLength} bytes>`;
    return value;
  });
}

/** One item as a line of text; a plain string item is shown as itself. */
export function renderItem(value: SchemaValueJson, schema: ElementSchema | undefined, streamName: (token: string) => string): string {
  if (schema !== undefined) {
    try {
      const data = toJs(value as never, schema.graph, schema.elementType, {
        stream: (leaf) => `⟨stream ${"streamToken" in leaf.ref ? streamName(leaf.ref.streamToken) : "?"}⟩`,
      });
      return typeof data === "string" ? data : stringify(data);
    } catch {
      // Shown raw below: the client validated it already, so this is only a display limit.
    }
  }
  const native = value as unknown as { kind: string; value: unknown };
  if (native.kind === "string") return String(native.value);
  return stringify(value);
}

/** `/value/fields/1` inside a `record{name, items}` → `items`; unknown shapes keep the pointer. */
export function pointerName(graph: SchemaGraph | undefined, type: SchemaType | undefined, pointer: string): string {
  if (pointer === "") return "";
  if (graph === undefined || type === undefined) return pointer;
  const segments = pointer.split("/").slice(1);
  const names: string[] = [];
  let current: SchemaType | undefined = type;
  for (let i = 0; i + 1 < segments.length && current !== undefined;) {
    const resolved = graph.resolve(current);
    const [, member, index] = [segments[i], segments[i + 1], segments[i + 2]];
    if (resolved.kind === "record" && member === "fields") {
      const field = resolved.value.fields[Number(index)];
      names.push(field?.name ?? `#${index}`);
      current = field?.body;
      i += 3;
    } else if ((resolved.kind === "list" || resolved.kind === "fixed-list") && member === "elements") {
      names.push(`[${index}]`);
      current = resolved.value.element;
      i += 3;
    } else if (resolved.kind === "tuple" && member === "elements") {
      names.push(`[${index}]`);
      current = resolved.value.elements[Number(index)];
      i += 3;
    } else if (resolved.kind === "option" && member === "inner") {
      current = resolved.value.inner;
      i += 2;
    } else return pointer;
  }
  return names.join(".").replace(/\.\[/g, "[");
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${Math.round(bytes)} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
  return `${(bytes / 1024 ** 3).toFixed(2)} GiB`;
}
