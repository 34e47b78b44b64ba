/**
 * `findStreamTokens` builds a stream's JSON pointer only when it finds the
 * stream (building one per member of every received item cost
 * more than the walk). It must find exactly what the plain walk below finds,
 * in the same order, with the same pointers, escapes included.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { JsonValue } from "@golem-stream/wire";
import { findStreamTokens, type StreamLeaf } from "../src/values.js";

/** The straightforward walk: a pointer for every node visited. */
function reference(value: JsonValue, pointer = "", found: StreamLeaf[] = []): StreamLeaf[] {
  if (Array.isArray(value)) {
    value.forEach((child, index) => reference(child, `${pointer}/${index}`, found));
    return found;
  }
  if (typeof value !== "object" || value === null) return found;
  const payload = value["value"];
  if (value["kind"] === "stream" && typeof payload === "object" && payload !== null && !Array.isArray(payload)) {
    const token = payload["streamToken"];
    if (typeof token === "string") found.push({ coordinate: pointer, streamToken: token });
    return found;
  }
  for (const [name, child] of Object.entries(value)) reference(child, `${pointer}/${name.replace(/~/g, "~0").replace(/\//g, "~1")}`, found);
  return found;
}

const key = fc.oneof(fc.constantFrom("kind", "value", "fields", "a/b", "~1", "~", "/", ""), fc.string({ maxLength: 4 }));
const stream = fc.oneof(
  fc.record({ kind: fc.constant("stream"), value: fc.record({ streamToken: fc.string({ maxLength: 6 }) }) }),
  fc.record({ kind: fc.constant("stream"), value: fc.record({ provisionalRef: fc.string({ maxLength: 6 }) }) }),
  fc.record({ kind: fc.constant("stream"), value: fc.oneof(fc.constant(null), fc.constant([]), fc.string()) }),
);
const { tree } = fc.letrec((tie) => ({
  tree: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.oneof(fc.string({ maxLength: 3 }), fc.integer(), fc.boolean(), fc.constant(null)),
    stream,
    fc.array(tie("tree"), { maxLength: 4 }),
    fc.dictionary(key, tie("tree"), { maxKeys: 4 }),
    fc.record({ kind: fc.string({ maxLength: 6 }), value: tie("tree") }),
  ),
}));

describe("findStreamTokens", () => {
  it("finds what a walk that builds every pointer finds, in order", () => {
    fc.assert(
      fc.property(tree, (value) => {
        expect(findStreamTokens(value as JsonValue)).toEqual(reference(value as JsonValue));
      }),
      { numRuns: 2000 },
    );
  });

  it("escapes ~ and / in the pointer of a stream it finds", () => {
    const value = { kind: "x", value: { "a/b": [0, { "~": { kind: "stream", value: { streamToken: "t" } } }] } } as unknown as JsonValue;
    expect(findStreamTokens(value)).toEqual([{ coordinate: "/value/a~1b/1/~0", streamToken: "t" }]);
  });
});
