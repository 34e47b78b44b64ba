/**
 * The JSON shape checks a SchemaGraph's decoder applies to every member it
 * reads: objects with exactly the allowed members, arrays, well-formed
 * strings, unique names, bounded integers, one of a set of words. Each
 * throws the graph error for its path, so the decoders stay one line per
 * member.
 */
import { getMember, isJsonObject, isWellFormedText, LIMITS, ProtocolError, type JsonObject, type JsonValue } from "@golem-stream/wire";
import { clip, graphError } from "./errors.js";

/**
 * What the graph being decoded may still read, in units of its JSON text: one per object, member
 * and array element, and one per UTF-16 unit of a string. Each is at least a byte of the text, so
 * a graph whose JSON text fits the text message limit (every graph a peer can send) is never
 * refused. A graph built in memory may use one object at many places: a type node is decoded
 * once and counted once, wherever else it is used (`decodeType`); any other object used at many
 * places (a field list, metadata, restrictions) is copied to each and counted at each. So the
 * work and memory of one decode stay bounded by the limit however the caller's objects are
 * shared. Set for each graph by `withReadBudget` (saved and restored, so a getter that decodes
 * another graph cannot lend it more).
 */
let unitsLeft = Number.POSITIVE_INFINITY;

export function withReadBudget<T>(run: () => T): T {
  const outer = unitsLeft;
  unitsLeft = LIMITS.maxTextMessageBytes;
  try {
    return run();
  } finally {
    unitsLeft = outer;
  }
}

function spend(units: number, path: string): void {
  unitsLeft -= units;
  if (unitsLeft < 0) {
    const message = `schema graph ${path}: the graph is larger than ${LIMITS.maxTextMessageBytes} JSON values and string units (a type used at many places counts once)`;
    throw new ProtocolError("limit-exceeded", message, { path });
  }
}

/** An object with only `allowed` members and every `required` one. */
export function members(json: JsonValue | undefined, path: string, allowed: readonly string[], required: readonly string[]): JsonObject {
  if (!isJsonObject(json)) throw graphError(path, "must be an object");
  const names = Object.keys(json);
  spend(1 + names.length, path);
  for (const name of names) {
    if (!allowed.includes(name)) throw graphError(path, `unknown member "${clip(name)}"`);
  }
  for (const name of required) {
    if (getMember(json, name) === undefined) throw graphError(path, `missing member "${name}"`);
  }
  return json;
}

export function array(json: JsonValue | undefined, path: string): JsonValue[] {
  if (!Array.isArray(json)) throw graphError(path, "must be an array");
  spend(json.length, path);
  return json;
}

export function string(json: JsonValue | undefined, path: string): string {
  if (typeof json !== "string") throw graphError(path, "must be a string");
  spend(json.length, path);
  if (!isWellFormedText(json)) throw graphError(path, "must be a string");
  return json;
}

export function nonEmptyString(json: JsonValue | undefined, path: string): string {
  const text = string(json, path);
  if (text.length === 0) throw graphError(path, "must not be empty");
  return text;
}

export function strings(json: JsonValue | undefined, path: string): string[] {
  return array(json, path).map((entry, i) => string(entry, `${path}[${i}]`));
}

export function uniqueNames(json: JsonValue | undefined, path: string): string[] {
  const seen = new Set<string>();
  return array(json, path).map((entry, i) => unique(seen, nonEmptyString(entry, `${path}[${i}]`), `${path}[${i}]`, "name"));
}

export function unique(seen: Set<string>, name: string, path: string, what: string): string {
  if (seen.has(name)) throw graphError(path, `duplicate ${what} "${clip(name)}"`);
  seen.add(name);
  return name;
}

export function integer(json: JsonValue | undefined, path: string, min: number, max: number): number {
  if (typeof json !== "number" || !Number.isInteger(json) || json < min || json > max) {
    throw graphError(path, `must be an integer from ${min} through ${max}`);
  }
  return json === 0 ? 0 : json; // drops -0
}

export function oneOf<const T extends readonly string[]>(json: JsonValue | undefined, path: string, options: T): T[number] {
  if (typeof json !== "string" || !options.includes(json)) throw graphError(path, `must be one of ${options.join(", ")}`);
  return json;
}
