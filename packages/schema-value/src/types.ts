/**
 * The data model: SchemaType (decisions-v1 section 1) and the native
 * SchemaValue (decisions-v1 section 2), as TypeScript discriminated unions
 * on `kind`.
 *
 * Both are declared with `type` aliases and mutable arrays on purpose: that
 * keeps every type and value assignable to wire's `JsonValue`, so a decoded
 * value or type can be embedded in a wire message as is, and
 * `canonicalJson(x)` is its canonical text.
 */
import type { JsonValue, SchemaValueJson } from "@golem-stream/wire";

// ---------------------------------------------------------------- metadata

export type Role = { tag: "multimodal" } | { tag: "unstructured-text" } | { tag: "unstructured-binary" } | { tag: "other"; value: string };

/** Never affects validation; kept verbatim so graphs survive a round trip. */
export type Metadata = {
  doc?: string;
  aliases?: string[];
  examples?: string[];
  deprecated?: string;
  role?: Role;
};

// ---------------------------------------------------------------- types

export type NumericBound =
  | { kind: "signed"; value: string }
  | { kind: "unsigned"; value: string }
  /** The IEEE-754 bits of a finite f64, as an unsigned decimal. */
  | { kind: "float-bits"; value: string };

export type NumericRestrictions = { min?: NumericBound; max?: NumericBound; unit?: string };

export const INTEGER_KINDS = ["s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"] as const;
export const FLOAT_KINDS = ["f32", "f64"] as const;
export type IntegerKind = (typeof INTEGER_KINDS)[number];
export type FloatKind = (typeof FLOAT_KINDS)[number];
export type NumericKind = IntegerKind | FloatKind;

/** Kinds whose values may never cross the public boundary (`unsupported-value`). */
export const HOST_MANAGED_KINDS = ["secret", "quota-token", "permission-card", "future"] as const;
export type HostManagedKind = (typeof HOST_MANAGED_KINDS)[number];

export type RecordField = { name: string; body: SchemaType; metadata?: Metadata };
export type VariantCase = { name: string; payload?: SchemaType; metadata?: Metadata };
export type TextRestrictions = { languages?: string[]; minLength?: number; maxLength?: number; regex?: string };
export type BinaryRestrictions = { mimeTypes?: string[]; minBytes?: number; maxBytes?: number };
export type PathSpec = {
  direction: "input" | "output" | "in-out";
  kind: "file" | "directory" | "any";
  allowedMimeTypes?: string[];
  allowedExtensions?: string[];
};
export type UrlRestrictions = { allowedSchemes?: string[]; allowedHosts?: string[] };
export type QuantityBound = { mantissa: string; scale: number; unit: string };
export type QuantitySpec = { baseUnit: string; allowedSuffixes: string[]; min?: QuantityBound; max?: QuantityBound };

export type Discriminator =
  | { rule: "prefix"; value: { prefix: string } }
  | { rule: "suffix"; value: { suffix: string } }
  | { rule: "contains"; value: { substring: string } }
  | { rule: "regex"; value: { regex: string } }
  | { rule: "field-equals"; value: { fieldName: string; literal?: string } }
  | { rule: "field-absent"; value: { fieldName: string } };

export type UnionBranch = { tag: string; body: SchemaType; discriminator: Discriminator; metadata?: Metadata };

export type Node<K extends string, V> = { kind: K; value: V & { metadata?: Metadata } };

export type RefType = Node<"ref", { id: string }>;
export type BoolType = Node<"bool", Record<never, never>>;
export type CharType = Node<"char", Record<never, never>>;
export type StringType = Node<"string", Record<never, never>>;
export type DatetimeType = Node<"datetime", Record<never, never>>;
export type DurationType = Node<"duration", Record<never, never>>;
export type IntegerType = Node<IntegerKind, { restrictions?: NumericRestrictions }>;
export type FloatType = Node<FloatKind, { restrictions?: NumericRestrictions }>;
export type RecordType = Node<"record", { fields: RecordField[] }>;
export type VariantType = Node<"variant", { cases: VariantCase[] }>;
export type EnumType = Node<"enum", { cases: string[] }>;
export type FlagsType = Node<"flags", { flags: string[] }>;
export type TupleType = Node<"tuple", { elements: SchemaType[] }>;
export type ListType = Node<"list", { element: SchemaType }>;
export type FixedListType = Node<"fixed-list", { element: SchemaType; length: number }>;
export type MapType = Node<"map", { key: SchemaType; value: SchemaType }>;
export type OptionType = Node<"option", { inner: SchemaType }>;
export type ResultType = Node<"result", { spec: { ok?: SchemaType; err?: SchemaType } }>;
export type TextType = Node<"text", { restrictions: TextRestrictions }>;
export type BinaryType = Node<"binary", { restrictions: BinaryRestrictions }>;
export type PathType = Node<"path", { spec: PathSpec }>;
export type UrlType = Node<"url", { restrictions: UrlRestrictions }>;
export type QuantityType = Node<"quantity", { spec: QuantitySpec }>;
export type UnionType = Node<"union", { spec: { branches: UnionBranch[] } }>;
export type StreamType = Node<"stream", { inner: SchemaType }>;
/**
 * Host-managed and future kinds. Their members are not described by the
 * protocol; a graph may declare them (their `value` is kept as given), but a
 * value of such a type is always `unsupported-value`.
 */
