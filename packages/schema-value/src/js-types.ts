/**
 * `JsOf<T>`: the JavaScript data `toJs` produces for a type built with `t`
 * (types written as JSON literals map to `unknown` where the builder's
 * compile-time names are missing). Together with `jsCodec` it turns a wrong
 * data shape into a compile error:
 *
 *   const point = t.record({ x: t.s32(), y: t.s32() });
 *   const codec = jsCodec(decodeSchemaGraph(t.graph(point)), point);
 *   codec.fromJs({ x: 1, y: "2" }); // does not compile
 */
import type { HostManagedKind, SchemaType, StreamRef } from "./types.js";

/**
 * What a `stream<…>` position becomes in `JsOf`: each layer that turns
 * streams into something (an input iterable on the server, a source on the
 * client, …) names its own mapping, so one recursive type serves them all.
 * A mapping is an interface whose `type` reads `this["inner"]`, the stream's
 * element type:
 *
 *   interface Iterables extends JsStreams { readonly type: AsyncIterable<JsOf<this["inner"], Iterables>> }
 */
export interface JsStreams {
  readonly inner: unknown;
  readonly type: unknown;
}

/** The default: a stream position holds its reference, as `toJs` leaves it without a `stream` hook. */
export interface StreamRefs extends JsStreams {
  readonly type: StreamRef;
}

/** `S` applied to the element type `I`. */
export type MapStream<S extends JsStreams, I> = (S & { readonly inner: I })["type"];

export type Small = "s8" | "s16" | "s32" | "u8" | "u16" | "u32" | "f32" | "f64";

/**
 * A graph maps like its root; a `ref` like its def's body when `t.ref<typeof
 * body>` named it (otherwise nothing is known: `unknown`); host-managed kinds
 * hold no value (`never`). One alias, no helper types, so every type a
 * signature uses stays importable from the packages that re-export `JsOf`.
 */
export type JsOf<T, S extends JsStreams = StreamRefs> = T extends { root: infer R }
  ? JsOf<R, S>
  : T extends { kind: "ref"; __target?: infer B }
    ? SchemaType extends NonNullable<B>
      ? unknown
      : JsOf<NonNullable<B>, S>
    : T extends { kind: HostManagedKind }
      ? never
      : T extends { kind: "bool" }
        ? boolean
        : T extends { kind: Small }
          ? number
          : T extends { kind: "s64" | "u64" | "duration" }
            ? bigint
            : T extends { kind: "char" | "string" | "path" | "url" | "datetime" }
              ? string
              : T extends { kind: "record"; __fields?: infer F }
                ? NonNullable<F> extends Record<string, SchemaType>
                  ? RecordJs<NonNullable<F>, S>
                  : Record<string, unknown>
                : T extends { kind: "variant"; __cases?: infer C }
                  ? NonNullable<C> extends Record<string, SchemaType | null>
                    ? VariantJs<NonNullable<C>, S>
                    : { case: string; value?: unknown }
                  : T extends { kind: "enum"; __cases?: infer C }
                    ? NonNullable<C> extends string
                      ? NonNullable<C>
                      : string
                    : T extends { kind: "flags"; __flags?: infer C }
                      ? Set<NonNullable<C> extends string ? NonNullable<C> : string>
                      : T extends { kind: "tuple"; __elements?: infer E }
                        ? NonNullable<E> extends SchemaType[]
                          ? TupleJs<NonNullable<E>, S>
                          : unknown[]
                        : T extends { kind: "list" | "fixed-list"; value: { element: infer E } }
                          ? JsOf<E, S>[]
                          : T extends { kind: "map"; value: { key: infer K; value: infer V } }
                            ? Map<JsOf<K, S>, JsOf<V, S>>
                            : T extends { kind: "option"; value: { inner: infer I } }
                              ? (I extends { kind: "option" } ? { some: JsOf<I, S> } : JsOf<I, S>) | undefined
                              : T extends { kind: "result"; __ok?: infer O; __err?: infer E }
                                ? { ok: JsOf<NonNullable<O>, S> } | { err: JsOf<NonNullable<E>, S> }
                                : T extends { kind: "text" }
                                  ? { text: string; language?: string }
                                  : T extends { kind: "binary" }
                                    ? Uint8Array | { bytes: Uint8Array; mimeType: string }
                                    : T extends { kind: "quantity" }
                                      ? { mantissa: bigint; scale: number; unit: string }
                                      : T extends { kind: "union" }
                                        ? { tag: string; body: unknown }
                                        : T extends { kind: "stream"; value: { inner: infer I } }
                                          ? MapStream<S, I>
                                          : unknown;

/**
 * A record's fields by name; a field whose type is an option may be left out
 * (`{}` for `record{prefix: option<string>}`), as `fromJs` reads a missing
 * field as an absent option. The two halves are joined into one object type,
 * so editors show `{ name: string; prefix?: string | undefined }`.
 */
export type RecordJs<F extends Record<string, SchemaType>, S extends JsStreams = StreamRefs> = Flat<
  { [K in keyof F as F[K] extends { kind: "option" } ? never : K]: JsOf<F[K], S> } & {
    [K in keyof F as F[K] extends { kind: "option" } ? K : never]?: JsOf<F[K], S>;
  }
>;

/** One object type from an intersection of object types (modifiers kept). */
export type Flat<T> = { [K in keyof T]: T[K] };

/** Mapped over a type parameter, so the mapping keeps the tuple a tuple. */
export type TupleJs<E extends SchemaType[], S extends JsStreams = StreamRefs> = { [I in keyof E]: JsOf<E[I], S> };

export type VariantJs<C extends Record<string, SchemaType | null>, S extends JsStreams = StreamRefs> = {
  [K in keyof C & string]: C[K] extends null ? { case: K } : { case: K; value: JsOf<C[K], S> };
}[keyof C & string];
