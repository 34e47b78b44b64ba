/**
 * Invoking with plain JavaScript: `client.agent({...})` reads the catalogue
 * once, then `agent.invoke(method, args)` converts `args` with the method's
 * parameter schema (`fromJs`). Wherever the schema has a stream, the argument
 * is a source; its element type picks the binding (`stream<u8>` → bytes,
 * `stream<binary>` → binary items, anything else → items converted with the
 * element schema, which may themselves hold nested stream sources).
 */
import {
  encodeSchemaValue,
  fromJs,
  isDirectBinary,
  type FromJsHooks,
  type SchemaGraph,
  type SchemaType,
  type StreamContext,
} from "@golem-stream/schema-value";
import type { JsonValue, SchemaValueJson } from "@golem-stream/wire";
import { ClientError } from "./errors.js";
import { InputStream, inputStream, type ParamNode } from "./input-stream.js";
import type { AgentTypeSchema } from "./discovery.js";
import { randomUUID } from "./uuid.js";

/** How messages name the data converted (`fromJs`'s `name` and `parameters`): none, a method's name, `constructor`. */
type Naming = Pick<FromJsHooks, "name" | "parameters">;

/**
 * Converts `data` to a native value; stream positions become `InputStream`
 * bindings made from the source found there.
 */
export function jsToParams(data: unknown, graph: SchemaGraph, type?: SchemaType): ParamNode {
  return toParams(data, graph, type, {});
}

/**
 * A method's parameters, `data`, as `jsToParams` converts them; a message names a place by the
 * method's and the parameters' names (`ticks.n: expected a number, got "x"`), where the
 * caller wrote it, not by the native value's structure.
 */
export function methodParams(method: string, data: unknown, graph: SchemaGraph): ParamNode {
  return toParams(data, graph, undefined, { name: method, parameters: true });
}

/**
 * `data` as a native value. `item`, for an item of an input stream, says which (`count.input: item
 * 3`): its messages, and the places of the streams in it, are said after it.
 */
function toParams(data: unknown, graph: SchemaGraph, type: SchemaType | undefined, naming: Naming, item?: string): ParamNode {
  const bindings = new Map<string, InputStream>();
  let native: JsonValue;
  try {
    const value = fromJs(data, graph, type, {
      ...naming,
      streams: "provisional",
      stream: (source, context) => {
        const placeholder = randomUUID();
        const at = item === undefined ? context.dataPath : context.dataPath === "" ? item : `${item}: ${context.dataPath}`;
        bindings.set(placeholder, bindingFor(source, context, at));
        return { provisionalRef: placeholder };
      },
    });
    native = JSON.parse(encodeSchemaValue(value)) as JsonValue;
  } catch (error) {
    if (error instanceof ClientError) throw error;
    const code = error instanceof Error && "code" in error && typeof error.code === "string" ? error.code : undefined;
    const message = error instanceof Error ? error.message : "arguments do not match the schema";
    const hint = item !== undefined && isBytes(data) ? bytesHint(graph, type) : "";
    throw new ClientError("invalid-argument", item === undefined ? message : `${item}: ${message}${hint}`, {
      ...(code === "validation-error" || code === "unsupported-value" ? { code } : {}),
      cause: error,
    });
  }
  return substitute(native, bindings) as ParamNode;
}

/** The binding of the source found at `at` (its place in the call: `count.input`, `jobs: item 2: log`). */
function bindingFor(source: unknown, context: StreamContext, at: string): InputStream {
  if (source instanceof InputStream) return source;
  const { graph, elementType } = context;
  const direct = isDirectBinary(graph, elementType);
  if (direct !== undefined) {
    const binding = direct === "u8" ? inputStream.bytes(source as never) : inputStream.binary(source as never);
    binding.place = at;
    return binding;
  }
  // The feeder encodes each item once, in the order the source yields them: the count is its index.
  let index = 0;
  return inputStream.values(source as never, (item: unknown) => toParams(item, graph, elementType, { name: "" }, `${at}: item ${index++}`));
}

function isBytes(value: unknown): boolean {
  return ArrayBuffer.isView(value) || value instanceof ArrayBuffer;
}

/** Kinds that take a byte array (`Uint8Array` for a `list<u8>`), or may hold one. */
const TAKES_BYTES: ReadonlySet<string> = new Set(["list", "fixed-list", "tuple", "option", "binary"]);
const TAKES_TEXT: ReadonlySet<string> = new Set(["string", "char", "text", "path", "url"]);

/**
 * Bytes as an item of a stream of another type are almost always a Node stream or a file passed
 * whole (`process.stdin`): its chunks are not the items. Types do not catch it (a `Readable`
 * iterates `any`), so the message says what to do.
 */
function bytesHint(graph: SchemaGraph, type: SchemaType | undefined): string {
  const kind = graph.resolve(type ?? graph.root).kind;
  if (TAKES_BYTES.has(kind)) return "";
  const split = TAKES_TEXT.has(kind)
    ? "to send its lines, split it first, e.g. with node:readline"
    : "to send one item per line, split it first, e.g. with node:readline, and convert each line";
  return ` (a byte stream such as process.stdin yields chunks of bytes: ${split})`;
}

/** Puts each binding where fromJs left its placeholder reference. */
function substitute(value: JsonValue, bindings: ReadonlyMap<string, InputStream>): unknown {
  if (Array.isArray(value)) return value.map((child) => substitute(child, bindings));
  if (typeof value !== "object" || value === null) return value;
  const payload = value["value"];
  if (value["kind"] === "stream" && typeof payload === "object" && payload !== null && !Array.isArray(payload)) {
    const ref = payload["provisionalRef"];
    const binding = typeof ref === "string" ? bindings.get(ref) : undefined;
    if (binding !== undefined) return binding;
  }
  const out: Record<string, unknown> = {};
  for (const [name, child] of Object.entries(value)) out[name] = substitute(child, bindings);
  return out;
}

/** Constructor parameters from JavaScript (they may not contain streams), named as `constructor` in messages. */
export function jsToConstructor(data: unknown, type: AgentTypeSchema): SchemaValueJson {
  try {
    const value = fromJs(data, type.constructorParameters, undefined, { name: "constructor", parameters: true, streams: "forbidden" });
    return JSON.parse(encodeSchemaValue(value)) as SchemaValueJson;
  } catch (error) {
    throw new ClientError("invalid-argument", error instanceof Error ? error.message : "constructor arguments do not match the schema", {
      code: "validation-error",
      cause: error,
    });
  }
}
