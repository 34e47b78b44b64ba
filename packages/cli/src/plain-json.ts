/**
 * Plain JSON for people: how `invoke` reads arguments that are not native
 * SchemaValue JSON, and how it prints values. The schema decides the
 * meaning, `@golem-stream/schema-value`'s `fromJs`/`toJs` do the conversion
 * and validation; this file only bridges what JSON cannot say directly:
 *
 * - 64-bit integers, durations and quantity mantissas: JSON numbers when
 *   they are safe integers, else canonical decimal strings (printed always as
 *   strings, so scripts never lose precision);
 * - f32/f64: a number, or "NaN", "Infinity", "-Infinity";
 * - binary: an array of byte values, or a base64 string (printed as base64);
 * - flags: an array of set flag names; maps: an array of [key, value] pairs;
 * - an absent option: null.
 */
import { fromJs, toJs } from "@golem-stream/schema-value";
import type { SchemaGraph, SchemaType, SchemaValue, StreamLeaf } from "@golem-stream/schema-value";
import { ProtocolError, isJsonObject } from "@golem-stream/wire";
import type { JsonValue } from "@golem-stream/wire";
import { plainPath } from "./plain-path.js";

const DECIMAL = /^(0|-?[1-9][0-9]*)$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const MAX_DEPTH = 128;

/** Builds the native value of plain JSON `json` for `type`, validated. Throws only `ProtocolError`. */
export function plainToNative(json: JsonValue, graph: SchemaGraph, type: SchemaType, path = "value"): SchemaValue {
  const input = toJsInput(json, graph, type, path, 0);
  try {
    return fromJs(input, graph, type);
  } catch (error) {
    // fromJs names places in the native value (and in its JavaScript input, in parentheses); say
    // them as the plain JSON the person wrote, under the flag that carried it.
    if (!(error instanceof ProtocolError) || error.path === undefined) throw error;
    const detail = detailAfter(error.message, error.path);
    const plain = plainPath(graph, type, error.path, path);
    if (detail === undefined || plain === undefined) throw error;
    throw new ProtocolError(error.code, `${plain}: ${detail}`, { path: plain });
  }
}

/** What a `fromJs` message says after its places: `<path>: detail` or `<path> (<data place>): detail`. */
function detailAfter(message: string, path: string): string | undefined {
  if (message.startsWith(`${path}: `)) return message.slice(path.length + 2);
  if (!message.startsWith(`${path} (`)) return undefined;
  const end = message.indexOf("): ", path.length);
  return end < 0 ? undefined : message.slice(end + 3);
}

/** Renders a native value as plain JSON; `streamName` says what to print in place of each stream. */
export function nativeToPlain(
  value: JsonValue | SchemaValue,
  graph: SchemaGraph,
  type: SchemaType,
  streamName: (leaf: StreamLeaf) => string,
): JsonValue {
  return toJson(toJs(value, graph, type, { stream: (leaf) => ({ [STREAM_NAME]: streamName(leaf) }) }), 0);
}

const STREAM_NAME = Symbol("stream name");

