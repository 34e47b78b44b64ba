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
import type { SchemaType } from "./types.js";

export type Small = "s8" | "s16" | "s32" | "u8" | "u16" | "u32" | "f32" | "f64";

export type JsOf<T> = T extends { kind: "bool" }
  ? boolean
  : T extends { kind: Small }
    ? number
    : T extends { kind: "s64" | "u64" | "duration" }
      ? bigint
      : T extends { kind: "char" | "string" | "path" | "url" | "datetime" }
        ? string
        : T extends { kind: "record"; __fields?: infer F }
          ? NonNullable<F> extends Record<string, SchemaType>
            ? { [K in keyof NonNullable<F>]: JsOf<NonNullable<F>[K]> }
            : Record<string, unknown>
          : T extends { kind: "variant"; __cases?: infer C }
            ? NonNullable<C> extends Record<string, SchemaType | null>
              ? VariantJs<NonNullable<C>>
              : { case: string; value?: unknown }
            : T extends { kind: "enum"; __cases?: infer C }
              ? NonNullable<C> extends string
                ? NonNullable<C>
                : string
              : T extends { kind: "flags"; __flags?: infer C }
                ? Set<NonNullable<C> extends string ? NonNullable<C> : string>
                : T extends { kind: "tuple"; __elements?: infer E }
                  ? NonNullable<E> extends SchemaType[]
                    ? { [I in keyof NonNullable<E>]: JsOf<NonNullable<E>[I]> }
                    : unknown[]
                  : T extends { kind: "list" | "fixed-list"; value: { element: infer E } }
                    ? JsOf<E>[]
                    : T extends { kind: "map"; value: { key: infer K; value: infer V } }
                      ? Map<JsOf<K>, JsOf<V>>
                      : T extends { kind: "option"; value: { inner: infer I } }
                        ? (I extends { kind: "option" } ? { some: JsOf<I> } : JsOf<I>) | undefined
                        : T extends { kind: "result"; __ok?: infer O; __err?: infer E }
                          ? { ok: JsOf<NonNullable<O>> } | { err: JsOf<NonNullable<E>> }
                          : T extends { kind: "text" }
                            ? { text: string; language?: string }
                            : T extends { kind: "binary" }
                              ? Uint8Array | { bytes: Uint8Array; mimeType: string }
                              : T extends { kind: "quantity" }
                                ? { mantissa: bigint; scale: number; unit: string }
                                : T extends { kind: "union" }
                                  ? { tag: string; body: unknown }
                                  : unknown;

export type VariantJs<C extends Record<string, SchemaType | null>> = {
  [K in keyof C & string]: C[K] extends null ? { case: K } : { case: K; value: JsOf<C[K]> };
}[keyof C & string];
