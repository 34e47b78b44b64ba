/**
 * Walks native SchemaValue JSON without a schema. The native form is
 * self-describing at stream leaves (`{"kind":"stream","value":{…}}`), and no
 * other payload holds arbitrary JSON objects, so a structural walk finds every
 * stream reference exactly. Coordinates are JSON pointers into the native JSON.
 */
import { LIMITS, type JsonValue, type SchemaValueJson } from "@golem-stream/wire";
import { ClientError } from "./errors.js";
import { InputStream, type ParamNode } from "./input-stream.js";

/** One stream node of a native value, as `findStreamTokens` finds it. */
export interface StreamLeaf {
  /** JSON pointer of the stream node inside the value, `""` for the root. */
  readonly coordinate: string;
  /** The token the node holds. */
  readonly streamToken: string;
}

const escapePointer = (segment: string): string => segment.replace(/~/g, "~0").replace(/\//g, "~1");

/**
 * Replaces every `InputStream` binding in `node` by a provisional reference
 * node. `refFor` decides the reference (fresh for a new attempt, the frozen
 * one for an exact retry) and records the binding.
 */
export function bindProvisionalRefs(node: ParamNode, refFor: (binding: InputStream, coordinate: string) => string): SchemaValueJson {
  // Made at the first binding: most values (every item of a plain stream) hold none.
  let placed: Set<InputStream> | undefined;
  return replace(node, [], (binding, coordinate) => {
    placed ??= new Set();
    if (placed.has(binding)) {
      throw new ClientError("invalid-argument", `an input stream is placed twice (again at "${coordinate}")`, {
        code: "stream-already-consumed",
      });
    }
    placed.add(binding);
    return refFor(binding, coordinate);
  }) as unknown as SchemaValueJson;
}

/**
 * The JSON pointer of a path. Built only when a stream or an error needs it:
 * escaping every member name of every input item on the way down cost more
 * than the copy itself.
 */
const pointerOf = (path: readonly (string | number)[]): string =>
  path.map((segment) => `/${typeof segment === "number" ? segment : escapePointer(segment)}`).join("");

/** A copy of `value` with its stream bindings replaced; `path` (from the root, mutated on the way) locates `value`. */
function replace(value: unknown, path: (string | number)[], refFor: (binding: InputStream, coordinate: string) => string): JsonValue {
  if (path.length > LIMITS.maxJsonDepth) {
    throw new ClientError("invalid-argument", `value nests deeper than ${LIMITS.maxJsonDepth} levels`, { code: "limit-exceeded" });
  }
  // Scalars first: they are most of the nodes of a typical item.
  if (typeof value !== "object" || value === null) {
    if (value === undefined || typeof value === "function" || typeof value === "symbol" || typeof value === "bigint") {
      throw new ClientError("invalid-argument", `value at "${pointerOf(path)}" is not JSON`, { code: "validation-error" });
    }
    return value as JsonValue;
  }
  if (value instanceof InputStream) {
    return { kind: "stream", value: { provisionalRef: refFor(value, pointerOf(path)) } };
  }
  if (Array.isArray(value)) {
    const out: JsonValue[] = new Array<JsonValue>(value.length);
    for (let index = 0; index < value.length; index++) {
      path.push(index);
      out[index] = replace(value[index], path, refFor);
      path.pop();
    }
    return out;
  }
  const record = value as Readonly<Record<string, unknown>>;
  // Only a binding becomes a stream leaf here: before acceptance a leaf is a provisional reference
  // (protocol 3.2) to a source of this process, which a hand-written node is not.
  if (record["kind"] === "stream") throw handWrittenStream(record["value"], pointerOf(path));
  const out: Record<string, JsonValue> = {};
  // Object.keys, not Object.entries: the same members in the same order, without a pair per member.
  for (const name of Object.keys(record)) {
    path.push(name);
    out[name] = replace(record[name], path, refFor);
    path.pop();
  }
  return out;
}

/**
 * The refusal of a stream node written by hand where a binding belongs. A stream token, or both
 * forms at once, is what the server refuses (`validation-error`: "The two forms are mutually
 * exclusive", and only provisional references cross before acceptance); a lone provisional
 * reference would be accepted there, but no source of this process stands behind it, so the input
 * would never be fed and its mapping would fail the call afterwards.
 */
function handWrittenStream(payload: unknown, coordinate: string): ClientError {
  const members = typeof payload === "object" && payload !== null ? payload : {};
  const token = "streamToken" in members;
  const why = token
    ? "provisionalRef" in members
      ? "gives both a provisionalRef and a streamToken, which are mutually exclusive"
      : "is a streamToken, which only the server issues once it accepted a stream"
    : "has no source in this process";
  return new ClientError(
    "invalid-argument",
    `the stream node at "${coordinate}" ${why}: put an input stream source there (inputStream.bytes, .binary, .values or .strings)`,
    token ? { code: "validation-error" } : {},
  );
}

/**
 * The JSON pointer of the first stream in `value`, a node or a binding; undefined when there is
 * none. For constructor parameters, which may not hold any (protocol 4.1). A value nested deeper
 * than JSON may be is left to the encoder's refusal.
 */
export function firstStreamIn(value: unknown, path: (string | number)[] = []): string | undefined {
  if (typeof value !== "object" || value === null || path.length > LIMITS.maxJsonDepth) return undefined;
  if (value instanceof InputStream || (value as Record<string, unknown>)["kind"] === "stream") return pointerOf(path);
  const entries: [string | number, unknown][] = Array.isArray(value) ? value.map((child, index) => [index, child]) : Object.entries(value);
  for (const [segment, child] of entries) {
    path.push(segment);
    const found = firstStreamIn(child, path);
    path.pop();
    if (found !== undefined) return found;
  }
  return undefined;
}

/** Every stable stream reference in a server-sent native value, in document order. */
export function findStreamTokens(value: JsonValue): StreamLeaf[] {
  const found: StreamLeaf[] = [];
  visit(value, [], found);
  return found;
}

/** `path` (from the root, mutated on the way) locates `value`; its pointer is built only for a stream found. */
function visit(value: JsonValue, path: (string | number)[], found: StreamLeaf[]): void {
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const child = value[index] as JsonValue;
      if (typeof child !== "object" || child === null) continue; // a scalar holds no stream
      path.push(index);
      visit(child, path, found);
      path.pop();
    }
    return;
  }
  if (typeof value !== "object" || value === null) return;
  const payload = value["value"];
  if (value["kind"] === "stream" && typeof payload === "object" && payload !== null && !Array.isArray(payload)) {
    const token = payload["streamToken"];
    if (typeof token === "string") found.push({ coordinate: pointerOf(path), streamToken: token });
    return;
  }
  for (const name of Object.keys(value)) {
    const child = value[name] as JsonValue;
    if (typeof child !== "object" || child === null) continue;
    path.push(name);
    visit(child, path, found);
    path.pop();
  }
}

/**
 * Every provisional reference in a frozen start's native value, in document
 * order. The value already passed the wire encoder, so its depth is bounded.
 */
export function findProvisionalRefs(value: JsonValue): string[] {
  const found: string[] = [];
  renewProvisionalRefs(value, (ref) => (found.push(ref), ref));
  return found;
}

/**
 * A copy of a frozen native value with every provisional reference replaced
 * by `renew(old)`: a new attempt of a start must not reuse them (protocol 3.2).
 */
export function renewProvisionalRefs(value: JsonValue, renew: (ref: string) => string): JsonValue {
  if (Array.isArray(value)) return value.map((child) => renewProvisionalRefs(child, renew));
  if (typeof value !== "object" || value === null) return value;
  const payload = value["value"];
  if (value["kind"] === "stream" && typeof payload === "object" && payload !== null && !Array.isArray(payload)) {
    const ref = payload["provisionalRef"];
    return typeof ref === "string" ? { kind: "stream", value: { provisionalRef: renew(ref) } } : value;
  }
  const out: Record<string, JsonValue> = {};
  for (const [name, child] of Object.entries(value)) out[name] = renewProvisionalRefs(child, renew);
  return out;
}
