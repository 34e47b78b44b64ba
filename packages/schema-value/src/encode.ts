/**
 * Canonical output, semantic equality and the byte charge as standalone
 * entry points. All three lean on the decoder: canonical form is "strict
 * decode, then encode with members in code-point order" (decisions-v1
 * section 2), and the charge is counted by the same walk that validates.
 */
import { LIMITS, utf8ByteLength } from "@golem-stream/wire";
import { writeCanonical } from "./canonical-writer.js";
import { limitError, publicError, validationError } from "./errors.js";
import { maxBytesOption, valueOptions } from "./options.js";
import type { SchemaGraph } from "./graph.js";
import type { SchemaType, SchemaValue, SchemaValueInput } from "./types.js";
import { decodeSchemaValue, type DecodeValueOptions } from "./value-decode.js";

/** Options of `encodeSchemaValue`; `null` or `undefined` options are the defaults. */
export interface EncodeValueOptions {
  /** Largest text written, in UTF-8 bytes. Default: 8 MiB (the text message limit, which no longer text can travel in). */
  readonly maxBytes?: number;
}

/**
 * Canonical text of a value: no insignificant whitespace, members in
 * code-point order. A value from `decodeSchemaValue` (or the `v` builders)
 * is already normalized, so decode-then-encode of canonical input is
 * byte-identical.
 *
 * Without a graph it cannot check a value against its schema, but it never
 * writes what no decoder could read: anything that is not a tree of native
 * nodes (`{kind, value}` with a known kind and that kind's payload members)
 * is `validation-error`, and text nesting deeper than the JSON limit (128),
 * or longer than `options.maxBytes` UTF-8 bytes, is `limit-exceeded`. The
 * length is bounded while the text is written: a value that references one
 * node at many places stops at the bound, whatever text it would make.
 */
export function encodeSchemaValue(value: SchemaValue, options?: EncodeValueOptions): string {
  // No options, as for every item a server stores: the default without a call.
  const maxBytes = options === undefined ? LIMITS.maxTextMessageBytes : maxBytesOption(options, "encodeSchemaValue");
  // guard()'s handling written in place: a closure per call is garbage on every item a server stores.
  let text: string;
  try {
    text = writeCanonical(value, maxBytes);
  } catch (cause) {
    throw publicError("value", cause);
  }
  if (text === "not-native") {
    throw validationError("value", "is not a native SchemaValue: every node is {kind, value} with a known kind and its native payload");
  }
  if (text === "too-deep") throw limitError("value", `nests deeper than ${LIMITS.maxJsonDepth} as JSON text`);
  // Units counted while writing; the exact bytes only when the units leave the answer open.
  if (text === "too-long" || (text.length * 3 > maxBytes && utf8ByteLength(text) > maxBytes)) {
    throw limitError("value", `is longer than ${maxBytes} bytes as JSON text`);
  }
  return text;
}

/**
 * The canonical text of `json` after strict decoding against `graph`: two
 * values are semantically equal exactly when their normalized texts are
 * equal (attempt equality, protocol section 9).
 */
export function normalizeSchemaValue(json: SchemaValueInput, graph: SchemaGraph, options?: DecodeValueOptions): string {
  return encodeSchemaValue(decodeSchemaValue(json, graph, options).value);
}

/** Semantic equality of two values of the same type. */
export function schemaValuesEqual(a: SchemaValueInput, b: SchemaValueInput, graph: SchemaGraph, options?: DecodeValueOptions): boolean {
  return normalizeSchemaValue(a, graph, options) === normalizeSchemaValue(b, graph, options);
}

/**
 * The language-independent byte charge of protocol section 12, after
 * validating `value` against `type` (default `graph.root`); stream leaves of
 * either form are accepted. Throws `limit-exceeded` over `maxByteCharge`
 * (default 8 MiB).
 */
export function byteCharge(
  value: SchemaValueInput,
  graph: SchemaGraph,
  type?: SchemaType,
  options: { readonly maxByteCharge?: number } = {},
): number {
  // Only the documented member is read; the object is checked as decodeSchemaValue checks its own.
  const { maxByteCharge } = valueOptions(options, "byteCharge");
  const decodeOptions: DecodeValueOptions = {
    streams: "any",
    ...(maxByteCharge === undefined ? {} : { maxByteCharge }),
    ...(type === undefined ? {} : { type }),
  };
  return decodeSchemaValue(value, graph, decodeOptions).byteCharge;
}
