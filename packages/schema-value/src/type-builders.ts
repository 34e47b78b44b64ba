/**
 * `t`: builders for SchemaType JSON, so graphs are written as code rather
 * than as nested literals:
 *
 *   const graph = decodeSchemaGraph(t.graph(t.record({ name: t.string(), tags: t.list(t.string()) })));
 *
 * Builders only assemble JSON; `decodeSchemaGraph` is what validates it.
 * Each builder returns the precise node type, so `JsOf<typeof type>` (see
 * js-types.ts) can describe the matching JavaScript data.
 */
import type {
  BinaryRestrictions,
  BinaryType,
  BoolType,
  CharType,
  DatetimeType,
  Discriminator,
  DurationType,
  EnumType,
  FixedListType,
  FlagsType,
  FloatKind,
  IntegerKind,
  ListType,
  MapType,
  NumericRestrictions,
  OptionType,
  PathSpec,
  PathType,
  QuantitySpec,
  QuantityType,
  RefType,
  SchemaDef,
  SchemaGraphJson,
  SchemaType,
  StreamType,
  StringType,
  TextRestrictions,
  TextType,
  UrlRestrictions,
  UrlType,
} from "./types.js";

/** A record type that remembers its field names and types. */
export type RecordOf<F extends Record<string, SchemaType>> = {
  kind: "record";
  value: { fields: { [K in keyof F & string]: { name: K; body: F[K] } }[keyof F & string][] };
  /** Compile-time only: the field map the record was built from. */
  readonly __fields?: F;
};
export type VariantOf<C extends Record<string, SchemaType | null>> = {
  kind: "variant";
  value: { cases: { name: string; payload?: SchemaType }[] };
  readonly __cases?: C;
};
export type EnumOf<C extends string> = EnumType & { readonly __cases?: C };
export type FlagsOf<C extends string> = FlagsType & { readonly __flags?: C };
export type TupleOf<E extends SchemaType[]> = { kind: "tuple"; value: { elements: SchemaType[] }; readonly __elements?: E };
export type ListOf<E extends SchemaType> = ListType & { value: { element: E } };
export type FixedListOf<E extends SchemaType> = FixedListType & { value: { element: E } };
export type MapOf<K extends SchemaType, V extends SchemaType> = MapType & { value: { key: K; value: V } };
export type OptionOf<T extends SchemaType> = OptionType & { value: { inner: T } };
export type ResultOf<O extends SchemaType | undefined, E extends SchemaType | undefined> = {
  kind: "result";
  value: { spec: { ok?: SchemaType; err?: SchemaType } };
  readonly __ok?: O;
  readonly __err?: E;
};
export type StreamOf<T extends SchemaType> = StreamType & { value: { inner: T } };
export type IntegerOf<K extends IntegerKind> = { kind: K; value: { restrictions?: NumericRestrictions } };
export type FloatOf<K extends FloatKind> = { kind: K; value: { restrictions?: NumericRestrictions } };
export type UnionBranchSpec = { tag: string; body: SchemaType; discriminator: Discriminator };

const integer =
  <K extends IntegerKind>(kind: K) =>
  (restrictions?: NumericRestrictions): IntegerOf<K> =>
    restrictions === undefined ? { kind, value: {} } : { kind, value: { restrictions } };
const float =
  <K extends FloatKind>(kind: K) =>
  (restrictions?: NumericRestrictions): FloatOf<K> =>
    restrictions === undefined ? { kind, value: {} } : { kind, value: { restrictions } };

