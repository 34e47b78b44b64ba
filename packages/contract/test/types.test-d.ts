/**
 * Types as types (run by `vitest --typecheck`, and by `tsc` in `pnpm lint`):
 * `JsOf` maps every SchemaType kind, a stream mapping types stream positions,
 * and wrong shapes do not compile (the `@ts-expect-error` table: an
 * unused directive is itself a compile error, so each line must stay wrong).
 */
import { describe, expectTypeOf, it } from "vitest";
import type { ProvisionalRef, SchemaType, StableRef } from "@golem-stream/schema-value";
import { defineAgentType, t, type ConstructorArgs, type JsOf, type JsStreams, type MethodParams, type MethodResult } from "../src/index.js";
import { echoContract } from "../src/demo.js";

/** A mapping for the test: every stream becomes an array of its elements. */
interface Arrays extends JsStreams {
  readonly type: JsOf<this["inner"], Arrays>[];
}

describe("JsOf maps every SchemaType kind", () => {
  it("scalars", () => {
    expectTypeOf<JsOf<ReturnType<typeof t.bool>>>().toEqualTypeOf<boolean>();
    for (const _ of [t.s8(), t.s16(), t.s32(), t.u8(), t.u16(), t.u32(), t.f32(), t.f64()])
      expectTypeOf<JsOf<typeof _>>().toEqualTypeOf<number>();
    expectTypeOf<JsOf<ReturnType<typeof t.s64>>>().toEqualTypeOf<bigint>();
    expectTypeOf<JsOf<ReturnType<typeof t.u64>>>().toEqualTypeOf<bigint>();
    expectTypeOf<JsOf<ReturnType<typeof t.duration>>>().toEqualTypeOf<bigint>();
    for (const _ of [t.char(), t.string(), t.path(), t.url(), t.datetime()]) expectTypeOf<JsOf<typeof _>>().toEqualTypeOf<string>();
    expectTypeOf<JsOf<ReturnType<typeof t.text>>>().toEqualTypeOf<{ text: string; language?: string }>();
    expectTypeOf<JsOf<ReturnType<typeof t.binary>>>().toEqualTypeOf<Uint8Array | { bytes: Uint8Array; mimeType: string }>();
    const quantity = t.quantity({ unit: "m" } as never);
    expectTypeOf<JsOf<typeof quantity>>().toEqualTypeOf<{ mantissa: bigint; scale: number; unit: string }>();
  });

  it("composites", () => {
    const record = t.record({ a: t.u8(), b: t.list(t.string()) });
    expectTypeOf<JsOf<typeof record>>().toEqualTypeOf<{ a: number; b: string[] }>();
    // An option field may be left out (fromJs reads a missing field as an absent option).
    const withOption = t.record({ name: t.string(), prefix: t.option(t.string()) });
    expectTypeOf<JsOf<typeof withOption>>().toEqualTypeOf<{ name: string; prefix?: string | undefined }>();
    expectTypeOf<{ name: "x" }>().toMatchTypeOf<JsOf<typeof withOption>>();
    // @ts-expect-error a field that is not an option may not
    expectTypeOf<{ prefix: "p" }>().toMatchTypeOf<JsOf<typeof withOption>>();
    const variant = t.variant({ none: null, some: t.u64() });
    expectTypeOf<JsOf<typeof variant>>().toEqualTypeOf<{ case: "none" } | { case: "some"; value: bigint }>();
    const enumType = t.enum(["red", "green"]);
    expectTypeOf<JsOf<typeof enumType>>().toEqualTypeOf<"red" | "green">();
    const flags = t.flags(["r", "w"]);
    expectTypeOf<JsOf<typeof flags>>().toEqualTypeOf<Set<"r" | "w">>();
    const tuple = t.tuple(t.bool(), t.s64());
    expectTypeOf<JsOf<typeof tuple>>().toEqualTypeOf<[boolean, bigint]>();
    const fixed = t.fixedList(t.f32(), 3);
    expectTypeOf<JsOf<typeof fixed>>().toEqualTypeOf<number[]>();
    const map = t.map(t.string(), t.u32());
    expectTypeOf<JsOf<typeof map>>().toEqualTypeOf<Map<string, number>>();
    const option = t.option(t.string());
    expectTypeOf<JsOf<typeof option>>().toEqualTypeOf<string | undefined>();
    const nested = t.option(t.option(t.u8()));
    expectTypeOf<JsOf<typeof nested>>().toEqualTypeOf<{ some: number | undefined } | undefined>();
    const result = t.result({ ok: t.string(), err: t.u32() });
    expectTypeOf<JsOf<typeof result>>().toEqualTypeOf<{ ok: string } | { err: number }>();
    expectTypeOf<JsOf<Extract<SchemaType, { kind: "union" }>>>().toEqualTypeOf<{ tag: string; body: unknown }>();
    // A ref names a definition only the graph knows: its JavaScript type is not known statically…
    const untyped = t.ref("d");
    expectTypeOf<JsOf<typeof untyped>>().toEqualTypeOf<unknown>();
    // …unless the ref names the def's body.
    const body = t.record({ n: t.u64() });
    const typed = t.ref<typeof body>("d");
    expectTypeOf<JsOf<typeof typed>>().toEqualTypeOf<{ n: bigint }>();
    const aliased = t.ref<typeof typed>("alias");
    expectTypeOf<JsOf<typeof aliased>>().toEqualTypeOf<{ n: bigint }>();
    // Host-managed kinds never hold a value.
    for (const _ of [t.hostManaged("secret"), t.hostManaged("quota-token"), t.hostManaged("permission-card"), t.hostManaged("future")]) {
      expectTypeOf<JsOf<typeof _>>().toEqualTypeOf<never>();
    }
    const maybeSecret = t.option(t.hostManaged("secret"));
    expectTypeOf<JsOf<typeof maybeSecret>>().toEqualTypeOf<undefined>();
  });

  it("builders with metadata and exact order keep their types", () => {
    const ordered = t.recordOf([
      ["b", t.u8(), { doc: "b" }],
      ["1", t.string()],
    ]);
    expectTypeOf<JsOf<typeof ordered>>().toEqualTypeOf<{ b: number; 1: string }>();
    const cases = t.variantOf([
      ["0", null],
      ["some", t.bool(), { deprecated: "x" }],
    ]);
    expectTypeOf<JsOf<typeof cases>>().toEqualTypeOf<{ case: "0" } | { case: "some"; value: boolean }>();
    const documented = t.meta(t.list(t.s64()), { doc: "d" });
    expectTypeOf<JsOf<typeof documented>>().toEqualTypeOf<bigint[]>();
  });

  it("graphs map like their root, refs into their defs typed", () => {
    const leaf = t.u32();
    const graph = t.graph(t.record({ a: t.ref<typeof leaf>("leaf"), b: t.stream(t.ref<typeof leaf>("leaf")) }), [
      { id: "leaf", body: leaf },
    ]);
    expectTypeOf<JsOf<typeof graph, Arrays>>().toEqualTypeOf<{ a: number; b: number[] }>();
    const withDefs = defineAgentType({
      name: "g",
      constructor: graph,
      methods: { m: { params: graph, result: t.graph(t.ref<typeof leaf>("leaf"), { leaf }) } },
    });
    expectTypeOf<MethodParams<typeof withDefs.methods.m, Arrays>>().toEqualTypeOf<{ a: number; b: number[] }>();
    expectTypeOf<MethodResult<typeof withDefs.methods.m, Arrays>>().toEqualTypeOf<number>();
  });

  it("streams: a reference by default, whatever the mapping says otherwise, nested ones included", () => {
    const stream = t.stream(t.u32());
    expectTypeOf<JsOf<typeof stream>>().toEqualTypeOf<ProvisionalRef | StableRef>();
    expectTypeOf<JsOf<typeof stream, Arrays>>().toEqualTypeOf<number[]>();
    const deep = t.stream(t.record({ name: t.string(), items: t.stream(t.u64()) }));
    expectTypeOf<JsOf<typeof deep, Arrays>>().toEqualTypeOf<{ name: string; items: bigint[] }[]>();
    const inVariant = t.variant({ lines: t.stream(t.string()) });
    expectTypeOf<JsOf<typeof inVariant, Arrays>>().toEqualTypeOf<{ case: "lines"; value: string[] }>();
  });
});

