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

/** Own-member lookup that is safe for names such as `__proto__` or `constructor`. */
export function getMember(object: JsonObject, name: string): JsonValue | undefined {
  return hasOwn.call(object, name) ? object[name] : undefined;
}
