/**
 * The server's use of `@golem-stream/schema-value`, in one place: decoding
 * graphs once, validating values in the three stream modes, describing a
 * stream's element (its self-contained graph, digest and wire kind), and
 * swapping provisional references for stable stream tokens.
 */
import { canonicalJson, ProtocolError, type JsonValue, type SchemaValueJson } from "@golem-stream/wire";
import { canonicalStringNodeBytes } from "@golem-stream/wire/internal";
import {
  decodeSchemaGraph,
  decodeSchemaValue,
  encodeSchemaValue,
  extractGraph,
  isDirectBinary,
  SchemaGraph,
  type DecodedValue,
  type SchemaType,
  type StreamMode,
} from "@golem-stream/schema-value";
import { sha256Hex } from "@golem-stream/tokens";
import type { ElementKind } from "./store/session-store.js";

export { SchemaGraph };

const graphCache = new WeakMap<object, SchemaGraph>();

/** Decodes a catalogue graph once per JSON object (catalogue graphs are trusted but still checked). */
export function catalogueGraph(json: object): SchemaGraph {
  let graph = graphCache.get(json);
  if (graph === undefined) {
    graph = decodeSchemaGraph(json as JsonValue);
    graphCache.set(json, graph);
  }
  return graph;
}

/** Decodes a stored canonical graph text. */
const storedGraphs = new Map<string, SchemaGraph>();
export function storedGraph(canonical: string): SchemaGraph {
  let graph = storedGraphs.get(canonical);
  if (graph === undefined) {
    graph = decodeSchemaGraph(JSON.parse(canonical) as JsonValue);
    if (storedGraphs.size > 1024) storedGraphs.clear(); // a bound, not an LRU: graphs are small and few
    storedGraphs.set(canonical, graph);
  }
  return graph;
}

export function decodeValue(json: JsonValue, graph: SchemaGraph, streams: StreamMode, path: string): DecodedValue {
  return decodeSchemaValue(json, graph, { streams, path });
}

export function canonicalValue(decoded: DecodedValue): string {
  return encodeSchemaValue(decoded.value);
}

/**
 * A value's canonical text as the bytes its log row keeps. `Buffer.from`
 * takes small strings from Node's shared 8 KiB pool instead of giving each
 * its own ArrayBuffer (as `TextEncoder` does): about 4x cheaper per 100-byte
 * item, and far less for the garbage collector, on the per-item paths
 * (input items, output items). The bytes are the same UTF-8.
 */
export function utf8Bytes(text: string): Uint8Array {
  return Buffer.from(text, "utf8");
}

/**
 * A decoded value's canonical text as the bytes its log row keeps. A string
 * item the wire read in place from an all-ASCII message (nearly every item
 * of a `stream<string>`) already is those bytes in the message: they are
 * handed on as a view of it, neither encoded again nor copied (the store
 * copies them into its packed row at the commit). The view keeps the
 * message's memory, the socket's read buffer, alive until then; a message's
 * permits cover it (transport/connection.ts).
 */
export function canonicalValueBytes(decoded: DecodedValue): Uint8Array {
  const value = decoded.value as { readonly kind: unknown; readonly value: unknown };
  if (value.kind === "string" && typeof value.value === "string") {
    const view = canonicalStringNodeBytes(value.value);
    if (view !== undefined) return view;
  }
  return utf8Bytes(canonicalValue(decoded));
}

export interface ElementInfo {
  /** Canonical text of the self-contained element graph. */
  readonly canonicalGraph: string;
  readonly digest: string;
  readonly kind: ElementKind;
}

export function describeElement(graph: SchemaGraph, elementType: SchemaType): ElementInfo {
  const element = extractGraph(graph, elementType);
  const canonicalGraph = canonicalJson(element.toJSON() as unknown as JsonValue);
  return {
    canonicalGraph,
    digest: sha256Hex(canonicalGraph),
    kind: isDirectBinary(element, element.root) ?? "value",
  };
}

/**
 * A copy of `value` with every `{"provisionalRef": r}` stream payload whose
 * `r` is in `tokens` replaced by `{"streamToken": tokens.get(r)}`.
 */
export function substituteStreamRefs(value: SchemaValueJson, tokens: ReadonlyMap<string, string>): SchemaValueJson {
  return substitute(value as unknown as JsonValue, tokens) as unknown as SchemaValueJson;
}

function substitute(json: JsonValue, tokens: ReadonlyMap<string, string>): JsonValue {
  if (Array.isArray(json)) return json.map((item) => substitute(item, tokens));
  if (json === null || typeof json !== "object") return json;
  if (json["kind"] === "stream") {
    const payload = json["value"];
    if (payload !== null && typeof payload === "object" && !Array.isArray(payload)) {
      const ref = payload["provisionalRef"];
      const token = typeof ref === "string" ? tokens.get(ref) : undefined;
      if (token !== undefined) return { kind: "stream", value: { streamToken: token } };
    }
  }
  const copy: Record<string, JsonValue> = {};
  for (const [name, member] of Object.entries(json)) {
    // defineProperty, not assignment: a member named "__proto__" stays data.
    Object.defineProperty(copy, name, { value: substitute(member, tokens), enumerable: true, writable: true, configurable: true });
  }
  return copy;
}

/** `sha256Hex(canonicalJson(x))`: digests of descriptors, identities and graphs. */
export function digestOf(json: JsonValue): string {
  return sha256Hex(canonicalJson(json));
}