export type HostManagedType = { kind: HostManagedKind; value: { [member: string]: JsonValue } };

export type SchemaType =
  | RefType
  | BoolType
  | CharType
  | StringType
  | DatetimeType
  | DurationType
  | IntegerType
  | FloatType
  | RecordType
  | VariantType
  | EnumType
  | FlagsType
  | TupleType
  | ListType
  | FixedListType
  | MapType
  | OptionType
  | ResultType
  | TextType
  | BinaryType
  | PathType
  | UrlType
  | QuantityType
  | UnionType
  | StreamType
  | HostManagedType;

export type SchemaTypeKind = SchemaType["kind"];
/** A type with every top-level `ref` followed. */
export type ResolvedType = Exclude<SchemaType, RefType>;

export type SchemaDef = { id: string; name?: string; body: SchemaType };

/** The JSON form of a SchemaGraph; `defs` is omitted when empty. */
export type SchemaGraphJson = { defs?: SchemaDef[]; root: SchemaType };

// ---------------------------------------------------------------- values

export type ExceptionalFloat = "NaN" | "Infinity" | "-Infinity";

export type ProvisionalRef = { provisionalRef: string };
export type StableRef = { streamToken: string };
export type StreamRef = ProvisionalRef | StableRef;

/** The payload of each value kind (decisions-v1 section 2). */
export type SchemaValuePayloads = {
  bool: boolean;
  s8: number;
  s16: number;
  s32: number;
  u8: number;
  u16: number;
  u32: number;
  /** Canonical signed decimal string. */
  s64: string;
  /** Canonical unsigned decimal string. */
  u64: string;
  f32: number | ExceptionalFloat;
  f64: number | ExceptionalFloat;
  char: string;
  string: string;
  record: { fields: SchemaValue[] };
  variant: { case: number; payload?: SchemaValue };
  enum: { case: number };
  flags: { bits: boolean[] };
  tuple: { elements: SchemaValue[] };
  list: { elements: SchemaValue[] };
  "fixed-list": { elements: SchemaValue[] };
  map: { entries: [SchemaValue, SchemaValue][] };
  option: { inner: SchemaValue | null };
  result: { tag: "ok" | "err"; value: SchemaValue | null };
  text: { text: string; language?: string };
  binary: { bytes: number[]; mimeType?: string };
  path: { path: string };
  url: { url: string };
  /** RFC 3339 UTC, canonical form (see docs/protocol/schema-value.md). */
  datetime: { value: string };
  duration: { nanoseconds: string };
  quantity: { mantissa: string; scale: number; unit: string };
  union: { tag: string; body: SchemaValue };
  stream: StreamRef;
};

/** A native SchemaValue node: one member per kind, so `switch (value.kind)` narrows. */
export type SchemaValue = { [K in keyof SchemaValuePayloads]: { kind: K; value: SchemaValuePayloads[K] } }[keyof SchemaValuePayloads];

export type SchemaValueKind = SchemaValue["kind"];
/** The value node of one kind, e.g. `ValueOf<"record">`. */
export type ValueOf<K extends SchemaValueKind> = Extract<SchemaValue, { kind: K }>;

/**
 * What the decoders accept: parsed JSON, a typed value, or wire's
 * `SchemaValueJson` as a decoded message carries it. Whatever its static
 * type, the input is checked as untrusted.
 */
export type SchemaValueInput = JsonValue | SchemaValue | SchemaValueJson;