describe("contract types", () => {
  it("constructor, parameters and results of the demo contract", () => {
    expectTypeOf<ConstructorArgs<typeof echoContract>>().toEqualTypeOf<{ name: string }>();
    expectTypeOf<MethodParams<typeof echoContract.methods.count, Arrays>>().toEqualTypeOf<{ to: number; delayMs: number }>();
    expectTypeOf<MethodParams<typeof echoContract.methods.split, Arrays>>().toEqualTypeOf<{ data: number[] }>();
    expectTypeOf<MethodResult<typeof echoContract.methods.split, Arrays>>().toEqualTypeOf<{ upper: number[]; lines: string[] }>();
    expectTypeOf<MethodResult<typeof echoContract.methods.digest, Arrays>>().toEqualTypeOf<{ bytes: bigint; sha256: string }>();
    const noResult = defineAgentType({
      name: "sink",
      constructor: t.record({}),
      methods: { put: { params: t.record({ key: t.string() }) } },
    });
    expectTypeOf<MethodResult<typeof noResult.methods.put, Arrays>>().toEqualTypeOf<undefined>();
    expectTypeOf(noResult.name).toEqualTypeOf<"sink">();
  });

  it("refuses wrong shapes", () => {
    const point = t.record({ x: t.s32(), big: t.u64() });
    const ok: JsOf<typeof point> = { x: 1, big: 2n };
    void ok;
    // Each line below must not compile.
    const wrong = [
      // @ts-expect-error a u64 is a bigint, not a number
      ((): JsOf<typeof point> => ({ x: 1, big: 2 }))(),
      // @ts-expect-error a missing field
      ((): JsOf<typeof point> => ({ x: 1 }))(),
      // @ts-expect-error a string where an s32 is declared
      ((): JsOf<typeof point> => ({ x: "1", big: 2n }))(),
      // @ts-expect-error a stream of u32 mapped to arrays holds numbers
      ((): JsOf<ReturnType<typeof t.stream<ReturnType<typeof t.u32>>>, Arrays> => ["1"])(),
      // @ts-expect-error an enum value outside its cases
      ((): JsOf<ReturnType<typeof t.enum<"a" | "b">>> => "c")(),
      // @ts-expect-error the constructor of the demo takes a name
      ((): ConstructorArgs<typeof echoContract> => ({ title: "x" }))(),
      // @ts-expect-error methods must have a record of parameters
      defineAgentType({ name: "x", constructor: t.record({}), methods: { m: { params: t.string() } } }),
      // @ts-expect-error the constructor must be a record
      defineAgentType({ name: "x", constructor: t.u8(), methods: {} }),
      // @ts-expect-error a typed ref maps like its def: a u32 is a number
      ((): JsOf<ReturnType<typeof t.ref<ReturnType<typeof t.u32>>>> => "1")(),
      // @ts-expect-error no value fits a host-managed kind
      ((): JsOf<ReturnType<typeof t.hostManaged<"secret">>> => ({}))(),
      // @ts-expect-error a graph's JavaScript is its root's: this record has a field n
      ((): JsOf<ReturnType<typeof t.graph<ReturnType<typeof t.record<{ n: ReturnType<typeof t.u8> }>>>>> => ({ m: 1 }))(),
      // @ts-expect-error a result must be a schema type
      defineAgentType({ name: "x", constructor: t.record({}), methods: { m: { params: t.record({}), result: "string" } } }),
    ];
    void wrong;
  });
});