export const t = {
  bool: (): BoolType => ({ kind: "bool", value: {} }),
  s8: integer("s8"),
  s16: integer("s16"),
  s32: integer("s32"),
  s64: integer("s64"),
  u8: integer("u8"),
  u16: integer("u16"),
  u32: integer("u32"),
  u64: integer("u64"),
  f32: float("f32"),
  f64: float("f64"),
  char: (): CharType => ({ kind: "char", value: {} }),
  string: (): StringType => ({ kind: "string", value: {} }),
  datetime: (): DatetimeType => ({ kind: "datetime", value: {} }),
  duration: (): DurationType => ({ kind: "duration", value: {} }),
  ref: (id: string): RefType => ({ kind: "ref", value: { id } }),
  /**
   * Fields in the object's own key order. JavaScript puts integer-like keys
   * ("0", "1") first; name such fields with `recordOf` instead.
   */
  record: <F extends Record<string, SchemaType>>(fields: F): RecordOf<F> => ({
    kind: "record",
    value: { fields: Object.entries(fields).map(([name, body]) => ({ name, body })) as RecordOf<F>["value"]["fields"] },
  }),
  /** Fields in exactly the given order. */
  recordOf: (fields: readonly (readonly [string, SchemaType])[]): SchemaType => ({
    kind: "record",
    value: { fields: fields.map(([name, body]) => ({ name, body })) },
  }),
  /** `null` marks a case without payload. */
  variant: <C extends Record<string, SchemaType | null>>(cases: C): VariantOf<C> => ({
    kind: "variant",
    value: { cases: Object.entries(cases).map(([name, payload]) => (payload === null ? { name } : { name, payload })) },
  }),
  enum: <const C extends string>(cases: readonly C[]): EnumOf<C> => ({ kind: "enum", value: { cases: [...cases] } }),
  flags: <const C extends string>(flags: readonly C[]): FlagsOf<C> => ({ kind: "flags", value: { flags: [...flags] } }),
  tuple: <E extends SchemaType[]>(...elements: E): TupleOf<E> => ({ kind: "tuple", value: { elements } }),
  list: <E extends SchemaType>(element: E): ListOf<E> => ({ kind: "list", value: { element } }),
  fixedList: <E extends SchemaType>(element: E, length: number): FixedListOf<E> => ({ kind: "fixed-list", value: { element, length } }),
  map: <K extends SchemaType, V extends SchemaType>(key: K, value: V): MapOf<K, V> => ({ kind: "map", value: { key, value } }),
  option: <T extends SchemaType>(inner: T): OptionOf<T> => ({ kind: "option", value: { inner } }),
  result: <O extends SchemaType | undefined = undefined, E extends SchemaType | undefined = undefined>(spec: {
    ok?: O;
    err?: E;
  }): ResultOf<O, E> => {
    const out: { ok?: SchemaType; err?: SchemaType } = {};
    if (spec.ok !== undefined) out.ok = spec.ok;
    if (spec.err !== undefined) out.err = spec.err;
    return { kind: "result", value: { spec: out } };
  },
  text: (restrictions: TextRestrictions = {}): TextType => ({ kind: "text", value: { restrictions } }),
  binary: (restrictions: BinaryRestrictions = {}): BinaryType => ({ kind: "binary", value: { restrictions } }),
  path: (spec: PathSpec = { direction: "input", kind: "any" }): PathType => ({ kind: "path", value: { spec } }),
  url: (restrictions: UrlRestrictions = {}): UrlType => ({ kind: "url", value: { restrictions } }),
  quantity: (spec: QuantitySpec): QuantityType => ({ kind: "quantity", value: { spec } }),
  union: (...branches: UnionBranchSpec[]): SchemaType => ({ kind: "union", value: { spec: { branches } } }),
  stream: <T extends SchemaType>(inner: T): StreamOf<T> => ({ kind: "stream", value: { inner } }),
  /** Graph JSON ready for `decodeSchemaGraph`; `defs` maps id to body. */
  graph: (root: SchemaType, defs: Record<string, SchemaType> = {}): SchemaGraphJson => {
    const list: SchemaDef[] = Object.entries(defs).map(([id, body]) => ({ id, body }));
    return list.length === 0 ? { root } : { defs: list, root };
  },
};