function toJsInput(json: JsonValue, graph: SchemaGraph, type: SchemaType, path: string, depth: number): unknown {
  if (depth > MAX_DEPTH) throw new ProtocolError("limit-exceeded", `${path}: nests too deeply`, { path });
  const resolved = graph.resolve(type);
  const into = (child: JsonValue, childType: SchemaType, at: string) => toJsInput(child, graph, childType, at, depth + 1);
  switch (resolved.kind) {
    case "s64":
    case "u64":
      return bigIntOf(json, path, resolved.kind);
    case "duration":
      return bigIntOf(json, path, "duration");
    case "f32":
    case "f64":
      if (json === "NaN") return Number.NaN;
      if (json === "Infinity") return Number.POSITIVE_INFINITY;
      if (json === "-Infinity") return Number.NEGATIVE_INFINITY;
      return json;
    case "quantity":
      if (isJsonObject(json) && json["mantissa"] !== undefined)
        return { ...json, mantissa: bigIntOf(json["mantissa"], `${path}.mantissa`, "mantissa") };
      return json;
    case "binary":
      if (typeof json === "string") return base64Bytes(json, path);
      if (isJsonObject(json) && typeof json["bytes"] === "string") return { ...json, bytes: base64Bytes(json["bytes"], `${path}.bytes`) };
      if (!Array.isArray(json) && !isJsonObject(json)) throw plainError(path, "expected base64 or an array of bytes");
      return json;
    case "flags":
      if (!isJsonObject(json) && !(Array.isArray(json) && json.every((name) => typeof name === "string")))
        throw plainError(path, "expected an array of flag names");
      return json;
    case "datetime":
      if (typeof json !== "string") throw plainError(path, "expected an RFC 3339 date-time string");
      return json;
    case "url":
      if (typeof json !== "string") throw plainError(path, "expected a string");
      return json;
    case "record": {
      if (!isJsonObject(json)) return json;
      const fields = resolved.value.fields;
      const unknown = Object.keys(json).find((key) => !fields.some((field) => field.name === key));
      if (unknown !== undefined) {
        throw new ProtocolError(
          "validation-error",
          `${path}: unknown field ${JSON.stringify(unknown)} (fields: ${fields.map((f) => f.name).join(", ") || "none"})`,
          {
            path,
          },
        );
      }
      // An option may be left out (it is then absent); every other field is required.
      const missing = fields.find((field) => !Object.hasOwn(json, field.name) && graph.resolve(field.body).kind !== "option");
      if (missing !== undefined)
        throw new ProtocolError("validation-error", `${path}: missing field ${JSON.stringify(missing.name)}`, { path });
      return Object.fromEntries(
        resolved.value.fields
          .filter((field) => Object.hasOwn(json, field.name))
          .map((field) => [field.name, into(json[field.name] as JsonValue, field.body, `${path}.${field.name}`)]),
      );
    }
    case "variant": {
      if (!isJsonObject(json) || typeof json["case"] !== "string") return json;
      const cases = resolved.value.cases;
      const chosen = cases.find((c) => c.name === json["case"]);
      // Named with the cases there are, as an unknown field is with the fields.
      if (chosen === undefined)
        throw plainError(path, `unknown case ${JSON.stringify(json["case"])} (cases: ${cases.map((c) => c.name).join(", ")})`);
      return chosen.payload === undefined || json["value"] === undefined
        ? json
        : { ...json, value: into(json["value"], chosen.payload, `${path}.value`) };
    }
    case "tuple":
      return Array.isArray(json)
        ? json.map((item, i) => {
            const elementType = resolved.value.elements[i];
            return elementType === undefined ? item : into(item, elementType, `${path}[${i}]`);
          })
        : json;
    case "list":
    case "fixed-list":
      return Array.isArray(json) ? json.map((item, i) => into(item, resolved.value.element, `${path}[${i}]`)) : json;
    case "map":
      if (!Array.isArray(json)) throw plainError(path, "expected an array of [key, value] pairs");
      return json.map((pair, i) => {
        if (!Array.isArray(pair) || pair.length !== 2) throw plainError(`${path}[${i}]`, "expected a [key, value] pair");
        return [
          into(pair[0] as JsonValue, resolved.value.key, `${path}[${i}][0]`),
          into(pair[1] as JsonValue, resolved.value.value, `${path}[${i}][1]`),
        ];
      });
    case "option": {
      if (json === null) return undefined;
      const innerIsOption = graph.resolve(resolved.value.inner).kind === "option";
      if (innerIsOption && isJsonObject(json) && json["some"] !== undefined) {
        return { some: into(json["some"], resolved.value.inner, `${path}.some`) };
      }
      return innerIsOption ? json : into(json, resolved.value.inner, path);
    }
    case "result": {
      if (!isJsonObject(json)) return json;
      const tag = Object.hasOwn(json, "ok") ? "ok" : Object.hasOwn(json, "err") ? "err" : undefined;
      const side = tag === undefined ? undefined : resolved.value.spec[tag];
      if (tag === undefined || side === undefined) return json;
      return { [tag]: into(json[tag] as JsonValue, side, `${path}.${tag}`) };
    }
    case "union": {
      if (!isJsonObject(json) || typeof json["tag"] !== "string" || json["body"] === undefined) return json;
      const branch = resolved.value.spec.branches.find((b) => b.tag === json["tag"]);
      return branch === undefined ? json : { ...json, body: into(json["body"], branch.body, `${path}.body`) };
    }
    default:
      return json;
  }
}

/**
 * A 64-bit integer: a number that is a safe integer, or a decimal string of any size (range is
 * checked by `fromJs`). Refused here, so the message names the schema's type (`an s64`) where
 * `fromJs`'s would speak of JavaScript's bigint.
 */
function bigIntOf(json: JsonValue, path: string, kind: "s64" | "u64" | "duration" | "mantissa"): unknown {
  if (typeof json === "string" && DECIMAL.test(json) && json.length <= 40) return BigInt(json);
  if (typeof json === "number" && Number.isSafeInteger(json)) return json;
  const example = kind === "s64" ? ' ("-9223372036854775808")' : kind === "u64" ? ' ("18446744073709551615")' : "";
  const what = kind === "duration" ? "a duration in nanoseconds" : kind === "mantissa" ? "a mantissa" : `an ${kind}`;
  throw plainError(path, `expected ${what}, a whole number: a JSON number up to 2^53 - 1 in size, or any as a decimal string${example}`);
}

/**
 * Plain JSON the type cannot take, refused with a message in JSON's words: `fromJs` takes
 * JavaScript values and names them (a Map, a Set, a Uint8Array, a Date), which a person who wrote
 * JSON never gave.
 */
function plainError(path: string, message: string): ProtocolError {
  return new ProtocolError("validation-error", `${path}: ${message}`, { path });
}

function base64Bytes(text: string, path: string): Uint8Array {
  if (!BASE64.test(text)) throw new ProtocolError("validation-error", `${path}: expected base64 or an array of bytes`, { path });
  return new Uint8Array(Buffer.from(text, "base64"));
}

/** JavaScript data from `toJs` to JSON, by the rules in the header. */
function toJson(data: unknown, depth: number): JsonValue {
  if (depth > MAX_DEPTH * 2) throw new ProtocolError("limit-exceeded", "value nests too deeply to print");
  switch (typeof data) {
    case "string":
    case "boolean":
      return data;
    case "number":
      return Number.isFinite(data) ? data : Number.isNaN(data) ? "NaN" : data > 0 ? "Infinity" : "-Infinity";
    case "bigint":
      return data.toString();
    case "undefined":
      return null;
    default:
      break;
  }
  if (data === null) return null;
  if (data instanceof Uint8Array) return Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString("base64");
  if (data instanceof Set) return [...data].map((item) => toJson(item, depth + 1));
  if (data instanceof Map) return [...data].map(([k, v]) => [toJson(k, depth + 1), toJson(v, depth + 1)]);
  if (Array.isArray(data)) return data.map((item) => toJson(item, depth + 1));
  const record = data as Record<string | symbol, unknown>;
  const name = record[STREAM_NAME];
  if (typeof name === "string") return name;
  return Object.fromEntries(Object.entries(record).map(([k, v]) => [k, toJson(v, depth + 1)]));
}
