/**
 * Values and data built in memory may reference one object many times (a
 * DAG): few objects, but text or a native tree that doubles with each level
 * that shares. `encodeSchemaValue` bounds its text while it writes it, and
 * `fromJs` counts the byte charge while it builds, so the work done for such
 * a value stops at the limit. Counted, not timed: getters count how often a
 * shared leaf is read.
 */
import { LIMITS } from "@golem-stream/wire";
import { describe, expect, it } from "vitest";
import { decodeSchemaGraph, encodeSchemaValue, extractGraph, fromJs, t, v, type SchemaType, type SchemaValue } from "../src/index.js";
import { thrown } from "./helpers.js";

const KiB64 = "x".repeat(64 * 1024);
/** How many 64 KiB strings fit in 8 MiB: fewer than this. */
const FIT = (8 * 1024 * 1024) / (64 * 1024);

/** A string node whose payload counts its reads. */
function countedString(text: string): { node: SchemaValue; reads: () => number } {
  let reads = 0;
  const node = Object.defineProperty({ kind: "string" }, "value", {
    enumerable: true,
    get() {
      reads++;
      return text;
    },
  }) as unknown as SchemaValue;
  return { node, reads: () => reads };
}

/** `levels` of a tuple of `node` twice: 2^levels references to it. */
function sharedTuples(node: SchemaValue, levels: number): SchemaValue {
  let value = node;
  for (let i = 0; i < levels; i++) value = v.tuple(value, value);
  return value;
}

describe("encodeSchemaValue of a value that shares nodes", () => {
  it("stops as soon as its text passes 8 MiB, having read the shared node only as often as fits", () => {
    // 1024 references to one 64 KiB string node: 64 MiB of text.
    const { node, reads } = countedString(KiB64);
    const error = thrown(() => encodeSchemaValue(sharedTuples(node, 10)));
    expect([error.code, error.path]).toEqual(["limit-exceeded", "value"]);
    expect(reads()).toBeLessThanOrEqual(FIT);
  });

  it("refuses 21 nodes whose text would be 64 MiB, as the reviewer's value did", () => {
    expect(thrown(() => encodeSchemaValue(sharedTuples(v.u8(1), 20))).code).toBe("limit-exceeded");
  });

  it("takes maxBytes as the bound, exactly, in UTF-8 bytes", () => {
    const value = v.list(v.string("€"), v.u8(1));
    const text = encodeSchemaValue(value);
    const bytes = new TextEncoder().encode(text).length;
    expect(bytes).toBe(text.length + 2);
    expect(encodeSchemaValue(value, { maxBytes: bytes })).toBe(text);
    expect(thrown(() => encodeSchemaValue(value, { maxBytes: bytes - 1 })).code).toBe("limit-exceeded");
    expect(thrown(() => encodeSchemaValue(value, { maxBytes: text.length - 1 })).code).toBe("limit-exceeded");
    expect(thrown(() => encodeSchemaValue(v.u8(1), { maxBytes: 5 })).code).toBe("limit-exceeded");
    expect(encodeSchemaValue(v.u8(1), null as never)).toBe('{"kind":"u8","value":1}');
  });

  it("refuses a maxBytes that is not a non-negative integer as the caller's bug, never as no bound", () => {
    for (const options of [{ maxBytes: Number.NaN }, { maxBytes: -1 }, { maxBytes: 0.5 }, { maxBytes: "1" }, "big", 3]) {
      expect(thrown(() => encodeSchemaValue(v.u8(1), options as never)).code).toBe("internal-error");
    }
  });
});

describe("fromJs of data that shares objects", () => {
  const graph = decodeSchemaGraph(t.graph(t.list(t.record({ s: t.string() }))));

  it("stops building as soon as the byte charge passes the limit, having read the shared object only as often as fits", () => {
    let reads = 0;
    const shared = Object.defineProperty({}, "s", {
      enumerable: true,
      get() {
        reads++;
        return KiB64;
      },
    });
    // 2048 references to one record of 64 KiB of text: 128 MiB of charge.
    const error = thrown(() => fromJs(new Array<unknown>(2048).fill(shared), graph));
    expect(error.code).toBe("limit-exceeded");
    expect(error.message).toContain(`the value's byte charge exceeds ${LIMITS.maxValueByteCharge}`);
    expect(reads).toBeLessThanOrEqual(FIT);
  });

  it("refuses bytes more than the charge can hold before copying them", () => {
    const bytes = new Uint8Array(LIMITS.maxValueByteCharge + 1);
    for (const type of [t.list(t.u8()), t.binary()]) {
      expect(thrown(() => fromJs(bytes, decodeSchemaGraph(t.graph(type)))).code).toBe("limit-exceeded");
    }
    expect(thrown(() => fromJs({ bytes }, decodeSchemaGraph(t.graph(t.binary())))).code).toBe("limit-exceeded");
    const map = new Map(Array.from({ length: 4 }, (_, i) => [i, i]));
    expect(fromJs(map, decodeSchemaGraph(t.graph(t.map(t.u8(), t.u8()))))).toMatchObject({ kind: "map" });
  });
});

