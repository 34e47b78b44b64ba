/**
 * @golem-stream/schema-value — SchemaGraph and the native SchemaValue JSON
 * codec of Golem Stream Session v1 (protocol section 3, decisions-v1
 * sections 1-2): strict validation, canonical encoding, the byte charge of
 * section 12, and conversions to plain JavaScript.
 *
 * Start here:
 *   const graph = decodeSchemaGraph(json);
 *   const { value, streams, byteCharge } = decodeSchemaValue(valueJson, graph, { streams: "provisional" });
 *   encodeSchemaValue(value); // canonical text
 */
export { childTypes, decodeSchemaGraph, extractGraph, isDirectBinary, SchemaGraph, type DecodeGraphOptions } from "./graph.js";
export { decodeSchemaValue, type DecodeValueOptions, type DecodedValue, type StreamLeaf, type StreamMode } from "./value-decode.js";
export { encodeSchemaValue, normalizeSchemaValue, schemaValuesEqual, byteCharge, type EncodeValueOptions } from "./encode.js";
export * from "./types.js";
export { toJs, fromJs, jsCodec, isStreamRef, type ToJsHooks, type FromJsHooks, type StreamContext, type JsCodec } from "./js.js";
export { describeJs } from "./data-path.js";
export type { JsOf, Small, VariantJs, TupleJs, RecordJs, Flat, JsStreams, StreamRefs, MapStream } from "./js-types.js";
export { v } from "./value-builders.js";
export {
  t,
  type IntegerOf,
  type FloatOf,
  type RecordOf,
  type VariantOf,
  type EnumOf,
  type FlagsOf,
  type TupleOf,
  type ListOf,
  type FixedListOf,
  type MapOf,
  type OptionOf,
  type ResultOf,
  type StreamOf,
  type UnionBranchSpec,
  type RefOf,
  type GraphOf,
  type FieldEntry,
  type CaseEntry,
  type FieldsOf,
  type CasesOf,
  type DefSpec,
} from "./type-builders.js";
// The wire types in this package's signatures, so a user needs no direct dependency on @golem-stream/wire.
export type { SchemaValueJson, JsonValue, JsonObject, JsonArray, JsonPrimitive } from "@golem-stream/wire";
