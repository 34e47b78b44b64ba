/**
 * Plain JavaScript data -> native value (the mapping table is in js.ts and
 * docs/protocol/schema-value.md). What is built is always re-validated with
 * `decodeSchemaValue`, so `fromJs` can never return an invalid value.
 */
import { ProtocolError } from "@golem-stream/wire";
import { BuildCharge } from "./build-charge.js";
import { describeJs, renderDataPath, Step, type DataStep } from "./data-path.js";
import { clip, guard } from "./errors.js";
import { checkedType, type SchemaGraph } from "./graph.js";
import { Location } from "./location.js";
import { hooksOf, optionsError } from "./options.js";
import type { SchemaType, SchemaValue, StreamRef } from "./types.js";
import { decodeSchemaValue, type StreamMode } from "./value-decode.js";

export interface StreamContext {
  readonly coordinate: string;
  /** Where the stream is in `data`, as error messages say it (`reverse.input`, `jobs[2].log`; with `hooks.name`). */
  readonly dataPath: string;
  readonly elementType: SchemaType;
  readonly graph: SchemaGraph;
}

export interface FromJsHooks {
  /** Turns the JavaScript value found at a stream position into a stream reference. */
  readonly stream?: (data: unknown, context: StreamContext) => StreamRef;
  /** Which stream references the result may hold. Default `"any"`. */
  readonly streams?: StreamMode;
  /**
   * What error messages call `data` (`"constructor"`, a method's name; `""` for nothing): given,
   * a message names the place in `data` alone, from it, and says what it found there
   * (`constructor.unit: expected a string, got 3`), for the person who wrote `data`. The error's
   * `path` is the native one either way.
   */
  readonly name?: string;
  /** `data` is a record of parameters: messages call its fields parameters (`unknown parameter "to"`). */
  readonly parameters?: boolean;
}

/**
 * Builds the native value of JavaScript `data` for `type` (default `graph.root`), validated.
 * An error's `path` is the place in the native value (`value.fields[0]`); its message also names
 * the place in `data` (`value.fields[0] (name): expected a string`), which is what the caller wrote,
 * or only that with `hooks.name`.
 */