/** `levels` of a tuple of `type` twice: one object per level, 2^levels places for `type`. */
function sharedTypes(type: SchemaType, levels: number): SchemaType {
  let out = type;
  for (let i = 0; i < levels; i++) out = t.tuple(out, out);
  return out;
}

describe("decodeSchemaGraph of a graph that uses one type object at many places", () => {
  // 18 levels: 262,144 places for the string, which a walk per place took 14 s to decode and
  // check (20 levels took an agent author's declaration 115 s); each object is decoded once.
  const tower = sharedTypes(t.string(), 18);

  it("decodes each object once and keeps the sharing, with every check on the graph", () => {
    const graph = decodeSchemaGraph(t.graph(t.map(tower, t.ref("d")), { d: t.list(tower) }), { streams: "forbidden" });
    const key = (graph.root as { value: { key: SchemaType } }).value.key as { value: { elements: SchemaType[] } };
    expect(key.value.elements[0]).toBe(key.value.elements[1]);
    expect(extractGraph(graph, graph.root).defs.map((d) => d.id)).toEqual(["d"]);
    const small = sharedTypes(t.u8(), 2);
    expect(
      fromJs(
        [
          [1, 2],
          [3, 4],
        ],
        graph,
        t.tuple(small, tower).value.elements[0] as SchemaType,
      ),
    ).toEqual(v.tuple(v.tuple(v.u8(1), v.u8(2)), v.tuple(v.u8(3), v.u8(4))));
  });

  it("finds a stream under the shared types: in a map key, and where streams are forbidden", () => {
    // 19 levels: a walk per place took minutes.
    const streaming = sharedTypes(t.stream(t.u8()), 19);
    expect(thrown(() => decodeSchemaGraph(t.graph(t.map(t.ref("k"), t.u8()), { k: streaming }))).path).toBe("root.key");
    expect(thrown(() => decodeSchemaGraph(t.graph(streaming), { streams: "forbidden" })).code).toBe("validation-error");
    expect(extractGraph(decodeSchemaGraph(t.graph(t.u8(), { s: streaming })), streaming).defs).toEqual([]);
  });

  it("does work linear in the objects, not in the places (counted)", () => {
    const counted = ["push", "some", "map"] as const;
    const originals = counted.map((name) => Array.prototype[name]);
    const keys = Object.keys;
    let work = 0;
    const measure = (levels: number): number => {
      const type = sharedTypes(t.option(t.u8()), levels);
      work = 0;
      counted.forEach((name, k) => {
        const original = originals[k] as (this: unknown[], ...args: unknown[]) => unknown;
        Object.defineProperty(Array.prototype, name, {
          value: function (this: unknown[], ...args: unknown[]) {
            work += 1 + args.length;
            return original.apply(this, args);
          },
          configurable: true,
          writable: true,
        });
      });
      Object.keys = (o: object) => ((work += 1), keys(o));
      try {
        const graph = decodeSchemaGraph(t.graph(t.map(type, t.u8())));
        extractGraph(graph, type);
      } finally {
        counted.forEach((name, k) =>
          Object.defineProperty(Array.prototype, name, { value: originals[k], configurable: true, writable: true }),
        );
        Object.keys = keys;
      }
      return work;
    };
    // Linear: about 8 times the work for 8 times the levels; a walk per place does 2^14 times.
    expect(measure(16) / measure(2)).toBeLessThan(16);
  });

  it("refuses a type that contains itself, which JSON text cannot spell", () => {
    const list = t.list(t.u8()) as { value: { element: SchemaType } };
    list.value.element = list as SchemaType;
    const error = thrown(() => decodeSchemaGraph(t.graph(list as SchemaType)));
    expect([error.code, error.path]).toEqual(["validation-error", "root.element"]);
    expect(error.message).toContain("contains itself");
  });

  it("copies a host-managed payload used at many places once", () => {
    let reads = 0;
    const payload = Object.defineProperty({}, "x", {
      enumerable: true,
      get() {
        reads++;
        return 1;
      },
    });
    const types = Array.from({ length: 1000 }, () => t.hostManaged("secret", payload));
    decodeSchemaGraph(t.graph(t.tuple(...types)));
    expect(reads).toBe(1);
  });

  it("reads at most one value or string unit per byte of the text limit, a type used at many places once", () => {
    // 3000 records sharing one list of 3000 fields: 9 million fields to copy, from 6000 objects.
    const fields = Array.from({ length: 3000 }, (_, i) => ({ name: `f${i}`, body: t.u8() }));
    const records = Array.from({ length: 3000 }, () => ({ kind: "record", value: { fields } }) as SchemaType);
    const error = thrown(() => decodeSchemaGraph(t.graph(t.tuple(...records))));
    expect(error.code).toBe("limit-exceeded");
    expect(error.message).toContain(`larger than ${LIMITS.maxTextMessageBytes} JSON values and string units`);
    // A graph whose text fits the limit is read whole; a string longer than the limit is not.
    const doc = (length: number) => t.graph(t.meta(t.u8(), { doc: "d".repeat(length) }));
    expect(decodeSchemaGraph(doc(LIMITS.maxTextMessageBytes - 64)).root.kind).toBe("u8");
    expect(thrown(() => decodeSchemaGraph(doc(LIMITS.maxTextMessageBytes + 1))).code).toBe("limit-exceeded");
  });
});
