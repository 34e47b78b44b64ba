/**
 * Names for output streams, as people read them: the stream's path in the
 * printed result, JSONPath style — `$` when the result is the stream,
 * `$.upper` for a record field, `$[3].items` for a stream inside the fourth
 * item of stream `$`. Found by rendering the value with a unique marker in
 * place of each stream and locating the markers in the rendered JSON, so the
 * names always match what `invoke` prints.
 *
 * A name is the same in every run of one invocation (`invoke`, then `resume`):
 * an item's index is its position in its stream, which a resumed run reads from
 * the cursor it continues after, and a stream whose parent item no run of this
 * process prints is named by its stream id. Counted from 0 in each process, a
 * resumed run gave a name an earlier run had used to another stream.
 */
import { randomUUID } from "node:crypto";
import type { SchemaGraph, SchemaType, StreamLeaf } from "@golem-stream/schema-value";
import { isJsonObject } from "@golem-stream/wire";
import { itemCursorPosition, streamIdentityOf } from "@golem-stream/wire/internal";
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

/**
 * The position in its stream of the next item a stream hands out: 0, or one past the item whose
 * cursor it holds (saved by an earlier run, which printed that item; protocol token field 48).
 * 0 as well for a cursor that cannot be read.
 */
export function nextItemIndex(retainedCursor: string | undefined): number {
  if (retainedCursor === undefined) return 0;
  const position = itemCursorPosition(retainedCursor);
  return position === undefined ? 0 : Number(position) + 1;
}

/**
 * The name of a stream whose parent item this process does not print (a `resume` continues after
 * it): `$?` and the stream's id (token field 32), which every run sees the same. A token that
 * cannot be read is named by itself.
 */
export function unplacedStreamName(streamToken: string): string {
  const hex = streamIdentityOf(streamToken);
  // Not a token of this protocol's layout: the token is still the stream's own name.
  if (hex === undefined || hex.length !== 32) return `$?${streamToken}`;
  // The id as a UUID is written (8-4-4-4-12), as `token inspect` shows it.
  return `$?${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