export function fromJs(data: unknown, graph: SchemaGraph, type?: SchemaType, hooks: FromJsHooks = {}): SchemaValue {
  hooks = hooksOf(hooks, "fromJs");
  const { name: dataName, parameters } = hooks;
  if (dataName !== undefined && typeof dataName !== "string") throw optionsError("fromJs", "hook name must be a string");
  return guard("value", () => {
    const [checked, expected] = checkedType(graph, type);
    graph = checked;
    // A string for a string (most stream items): the node the walk below would build, without setting it up.
    if (typeof data === "string" && graph.resolve(expected).kind === "string") {
      try {
        return decodeSchemaValue({ kind: "string", value: data }, graph, { type: expected, streams: hooks.streams ?? "any" }).value;
      } catch (error) {
        // A restriction (a pattern, a length): said at `name` when there is one, as the walk says its own.
        const path = validationPath(error);
        throw dataName === undefined || path === undefined ? error : restated(error as ProtocolError, path, dataName, true);
      }
    }
    const location = new Location("value");
    // Counted while the value is built: data sharing objects makes a node per reference.
    const charge = new BuildCharge(location);
    /**
     * Where the walk is in `data`: a field's name, an element's index, or one of the `Step`s.
     * Nothing is rendered on the way (a list of a million numbers makes no strings), only for an error.
     */
    const dataPath: DataStep[] = [];
    /** Set for a second walk that only finds which place in `data` a decoder error's path is. */
    let explaining: { readonly path: string; found?: string } | undefined;
    const place = () => renderDataPath(dataPath, dataName);
    const fail = (message: string, cause?: unknown) => located(location.path(), place(), message, dataName !== undefined, cause);
    /** The error for `x`, which is not what the schema expects; with `hooks.name`, it says what `x` is too. */
    const wrong: Wrong = (x, expected) => fail(`expected ${expected}${dataName === undefined ? "" : `, got ${describeJs(x)}`}`);
    const walk = (x: unknown, declared: SchemaType): SchemaValue => {
      if (location.depth > 128) throw fail("data nests too deeply");
      charge.add(1);
      const resolved = graph.resolve(declared);
      // A record field left out (or an element given as undefined): said as such, not as whatever
      // the type's own check (or a stream hook handed undefined) makes of it.
      if (x === undefined && resolved.kind !== "option") throw fail(`missing (expected ${articled(resolved.kind)} value)`);
      const into = (
        child: unknown,
        childType: SchemaType,
        member: string,
        index: number | undefined,
        subIndex: number | undefined,
        at: DataStep,
      ) => {
        const entered = location.enter(member, index, subIndex);
        dataPath.push(at);
        if (explaining !== undefined && explaining.found === undefined && location.path() === explaining.path) explaining.found = place();
        const out = walk(child, childType);
        dataPath.pop();
        location.leave(entered);
        return out;
      };
      switch (resolved.kind) {
        case "bool":
          if (typeof x !== "boolean") throw wrong(x, "a boolean");
          return { kind: "bool", value: x };
        case "s8":
        case "s16":
        case "s32":
        case "u8":
        case "u16":
        case "u32":
          if (typeof x !== "number") throw wrong(x, "a number");
          return { kind: resolved.kind, value: x };
        case "s64":
        case "u64":
          return { kind: resolved.kind, value: integerText(x, wrong) };
        case "f32":
        case "f64":
          if (typeof x !== "number") throw wrong(x, "a number");
          return { kind: resolved.kind, value: Number.isNaN(x) ? "NaN" : x === Infinity ? "Infinity" : x === -Infinity ? "-Infinity" : x };
        case "char":
        case "string":
          if (typeof x !== "string") throw wrong(x, "a string");
          charge.add(x.length);
          return { kind: resolved.kind, value: x };
        case "record": {
          // The fields of the parameter record are its parameters (the caller's word for them).
          const field = parameters === true && location.depth === 0 ? "parameter" : "field";
          if (!isPlainObject(x)) throw wrong(x, `an object keyed by ${field} name`);
          const declaredFields = resolved.value.fields;
          // A misspelt field would otherwise surface as the right name missing, far from the typo.
          for (const key of Object.keys(x)) {
            if (!declaredFields.some((f) => f.name === key)) {
              throw fail(`unknown ${field} "${clip(key)}" (the ${field}s are ${clip(declaredFields.map((f) => f.name).join(", "), 200)})`);
            }
          }
          charge.add(4);
          const fields = declaredFields.map((f, i) => into(ownValue(x, f.name), f.body, "fields", i, undefined, f.name));
          return { kind: "record", value: { fields } };
        }
        case "variant": {
          if (!isPlainObject(x) || typeof ownValue(x, "case") !== "string") throw wrong(x, "{case: name, value?}");
          const name = ownValue(x, "case");
          const index = resolved.value.cases.findIndex((c) => c.name === name);
          const declaredCase = resolved.value.cases[index];
          if (declaredCase === undefined) throw fail(`unknown case "${clip(String(name))}"`);
          if (declaredCase.payload === undefined) return { kind: "variant", value: { case: index } };
          return {
            kind: "variant",
            value: { case: index, payload: into(ownValue(x, "value"), declaredCase.payload, "payload", undefined, undefined, Step.value) },
          };
        }
        case "enum": {
          const index = typeof x === "string" ? resolved.value.cases.indexOf(x) : -1;
          if (index < 0) throw wrong(x, `one of ${clip(resolved.value.cases.join(", "), 200)}`);
          return { kind: "enum", value: { case: index } };
        }
        case "flags": {
          const set = flagSet(x, wrong);
          for (const name of set) if (!resolved.value.flags.includes(name)) throw fail(`unknown flag "${clip(name)}"`);
          charge.add(4 + resolved.value.flags.length);
          return { kind: "flags", value: { bits: resolved.value.flags.map((name) => set.has(name)) } };
        }
        case "tuple": {
          const items = arrayOf(x, wrong, charge);
          if (items.length !== resolved.value.elements.length) throw fail(`expected ${resolved.value.elements.length} elements`);
          charge.add(4);
          return {
            kind: "tuple",
            value: { elements: resolved.value.elements.map((e, i) => into(items[i], e, "elements", i, undefined, i)) },
          };
        }
        case "list":
        case "fixed-list": {
          const items = arrayOf(x, wrong, charge);
          charge.add(4);
          return {
            kind: resolved.kind,
            value: { elements: items.map((item, i) => into(item, resolved.value.element, "elements", i, undefined, i)) },
          };
        }
        case "map": {
          if (x instanceof Map) charge.fits(x.size);
          const pairs: [unknown, unknown][] = x instanceof Map ? [...x.entries()] : (arrayOf(x, wrong, charge) as [unknown, unknown][]);
          charge.add(4);
          const entries = pairs.map((pair, i): [SchemaValue, SchemaValue] => {
            if (!Array.isArray(pair) || pair.length !== 2) throw fail("expected a Map or [key, value] pairs");
            dataPath.push(i);
            const entry: [SchemaValue, SchemaValue] = [
              into(pair[0], resolved.value.key, "entries", i, 0, Step.key),
              into(pair[1], resolved.value.value, "entries", i, 1, Step.value),
            ];
            dataPath.pop();
            return entry;
          });
          return { kind: "map", value: { entries } };
        }
        case "option": {
          if (x === undefined || x === null) return { kind: "option", value: { inner: null } };
          if (graph.resolve(resolved.value.inner).kind === "option") {
            if (!isPlainObject(x) || !Object.hasOwn(x, "some")) throw fail("a nested option's value is written {some: value}");
            return {
              kind: "option",
              value: { inner: into(ownValue(x, "some"), resolved.value.inner, "inner", undefined, undefined, Step.some) },
            };
          }
          return { kind: "option", value: { inner: into(x, resolved.value.inner, "inner", undefined, undefined, Step.same) } };
        }
        case "result": {
          if (!isPlainObject(x)) throw wrong(x, "{ok: value} or {err: value}");
          const isOk = Object.hasOwn(x, "ok");
          if (isOk === Object.hasOwn(x, "err")) throw fail("expected exactly one of ok and err");
          const tag = isOk ? "ok" : "err";
          const side = resolved.value.spec[tag];
          return {
            kind: "result",
            value: {
              tag,
              value: side === undefined ? null : into(ownValue(x, tag), side, "value", undefined, undefined, isOk ? Step.ok : Step.err),
            },
          };
        }
        case "text": {
          if (typeof x === "string") {
            charge.add(x.length);
            return { kind: "text", value: { text: x } };
          }
          if (!isPlainObject(x) || typeof ownValue(x, "text") !== "string") throw wrong(x, "a string or {text, language?}");
          const language = ownValue(x, "language");
          if (language !== undefined && typeof language !== "string") throw fail("language must be a string");
          const text = ownValue(x, "text") as string;
          charge.add(text.length);
          return { kind: "text", value: language === undefined ? { text } : { text, language } };
        }
        case "binary": {
          const [bytes, mimeType] = binaryOf(x, fail, wrong, charge);
          return { kind: "binary", value: mimeType === undefined ? { bytes } : { bytes, mimeType } };
        }
        case "path":
          if (typeof x !== "string") throw wrong(x, "a string");
          return { kind: "path", value: { path: x } };
        case "url":
          if (typeof x !== "string" && !(x instanceof URL)) throw wrong(x, "a string or URL");
          return { kind: "url", value: { url: String(x) } };
        case "datetime": {
          if (x instanceof Date) {
            if (Number.isNaN(x.getTime())) throw fail("invalid Date");
            return { kind: "datetime", value: { value: x.toISOString() } };
          }
          if (typeof x !== "string") throw wrong(x, "a Date or an RFC 3339 string");
          return { kind: "datetime", value: { value: x } };
        }
        case "duration":
          return { kind: "duration", value: { nanoseconds: integerText(x, wrong) } };
        case "quantity": {
          if (!isPlainObject(x)) throw wrong(x, "{mantissa, scale, unit}");
          const scale = ownValue(x, "scale");
          const unit = ownValue(x, "unit");
          if (typeof scale !== "number" || typeof unit !== "string") throw wrong(x, "{mantissa, scale, unit}");
          return { kind: "quantity", value: { mantissa: integerText(ownValue(x, "mantissa"), wrong), scale, unit } };
        }
        case "union": {
          if (!isPlainObject(x) || typeof ownValue(x, "tag") !== "string") throw wrong(x, "{tag, body}");
          const tag = ownValue(x, "tag") as string;
          const branch = resolved.value.spec.branches.find((b) => b.tag === tag);
          if (branch === undefined) throw fail(`unknown union tag "${clip(tag)}"`);
          return { kind: "union", value: { tag, body: into(ownValue(x, "body"), branch.body, "body", undefined, undefined, Step.body) } };
        }
        case "stream": {
          // The naming walk only looks for a place: the first walk bound this stream already.
          if (explaining !== undefined) return { kind: "stream", value: { provisionalRef: "" } };
          const context: StreamContext = { coordinate: location.pointer(), dataPath: place(), elementType: resolved.value.inner, graph };
          const ref = hooks.stream === undefined ? x : boundStream(hooks.stream, x, context, fail);
          if (!isPlainObject(ref)) throw fail("expected a stream reference");
          const provisional = ownValue(ref, "provisionalRef");
          const token = ownValue(ref, "streamToken");
          if (typeof provisional === "string" && token === undefined) return { kind: "stream", value: { provisionalRef: provisional } };
          if (typeof token === "string" && provisional === undefined) return { kind: "stream", value: { streamToken: token } };
          throw fail("expected {provisionalRef} or {streamToken}");
        }
        default:
          throw fail(`${resolved.kind} values cannot be built here`);
      }
    };
    const built = walk(data, expected);
    try {
      return decodeSchemaValue(built, graph, { type: expected, streams: hooks.streams ?? "any" }).value;
    } catch (error) {
      // A range or a restriction the walk does not check: walk again (streams are not bound
      // twice: see the stream case) to name the place in `data` that the decoder's path points at.
      const path = validationPath(error);
      if (path === undefined || (path === "value" && dataName === undefined)) throw error;
      if (path === "value") throw restated(error as ProtocolError, path, dataName as string, true);
      explaining = { path };
      charge.restart();
      walk(data, expected);
      if (explaining.found === undefined) throw error;
      throw restated(error as ProtocolError, path, explaining.found, dataName !== undefined);
    }
  });
}

