/**
 * Conversions between native values and plain JavaScript data when the
 * schema is known. The mapping (docs/protocol/schema-value.md has the table):
 *
 *   bool -> boolean; s8..u32, f32, f64 -> number; s64, u64, duration -> bigint
 *   char, string, path, url -> string; datetime -> canonical RFC 3339 string
 *   record -> object by field name; variant -> {case: name, value?}
 *   enum -> case name; flags -> Set of set flag names
 *   tuple, list, fixed-list -> array; map -> Map
 *   option -> T | undefined, or {some: T} | undefined when T is itself an option
 *   result -> {ok: T} | {err: E}; text -> {text, language?}
 *   binary -> Uint8Array, or {bytes, mimeType} when a MIME type is set
 *   quantity -> {mantissa: bigint, scale, unit}; union -> {tag, body}
 *   stream -> whatever `hooks.stream` makes of the leaf (default: the ref)
 *
 * `fromJs` accepts a few more spellings (noted per kind) and always
 * validates what it builds with `decodeSchemaValue`, so it can never produce
 * an invalid value.
 */
import { isJsonObject, type JsonValue } from "@golem-stream/wire";
import { fromJs, type FromJsHooks } from "./from-js.js";
import type { SchemaGraph } from "./graph.js";
import type { JsOf } from "./js-types.js";
import { toJs, type ToJsHooks } from "./to-js.js";
import type { SchemaType, SchemaValue, SchemaValueInput, StreamRef } from "./types.js";

export { fromJs, type FromJsHooks, type StreamContext } from "./from-js.js";
export { toJs, type ToJsHooks } from "./to-js.js";

/** A converter pinned to one type, whose data shape is checked at compile time (see `JsOf`). */
export interface JsCodec<T extends SchemaType> {
  toJs(value: SchemaValueInput, hooks?: ToJsHooks): JsOf<T>;
  fromJs(data: JsOf<T>, hooks?: FromJsHooks): SchemaValue;
}

export function jsCodec<T extends SchemaType>(graph: SchemaGraph, type: T): JsCodec<T> {
  return {
    toJs: (value, hooks) => toJs(value, graph, type, hooks) as JsOf<T>,
    fromJs: (data, hooks) => fromJs(data, graph, type, hooks),
  };
}

/** Type guard used by callers that receive either form. */
export function isStreamRef(x: unknown): x is StreamRef {
  return isJsonObject(x as JsonValue) && (Object.hasOwn(x as object, "provisionalRef") || Object.hasOwn(x as object, "streamToken"));
}
