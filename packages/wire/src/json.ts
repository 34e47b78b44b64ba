import { wrongArgument } from "./errors.js";

/** The JSON data model shared by every codec in the workspace. */
export type JsonPrimitive = null | boolean | number | string;
export type JsonArray = JsonValue[];
export interface JsonObject {
  [member: string]: JsonValue;
}
export type JsonValue = JsonPrimitive | JsonArray | JsonObject;

export function isJsonObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const hasOwn = Object.prototype.hasOwnProperty;

/**
 * Own-member lookup that is safe for names such as `__proto__` or `constructor`. An `object` that
 * is not one, or a `name` that is not a string, is the caller's bug (`internal-error`). What the
 * caller's object itself throws when read (a getter, a proxy's trap) passes through unchanged: every
 * decoder reads with this, and reports it as it reports the rest of a value it could not read.
 */
export function getMember(object: JsonObject, name: string): JsonValue | undefined {
  if (typeof object !== "object" || object === null) throw wrongArgument("getMember", "object", "an object");
  if (typeof name !== "string") throw wrongArgument("getMember", "name", "a string");
  return hasOwn.call(object, name) ? object[name] : undefined;
}
