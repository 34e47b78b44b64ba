/**
 * `fromJs(data, graph, type, { name, parameters })`: messages for the person who wrote `data`,
 * naming places by the names they wrote and saying what they passed.
 */
import { describe, expect, it } from "vitest";
import { decodeSchemaGraph, fromJs, t, type StreamContext } from "../src/index.js";
import { describeJs } from "../src/data-path.js";
import { thrown } from "./helpers.js";

const P1 = "0dff1c71-f12f-4bb1-996c-23d693bdc825";

describe("fromJs with hooks.name", () => {
  const graph = decodeSchemaGraph(
    t.graph(
      t.record({
        unit: t.string(),
        n: t.u8({ max: { kind: "unsigned", value: "9" } }),
        tags: t.list(t.record({ "odd key": t.bool() })),
        m: t.map(t.string(), t.u64()),
      }),
    ),
  );
  const ok = { unit: "m", n: 1, tags: [{ "odd key": true }], m: new Map([["a", 1n]]) };

  it("names the place from `name`, and says what it found there; the error's path stays the native one", () => {
    const named = { name: "constructor" };
    const error = thrown(() => fromJs({ ...ok, unit: 3 }, graph, undefined, named));
    expect(error.message).toBe("constructor.unit: expected a string, got 3");
    expect(error.path).toBe("value.fields[0]");
    expect(thrown(() => fromJs({ ...ok, tags: [{ "odd key": true }, { "odd key": "yes" }] }, graph, undefined, named)).message).toBe(
      'constructor.tags[1]["odd key"]: expected a boolean, got "yes"',
    );
    expect(thrown(() => fromJs({ ...ok, m: new Map([["a", 1.5]]) }, graph, undefined, named)).message).toBe(
      "constructor.m[0].value: expected a bigint or a safe integer, got 1.5",
    );
    expect(thrown(() => fromJs({ ...ok, tags: new Set() }, graph, undefined, named)).message).toBe(
      "constructor.tags: expected an array, got a Set",
    );
    expect(thrown(() => fromJs("m", graph, undefined, named)).message).toBe('constructor: expected an object keyed by field name, got "m"');
    // Found by the decoder afterwards: the same place, said the same way.
    expect(thrown(() => fromJs({ ...ok, n: 10 }, graph, undefined, named)).message).toMatch(/^constructor\.n: /);
    // Missing, unknown: the fields are the record's.
    expect(thrown(() => fromJs({ ...ok, n: undefined }, graph, undefined, named)).message).toBe(
      "constructor.n: missing (expected a u8 value)",
    );
    expect(thrown(() => fromJs({ ...ok, units: "m" }, graph, undefined, named)).message).toBe(
      'constructor: unknown field "units" (the fields are unit, n, tags, m)',
    );
  });

  it("calls the fields of a parameter record parameters, and only those", () => {
    const ticks = decodeSchemaGraph(t.graph(t.record({ n: t.u32(), delayMs: t.u32(), opts: t.record({ fast: t.bool() }) })));
    const hooks = { name: "ticks", parameters: true };
    expect(thrown(() => fromJs({ to: 1 }, ticks, undefined, hooks)).message).toBe(
      'ticks: unknown parameter "to" (the parameters are n, delayMs, opts)',
    );
    expect(thrown(() => fromJs([1, 2], ticks, undefined, hooks)).message).toBe(
      "ticks: expected an object keyed by parameter name, got an array",
    );
    expect(thrown(() => fromJs({ n: 1, delayMs: 0, opts: { slow: true } }, ticks, undefined, hooks)).message).toBe(
      'ticks.opts: unknown field "slow" (the fields are fast)',
    );
  });

  it("with an empty name, says the place from the first step, or nothing at the root", () => {
    expect(thrown(() => fromJs({ ...ok, unit: 3 }, graph, undefined, { name: "" })).message).toBe("unit: expected a string, got 3");
    const strings = decodeSchemaGraph(t.graph(t.string()));
    expect(thrown(() => fromJs(new Uint8Array(2), strings, undefined, { name: "" })).message).toBe("expected a string, got a Uint8Array");
  });

  it("says what the decoder refuses of a string at the name too (the fast path for strings)", () => {
    const strings = decodeSchemaGraph(t.graph(t.string()));
    const lone = "\ud800"; // a lone surrogate: no UTF-8 text
    expect(thrown(() => fromJs(lone, strings)).message).toMatch(/^value: /);
    expect(thrown(() => fromJs(lone, strings, undefined, { name: "word" })).message).toMatch(/^word: (?!value)/);
    expect(thrown(() => fromJs(lone, strings, undefined, { name: "" })).message).not.toMatch(/^value/);
  });

  it("gives a stream hook the stream's place in data", () => {
    const streams = decodeSchemaGraph(t.graph(t.record({ jobs: t.list(t.record({ log: t.stream(t.string()) })) })));
    const seen: string[] = [];
    const stream = (_data: unknown, context: StreamContext) => (seen.push(context.dataPath), { provisionalRef: P1 });
    fromJs({ jobs: [{ log: [] }] }, streams, undefined, { stream, name: "run" });
    fromJs({ jobs: [{ log: [] }] }, streams, undefined, { stream });
    expect(seen).toEqual(["run.jobs[0].log", "jobs[0].log"]);
  });

  it("refuses a name that is not a string as the caller's mistake", () => {
    expect(thrown(() => fromJs(ok, graph, undefined, { name: 5 as never })).code).toBe("internal-error");
  });

  it("leaves the messages without a name as they were", () => {
    expect(thrown(() => fromJs({ ...ok, unit: 3 }, graph)).message).toBe("value.fields[0] (unit): expected a string");
  });
});

describe("describeJs", () => {
  it.each([
    [3, "3"],
    [Number.NaN, "NaN"],
    [true, "true"],
    [5n, "5n"],
    ["abc", '"abc"'],
    ["x".repeat(40), `"${"x".repeat(32)}..."`],
    [undefined, "undefined"],
    [null, "null"],
    [Symbol("s"), "a symbol"],
    [() => 1, "a function"],
    [[1], "an array"],
    [{}, "an object"],
    [Object.create(null), "an object"],
    [Buffer.from("a"), "a Buffer"],
    [new Uint8Array(1), "a Uint8Array"],
    [new ArrayBuffer(1), "an ArrayBuffer"],
    [new Map(), "a Map"],
    [new Date(0), "a Date"],
    [new (class Widget {})(), "a Widget"],
  ])("%s is %s", (value, described) => {
    expect(describeJs(value)).toBe(described);
  });

  it("says an object whose prototype cannot be read is an object", () => {
    const hostile = new Proxy(
      {},
      {
        getPrototypeOf: () => {
          throw new Error("trap");
        },
      },
    );
    expect(describeJs(hostile)).toBe("an object");
  });
});
