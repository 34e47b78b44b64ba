/**
 * How `fromJs` says a place in the JavaScript data it was given, and what it
 * found there: the names the caller wrote (`tags[1].label`), not the native
 * value's structure (`value.fields[2].elements[1].fields[0]`).
 */
import { clip } from "./errors.js";

/** The members of `data` that are not fields or elements, as their text in a path. */
export const Step = {
  value: { text: ".value" },
  key: { text: ".key" },
  some: { text: ".some" },
  ok: { text: ".ok" },
  err: { text: ".err" },
  body: { text: ".body" },
  /** An option's value is the value itself: no step. */
  same: { text: "" },
} as const;

/** A step into `data`: a record field's name, an element's index, or one of `Step`. */
export type DataStep = string | number | { readonly text: string };

/**
 * `name`, `tags[1]["odd key"]`, `m[3].value`: the JavaScript path of `steps`, after `root` (what
 * the caller calls `data`: `constructor.unit`), or from the first step when `root` is empty.
 */
export function renderDataPath(steps: readonly DataStep[], root = ""): string {
  let text = "";
  for (const step of steps) {
    if (typeof step === "number") text += `[${step}]`;
    else if (typeof step === "string") text += /^[A-Za-z_$][\w$]*$/.test(step) ? `.${step}` : `[${JSON.stringify(clip(step))}]`;
    else text += step.text;
  }
  if (root !== "") return root + text;
  return text.startsWith(".") ? text.slice(1) : text;
}

/**
 * What `x` is, for "expected a string, got …": a scalar as written (`3`, `"abc"`, `5n`), an
 * object by its class (`a Buffer`, `a Map`, `an array`), so a value of the wrong kind is
 * recognised by what the caller passed.
 */
export function describeJs(x: unknown): string {
  switch (typeof x) {
    case "string":
      return JSON.stringify(clip(x, 32));
    case "number":
    case "boolean":
      return String(x);
    case "bigint":
      return `${x}n`;
    case "undefined":
      return "undefined";
    case "symbol":
      return "a symbol";
    case "function":
      return "a function";
  }
  if (x === null) return "null";
  if (Array.isArray(x)) return "an array";
  let name: unknown;
  try {
    const proto: unknown = Object.getPrototypeOf(x);
    name = proto === null || proto === Object.prototype ? undefined : (proto as { constructor?: { name?: unknown } }).constructor?.name;
  } catch {
    // A Proxy's trap or a getter of the caller's: the value is still an object.
  }
  if (typeof name !== "string" || !/^[A-Za-z_$][\w$]*$/.test(name)) return "an object";
  // "a Uint8Array", "a URL": a leading U is read as "you".
  return /^[AEIOaeio]/.test(name) ? `an ${name}` : `a ${name}`;
}