/**
 * A validation error at `path` in the native value, naming `at`, the same place in the JavaScript
 * data: beside `path`, or `named` (`hooks.name`) alone.
 */
function located(path: string, at: string, message: string, named: boolean, cause?: unknown): ProtocolError {
  const place = named ? at : at === "" ? path : `${path} (${at})`;
  return new ProtocolError("validation-error", place === "" ? message : `${place}: ${message}`, {
    path,
    ...(cause === undefined ? {} : { cause }),
  });
}

/** A decoder's validation error (its message starts with its native path) said at `at` instead. */
function restated(error: ProtocolError, path: string, at: string, named: boolean): ProtocolError {
  const prefix = `${path}: `;
  return located(path, at, error.message.startsWith(prefix) ? error.message.slice(prefix.length) : error.message, named, error);
}

/** The native path of a decoder's validation error, or undefined for any other error. */
function validationPath(error: unknown): string | undefined {
  return error instanceof ProtocolError && error.code === "validation-error" ? error.path : undefined;
}

function isPlainObject(x: unknown): x is Record<string, unknown> {
  if (typeof x !== "object" || x === null || Array.isArray(x)) return false;
  const proto: unknown = Object.getPrototypeOf(x);
  return proto === Object.prototype || proto === null;
}

/**
 * The hook's stream reference for `x`; a hook that refuses `x` with an error of its own (not a
 * `ProtocolError`: "not a source") has its message said at the place in `data`, where `guard`
 * alone would only say the value is not well-formed.
 */
