/**
 * Options and hooks come from the calling code, never from a peer. They are
 * checked apart from the graph or value they govern, before it is read, so a
 * wrong one is the caller's `internal-error` and never blamed on the data
 * (`validation-error`), and a wrong-typed one never silently switches a check
 * off (`"forbidden"` given where `{streams: "forbidden"}` belongs used to
 * leave streams allowed). As in `@golem-stream/wire`, `null` or `undefined`
 * options mean the defaults; anything else must be an object, read member by
 * member, and an error its own code throws (a getter) is the caller's too.
 */
import { LIMITS, ProtocolError } from "@golem-stream/wire";
import type { SchemaType } from "./types.js";

const NO_OPTIONS: Readonly<Record<string, unknown>> = Object.freeze({});
const STREAM_MODES: readonly unknown[] = ["provisional", "stable", "forbidden", "any"];

/** The caller's mistake in the options of `fn`: never the peer's. */
export function optionsError(fn: string, problem: string, cause?: unknown): ProtocolError {
  return new ProtocolError("internal-error", `${fn} ${problem}`, cause === undefined ? {} : { cause });
}

/** `options` as an object to read members from (`NO_OPTIONS` for null or undefined), or the caller's error. */
function objectOf(options: unknown, fn: string, name: string): Readonly<Record<string, unknown>> {
  if (options === undefined || options === null) return NO_OPTIONS;
  if (typeof options !== "object") throw optionsError(fn, `${name} must be an object`);
  return options as Readonly<Record<string, unknown>>;
}

/**
 * Reads the options `read` needs, once each: whatever it throws that is not
 * already a `ProtocolError` (a getter of the caller's) is the caller's error.
 */
function reading<T>(fn: string, name: string, read: () => T): T {
  try {
    return read();
  } catch (cause) {
    if (cause instanceof ProtocolError) throw cause;
    throw optionsError(fn, `${name} could not be read`, cause);
  }
}

/** The `streams` option of `decodeSchemaGraph`: `"allowed"` (the default) or `"forbidden"`. */
export function graphStreamsOption(options: unknown): "allowed" | "forbidden" {
  const fn = "decodeSchemaGraph";
  return reading(fn, "options", () => {
    const streams = objectOf(options, fn, "options")["streams"];
    if (streams === undefined) return "allowed";
    if (streams !== "allowed" && streams !== "forbidden") throw optionsError(fn, 'option streams must be "allowed" or "forbidden"');
    return streams;
  });
}

/**
 * Checks the options of `decodeSchemaValue`, reading each member once, and
 * returns them (an empty object for null or undefined). The bounds are
 * checked again where they are used, on the values used. Called for every
 * value a server or client decodes, so it allocates nothing.
 */
export function valueOptions<T extends object>(options: T | null | undefined, fn = "decodeSchemaValue"): T {
  const o = objectOf(options, fn, "options");
  let streams: unknown, type: unknown, path: unknown, direction: unknown, maxByteCharge: unknown, maxStreams: unknown;
  try {
    ({ streams, type, path, direction, maxByteCharge, maxStreams } = o);
  } catch (cause) {
    throw optionsError(fn, "options could not be read", cause);
  }
  if (streams !== undefined && !STREAM_MODES.includes(streams)) {
    throw optionsError(fn, `option streams must be one of ${STREAM_MODES.join(", ")}`);
  }
  if (!isTypeArgument(type)) throw optionsError(fn, "option type must be a SchemaType");
  if (path !== undefined && typeof path !== "string") throw optionsError(fn, "option path must be a string");
  if (direction !== undefined && direction !== "input" && direction !== "output") {
    throw optionsError(fn, 'option direction must be "input" or "output"');
  }
  if (!isCount(maxByteCharge)) throw optionsError(fn, "option maxByteCharge must be a non-negative integer");
  if (!isCount(maxStreams)) throw optionsError(fn, "option maxStreams must be a non-negative integer");
  return o as T;
}

/** Undefined (the default), or a bound a caller may give: 0 admits nothing, and NaN or Infinity never switch it off. */
function isCount(value: unknown): boolean {
  return value === undefined || (typeof value === "number" && Number.isSafeInteger(value) && value >= 0);
}

/** The `maxBytes` option of a writer: the text message limit by default, a non-negative integer when given. */
export function maxBytesOption(options: unknown, fn: string): number {
  if (options === undefined || options === null) return LIMITS.maxTextMessageBytes;
  const maxBytes = reading(fn, "options", () => objectOf(options, fn, "options")["maxBytes"]);
  if (maxBytes === undefined) return LIMITS.maxTextMessageBytes;
  if (!isCount(maxBytes)) throw optionsError(fn, "option maxBytes must be a non-negative integer");
  return maxBytes as number;
}

/**
 * The hooks of `toJs` or `fromJs` (an empty object for null or undefined),
 * whose `stream` is a function when given. Called for every item an agent
 * reads or writes, so it allocates nothing.
 */
export function hooksOf<T extends object>(hooks: T | null | undefined, fn: string): T {
  const h = objectOf(hooks, fn, "hooks");
  let stream: unknown;
  try {
    stream = h["stream"];
  } catch (cause) {
    throw optionsError(fn, "hooks could not be read", cause);
  }
  if (stream !== undefined && typeof stream !== "function") throw optionsError(fn, "hook stream must be a function");
  return h as T;
}

/**
 * Whether `type`, given where the graph's root is the default, is undefined
 * or a type node (an object). A type object is then checked against the
 * graph, as any graph is (`validation-error`); anything else is the caller's
 * mistake.
 */
export function isTypeArgument(type: unknown): type is SchemaType | undefined {
  return type === undefined || (typeof type === "object" && type !== null);
}
