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
  HostManagedKind,
  HostManagedType,
  IntegerKind,
  ListType,
  MapType,
  Metadata,
  NumericRestrictions,
  OptionType,
  PathSpec,
  PathType,
  QuantitySpec,
  QuantityType,
  RefType,
  SchemaDef,
  SchemaType,
  StreamType,
  StringType,
  TextRestrictions,
  TextType,
  UrlRestrictions,
  UrlType,
} from "./types.js";
import type { JsonValue } from "@golem-stream/wire";

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
/**
 * A `ref` that remembers the body of the def it names (compile time only), so
 * `JsOf` maps it like the body. `t.ref("id")` alone names an unknown body.
 */
export type RefOf<B extends SchemaType = SchemaType> = RefType & { readonly __target?: B };
/** A graph that remembers its root type: `JsOf` of a graph is `JsOf` of its root. */
export type GraphOf<R extends SchemaType = SchemaType> = { defs?: SchemaDef[]; root: R };
/** One entry of `t.recordOf`: a field name, its type and, optionally, the field's metadata. */
export type FieldEntry = readonly [name: string, body: SchemaType, metadata?: Metadata];
/** One entry of `t.variantOf`: a case name, its payload (`null`: none) and, optionally, the case's metadata. */
export type CaseEntry = readonly [name: string, payload: SchemaType | null, metadata?: Metadata];
/** The field map a list of `t.recordOf` entries declares. */
export type FieldsOf<E extends readonly FieldEntry[]> = { [P in E[number] as P[0]]: P[1] };
/** The case map a list of `t.variantOf` entries declares. */
export type CasesOf<E extends readonly CaseEntry[]> = { [P in E[number] as P[0]]: P[1] };
export type IntegerOf<K extends IntegerKind> = { kind: K; value: { restrictions?: NumericRestrictions } };
export type FloatOf<K extends FloatKind> = { kind: K; value: { restrictions?: NumericRestrictions } };
export type UnionBranchSpec = { tag: string; body: SchemaType; discriminator: Discriminator; metadata?: Metadata };
/** A def of `t.graph` in list form: keeps the order and the def's optional display name. */
export type DefSpec = { id: string; name?: string; body: SchemaType };

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
  /**
   * A reference to the def `id` of the graph. `t.ref<typeof body>("id")`
   * also tells `JsOf` what the def holds (it has no effect at run time).
   */
  ref: <B extends SchemaType = SchemaType>(id: string): RefOf<B> => ({ kind: "ref", value: { id } }),
  /**
   * Fields in the object's own key order. JavaScript puts integer-like keys
   * ("0", "1") first; name such fields with `recordOf` instead.
   */
  record: <F extends Record<string, SchemaType>>(fields: F): RecordOf<F> => ({
    kind: "record",
    value: { fields: Object.entries(fields).map(([name, body]) => ({ name, body })) as RecordOf<F>["value"]["fields"] },
  }),
  /** Fields in exactly the given order, each with optional metadata: `[name, type, metadata?]`. */
  recordOf: <const E extends readonly FieldEntry[]>(fields: E): RecordOf<FieldsOf<E>> => ({
    kind: "record",
    value: {
      fields: fields.map(([name, body, metadata]) => (metadata === undefined ? { name, body } : { name, body, metadata })) as RecordOf<
        FieldsOf<E>
      >["value"]["fields"],
    },
  }),
  /** `null` marks a case without payload. */
  variant: <C extends Record<string, SchemaType | null>>(cases: C): VariantOf<C> => ({
    kind: "variant",
    value: { cases: Object.entries(cases).map(([name, payload]) => (payload === null ? { name } : { name, payload })) },
  }),
  /** Cases in exactly the given order, each with optional metadata: `[name, payload | null, metadata?]`. */
  variantOf: <const E extends readonly CaseEntry[]>(cases: E): VariantOf<CasesOf<E>> => ({
    kind: "variant",
    value: {
      cases: cases.map(([name, payload, metadata]) => ({
        name,
        ...(payload === null ? {} : { payload }),
        ...(metadata === undefined ? {} : { metadata }),
      })),
    },
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
  /**
   * A host-managed or future kind (`secret`, `quota-token`,
   * `permission-card`, `future`): a graph may declare one, no value fits it.
   */
  hostManaged: <K extends HostManagedKind>(kind: K, value: { [member: string]: JsonValue } = {}): HostManagedType & { kind: K } => ({
    kind,
    value,
  }),
  /** `type` with `metadata` (doc, aliases, examples, deprecated, role) on its node; never affects validation. */
  meta: <T extends SchemaType>(type: T, metadata: Metadata): T => ({ ...type, value: { ...type.value, metadata } }) as T,
  /**
   * Graph JSON ready for `decodeSchemaGraph`. `defs` maps id to body, or is
   * a list of `{id, name?, body}` (exact order, integer-like ids, display names).
   */
  graph: <R extends SchemaType>(root: R, defs: Record<string, SchemaType> | readonly DefSpec[] = {}): GraphOf<R> => {
    const list: SchemaDef[] = Array.isArray(defs)
      ? (defs as readonly DefSpec[]).map((def) =>
          def.name === undefined ? { id: def.id, body: def.body } : { id: def.id, name: def.name, body: def.body },
        )
      : Object.entries(defs).map(([id, body]) => ({ id, body }));
    return list.length === 0 ? { root } : { defs: list, root };
  },
};