function boundStream(
  hook: NonNullable<FromJsHooks["stream"]>,
  x: unknown,
  context: StreamContext,
  fail: (message: string, cause?: unknown) => ProtocolError,
): unknown {
  try {
    return hook(x, context);
  } catch (error) {
    if (error instanceof ProtocolError) throw error;
    throw fail(error instanceof Error ? error.message : "the stream hook refused it", error);
  }
}

/** `a u8`, `an s8`, `an enum`: the kind with its article, as the kind's name is read aloud. */
function articled(kind: string): string {
  return /^(?:[aeio]|[sf]\d)/.test(kind) ? `an ${kind}` : `a ${kind}`;
}

function ownValue(x: Record<string, unknown>, name: string): unknown {
  return Object.hasOwn(x, name) ? x[name] : undefined;
}

/** The error for `x`, a value that is not what the schema expects: `wrong(x, "an array")`. */
type Wrong = (x: unknown, expected: string) => Error;

/** The elements of an array or a Uint8Array, refused by their number before one is copied or walked. */
function arrayOf(x: unknown, wrong: Wrong, charge: BuildCharge): unknown[] {
  if (Array.isArray(x)) return (charge.fits(x.length), x);
  if (x instanceof Uint8Array) return (charge.fits(x.length), Array.from(x));
  throw wrong(x, "an array");
}

/** bigint, or a safe integer number, as a decimal string (range is checked by the decoder). */
function integerText(x: unknown, wrong: Wrong): string {
  if (typeof x === "bigint") return x.toString();
  if (typeof x === "number" && Number.isSafeInteger(x)) return (x === 0 ? 0 : x).toString();
  throw wrong(x, "a bigint or a safe integer");
}

/** Set of names, array of names, or {name: boolean}. */
function flagSet(x: unknown, wrong: Wrong): Set<string> {
  const names: unknown[] =
    x instanceof Set ? [...x] : Array.isArray(x) ? x : isPlainObject(x) ? Object.keys(x).filter((k) => x[k] === true) : [undefined];
  if (!names.every((n): n is string => typeof n === "string")) throw wrong(x, "a Set or array of flag names");
  return new Set(names);
}

/** Uint8Array, number[], or {bytes, mimeType?}; the bytes refused by their number before they are copied. */
function binaryOf(x: unknown, fail: (message: string) => Error, wrong: Wrong, charge: BuildCharge): [number[], string | undefined] {
  if (x instanceof Uint8Array || Array.isArray(x)) return [arrayOf(x, wrong, charge) as number[], undefined];
  if (isPlainObject(x)) {
    const bytes = ownValue(x, "bytes");
    const mimeType = ownValue(x, "mimeType");
    if (mimeType !== undefined && typeof mimeType !== "string") throw fail("mimeType must be a string");
    if (bytes instanceof Uint8Array || Array.isArray(bytes)) return [arrayOf(bytes, wrong, charge) as number[], mimeType];
  }
  throw wrong(x, "a Uint8Array or {bytes, mimeType?}");
}
