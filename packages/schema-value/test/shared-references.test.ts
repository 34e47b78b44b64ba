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
import { decodeSchemaGraph, encodeSchemaValue, fromJs, t, v, type SchemaValue } from "../src/index.js";
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
