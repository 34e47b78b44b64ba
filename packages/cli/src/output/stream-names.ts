/**
 * Names for output streams, as people read them: the stream's path in the
 * printed result, JSONPath style — `$` when the result is the stream,
 * `$.upper` for a record field, `$[3].items` for a stream inside the fourth
 * item of stream `$`. Found by rendering the value with a unique marker in
 * place of each stream and locating the markers in the rendered JSON, so the
 * names always match what `invoke` prints.
 */
import { randomUUID } from "node:crypto";
import type { SchemaGraph, SchemaType, StreamLeaf } from "@golem-stream/schema-value";
import { isJsonObject } from "@golem-stream/wire";
import type { JsonValue } from "@golem-stream/wire";
import { nativeToPlain } from "../plain-json.js";

export interface NamedStream {
  readonly name: string;
  readonly streamToken: string;
  readonly elementType: SchemaType;
}

export interface RenderedValue {
  /** The value as plain JSON, each stream replaced by its name. */
  readonly plain: JsonValue;
  readonly streams: readonly NamedStream[];
}

const SIMPLE_KEY = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** Renders `value` (of `type` in `graph`) and names its streams under `base` (`$` for a result). */
export function renderWithStreamNames(value: JsonValue, graph: SchemaGraph, type: SchemaType, base: string): RenderedValue {
  const leaves: StreamLeaf[] = [];
  // A fresh nonce per call, so a string in the value can never pose as a marker.
  const nonce = randomUUID();
  const marker = (index: number) => `\u0000${nonce}:${index}\u0000`;
  const marked = nativeToPlain(value, graph, type, (leaf) => marker(leaves.push(leaf) - 1));
  const names = new Map<number, string>();
  const pattern = new RegExp(`^\u0000${nonce}:([0-9]+)\u0000$`);
  const plain = replaceMarkers(marked, base, pattern, (index, path) => {
    names.set(index, path);
    return path;
  });
  return {
    plain,
    streams: leaves.map((leaf, index) => ({
      name: names.get(index) ?? `${base}?${index}`,
      streamToken: "streamToken" in leaf.ref ? leaf.ref.streamToken : "",
      elementType: leaf.elementType,
    })),
  };
}

function replaceMarkers(value: JsonValue, path: string, pattern: RegExp, found: (index: number, path: string) => string): JsonValue {
  if (typeof value === "string") {
    const match = pattern.exec(value);
    return match === null ? value : found(Number(match[1]), path);
  }
  if (Array.isArray(value)) return value.map((item, i) => replaceMarkers(item, `${path}[${i}]`, pattern, found));
  if (isJsonObject(value)) {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [
        key,
        replaceMarkers(item, SIMPLE_KEY.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`, pattern, found),
      ]),
    );
  }
  return value;
}
