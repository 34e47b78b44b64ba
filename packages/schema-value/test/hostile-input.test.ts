/**
 * Every public function fed every wrong-typed input (noble-hashes style):
 * it either succeeds or throws a ProtocolError with a public code, never an
 * engine error (TypeError, RangeError) and never a crash.
 */
import { ERROR_CODES, ProtocolError, type JsonValue } from "@golem-stream/wire";
import { describe, expect, it } from "vitest";
import {
  byteCharge,
  childTypes,
  decodeSchemaGraph,
  decodeSchemaValue,
  encodeSchemaValue,
  extractGraph,
  fromJs,
  isDirectBinary,
  normalizeSchemaValue,
  schemaValuesEqual,
  t,
  toJs,
  v,
  type SchemaType,
  type SchemaValue,
} from "../src/index.js";

const cyclic: Record<string, unknown> = { kind: "record" };
cyclic["value"] = { fields: [cyclic] };

function deep(levels: number): unknown {
  let value: unknown = v.u8(1);
  for (let i = 0; i < levels; i++) value = v.list(value as SchemaValue);
  return value;
}

const throwingGetter = Object.defineProperty({ kind: "u8" }, "value", {
  enumerable: true,
  get() {
    throw new Error("boom");
  },
});

const hostileProxy = new Proxy(
  {},
  {
    get() {
      throw new Error("proxy get");
    },
    ownKeys() {
      throw new Error("proxy keys");
    },
  },
);

/** Wrong-typed and hostile inputs, each with a label. */
const INPUTS: [string, unknown][] = [
  ["undefined", undefined],
  ["null", null],
  ["true", true],
  ["zero", 0],
  ["-0", -0],
  ["NaN", Number.NaN],
  ["Infinity", Infinity],
  ["bigint", 1n],
  ["empty string", ""],
  ["string", "u8"],
  ["lone surrogate", "\ud800"],
  ["symbol", Symbol("x")],
  ["function", () => 1],
  ["empty array", []],
  ["empty object", {}],
  ["null-prototype object", Object.create(null) as object],
  ["Date", new Date(0)],
  ["Uint8Array", new Uint8Array([1, 2])],
  ["Map", new Map([["kind", "u8"]])],
  ["kind only", { kind: "u8" }],
  ["proto member", JSON.parse('{"__proto__":{"kind":"u8"},"kind":"u8","value":1}') as unknown],
  ["cyclic value", cyclic],
  ["deep value", deep(5000)],
  ["throwing getter", throwingGetter],
  ["hostile proxy", hostileProxy],
  ["array of junk", [1, "a", null]],
  ["wrong kind node", { kind: "nope", value: {} }],
  ["huge list", { kind: "list", value: { elements: new Array(10_000_000) } }],
];

const graph = decodeSchemaGraph(t.graph(t.record({ a: t.list(t.u8()), b: t.option(t.string()) })));
const validValue = v.record(v.list(v.u8(1)), v.option(null));

/** `run` returns, or throws a ProtocolError with a public code and a message; never anything else. */
function expectOnlyProtocolErrors(run: () => unknown): void {
  let thrown: unknown;
  let threw = false;
  try {
    run();
  } catch (error) {
    threw = true;
    thrown = error;
  }
  // An explicit verdict when nothing was thrown too: returning is an allowed outcome, not an unchecked one.
  expect(threw ? thrown instanceof ProtocolError : "returned").toBe(threw ? true : "returned");
  if (!threw) return;
  expect(ERROR_CODES).toContain((thrown as ProtocolError).code);
  expect((thrown as ProtocolError).message.length).toBeGreaterThan(0);
}

const FUNCTIONS: [string, (input: unknown) => unknown][] = [
  ["decodeSchemaGraph(json)", (x) => decodeSchemaGraph(x as JsonValue)],
  ["decodeSchemaGraph(graph, options)", (x) => decodeSchemaGraph(t.graph(t.u8()), x as never)],
  ["decodeSchemaValue(json)", (x) => decodeSchemaValue(x as JsonValue, graph)],
  ["decodeSchemaValue(graph)", (x) => decodeSchemaValue(validValue, x as never)],
  ["decodeSchemaValue(options)", (x) => decodeSchemaValue(validValue, graph, x as never)],
  ["decodeSchemaValue(options.type)", (x) => decodeSchemaValue(validValue, graph, { type: x as SchemaType })],
  ["encodeSchemaValue(value)", (x) => encodeSchemaValue(x as SchemaValue)],
  ["normalizeSchemaValue(json)", (x) => normalizeSchemaValue(x as JsonValue, graph)],
  ["schemaValuesEqual(a, b)", (x) => schemaValuesEqual(validValue, x as JsonValue, graph)],
  ["byteCharge(value)", (x) => byteCharge(x as JsonValue, graph)],
  ["byteCharge(type)", (x) => byteCharge(validValue, graph, x as SchemaType)],
  ["extractGraph(graph)", (x) => extractGraph(x as never, t.u8())],
  ["extractGraph(type)", (x) => extractGraph(graph, x as SchemaType)],
  ["isDirectBinary(graph)", (x) => isDirectBinary(x as never, t.u8())],
  ["isDirectBinary(type)", (x) => isDirectBinary(graph, x as SchemaType)],
  ["toJs(value)", (x) => toJs(x as JsonValue, graph)],
  ["toJs(type)", (x) => toJs(validValue, graph, x as SchemaType)],
  ["fromJs(data)", (x) => fromJs(x, graph)],
  ["fromJs(record field)", (x) => fromJs({ a: x, b: x }, graph)],
  ["fromJs(type)", (x) => fromJs({ a: [], b: undefined }, graph, x as SchemaType)],
  ["v.u64", (x) => v.u64(x as bigint)],
  ["v.u8", (x) => v.u8(x as number)],
  ["v.char", (x) => v.char(x as string)],
  ["v.datetime", (x) => v.datetime(x as string)],
  ["v.streamProvisional", (x) => v.streamProvisional(x as string)],
];

/**
 * Positions that take the caller's options or hooks: null and undefined are the defaults, any
 * other object is read member by member (these have none of the members), and everything else is
 * the caller's `internal-error`, never blamed on the graph or value (`validation-error`), and never
 * taken as "no options" (a string given for `{streams: "forbidden"}` had left streams allowed).
 */
const OPTION_POSITIONS: [string, (options: unknown) => unknown][] = [
  ["decodeSchemaGraph(graph, options)", (x) => decodeSchemaGraph(t.graph(t.stream(t.u8())), x as never)],
  ["decodeSchemaValue(value, graph, options)", (x) => decodeSchemaValue(validValue, graph, x as never)],
  ["normalizeSchemaValue(value, graph, options)", (x) => normalizeSchemaValue(validValue, graph, x as never)],
  ["byteCharge(value, graph, type, options)", (x) => byteCharge(validValue, graph, undefined, x as never)],
  ["toJs(value, graph, type, hooks)", (x) => toJs(validValue, graph, undefined, x as never)],
  ["fromJs(data, graph, type, hooks)", (x) => fromJs({ a: [1], b: "x" }, graph, undefined, x as never)],
];

/** `internal-error`, the caller's bug. */
function expectCallerBug(run: () => unknown): void {
  let thrown: unknown;
  try {
    run();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(ProtocolError);
  expect((thrown as ProtocolError).code).toBe("internal-error");
}

describe("wrong-typed options and hooks", () => {
  for (const [name, run] of OPTION_POSITIONS) {
    it.each(INPUTS)(`${name} with %s: the defaults, or the caller's internal-error`, (_, input) => {
      if (input === undefined || input === null || (typeof input === "object" && input !== hostileProxy)) {
        expect(run(input)).toBeDefined();
      } else {
        expectCallerBug(() => run(input));
      }
    });
  }

  it.each(INPUTS)("childTypes with %s: the caller's internal-error unless it is shaped like a type node", (_, input) => {
    if (typeof input !== "object" || input === null) {
      expectCallerBug(() => childTypes(input as SchemaType));
    } else {
      expectOnlyProtocolErrors(() => childTypes(input as SchemaType));
    }
  });
});

describe("wrong-typed inputs to every public function", () => {
  for (const [name, run] of FUNCTIONS) {
    it.each(INPUTS)(`${name} with %s throws only ProtocolError`, (_, input) => {
      expectOnlyProtocolErrors(() => run(input));
    });
  }

  it("the huge sparse list is refused by the byte-charge bound before it is walked", () => {
    const error = (() => {
      try {
        decodeSchemaValue(
          { kind: "list", value: { elements: new Array(10_000_000) } } as unknown as JsonValue,
          decodeSchemaGraph(t.graph(t.list(t.u8()))),
        );
      } catch (e) {
        return e as ProtocolError;
      }
      return undefined;
    })();
    expect(error?.code).toBe("limit-exceeded");
  });

  it("a value nested deeper than the JSON limit is limit-exceeded, not a stack overflow", () => {
    let type: SchemaType = t.u8();
    for (let i = 0; i < 200; i++) type = t.list(type);
    const deepGraph = decodeSchemaGraph(t.graph(type));
    let error: unknown;
    try {
      decodeSchemaValue(deep(200) as SchemaValue, deepGraph);
    } catch (e) {
      error = e;
    }
    expect((error as ProtocolError).code).toBe("limit-exceeded");
  });
});
