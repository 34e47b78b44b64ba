/**
 * `bindProvisionalRefs`: the copy of a parameter or item value with its
 * stream bindings replaced, and the coordinates (RFC 6901 JSON pointers) it
 * reports for them and for errors.
 */
import { describe, expect, it } from "vitest";
import { LIMITS } from "@golem-stream/wire";
import { ClientError } from "../src/errors.js";
import { inputStream, type ParamNode } from "../src/input-stream.js";
import { isPlainStringNode } from "@golem-stream/wire/internal";
import { bindProvisionalRefs } from "../src/values.js";

const empty = (): AsyncIterable<string> => ({ [Symbol.asyncIterator]: () => ({ next: async () => ({ done: true, value: undefined }) }) });

describe("bindProvisionalRefs", () => {
  it("replaces each binding by its reference, at its JSON pointer, escaping ~ and / in member names", () => {
    const a = inputStream.strings(empty());
    const b = inputStream.strings(empty());
    const seen: [string, string][] = [];
    const node = {
      kind: "record",
      value: { fields: [{ "a/b~c": a }, [1, { deep: b }]] },
    } as unknown as ParamNode;
    const bound = bindProvisionalRefs(node, (binding, coordinate) => {
      seen.push([binding === a ? "a" : "b", coordinate]);
      return `ref-${seen.length}`;
    });
    expect(seen).toEqual([
      ["a", "/value/fields/0/a~1b~0c"],
      ["b", "/value/fields/1/1/deep"],
    ]);
    expect(bound).toEqual({
      kind: "record",
      value: {
        fields: [
          { "a/b~c": { kind: "stream", value: { provisionalRef: "ref-1" } } },
          [1, { deep: { kind: "stream", value: { provisionalRef: "ref-2" } } }],
        ],
      },
    });
  });

  it("copies: the result shares no object with the input", () => {
    const node = { kind: "list", value: [{ kind: "string", value: "x" }] } as unknown as ParamNode;
    const bound = bindProvisionalRefs(node, () => "r") as unknown as { value: unknown[] };
    expect(bound).toEqual(node);
    expect(bound).not.toBe(node);
    expect(bound.value[0]).not.toBe((node as unknown as { value: unknown[] }).value[0]);
  });

  it("names the coordinate of a value that is not JSON", () => {
    const node = { kind: "record", value: { fields: [{ kind: "u64", value: 1n }] } } as unknown as ParamNode;
    expect(() => bindProvisionalRefs(node, () => "r")).toThrow(/value at "\/value\/fields\/0\/value" is not JSON/);
  });

  it("refuses one binding placed twice, naming the second coordinate", () => {
    const a = inputStream.strings(empty());
    const node = [a, { x: a }] as unknown as ParamNode;
    const error = (() => {
      try {
        bindProvisionalRefs(node, () => "r");
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(ClientError);
    expect((error as ClientError).message).toContain('again at "/1/x"');
  });

  it("refuses nesting past the JSON depth limit, and takes it at the limit", () => {
    const nest = (levels: number): unknown => {
      let node: unknown = 0;
      for (let i = 0; i < levels; i++) node = [node];
      return node;
    };
    expect(() => bindProvisionalRefs(nest(LIMITS.maxJsonDepth) as ParamNode, () => "r")).not.toThrow();
    expect(() => bindProvisionalRefs(nest(LIMITS.maxJsonDepth + 1) as ParamNode, () => "r")).toThrow(/deeper than/);
  });
});

describe("isPlainStringNode, which lets an input item skip the copy", () => {
  it("holds for a plain string node only: anything that could carry a binding is copied and bound", () => {
    expect(isPlainStringNode({ kind: "string", value: "x" } as unknown as ParamNode)).toBe(true);
    expect(isPlainStringNode({ value: "", kind: "string" } as unknown as ParamNode)).toBe(true);
    class Node {
      readonly kind = "string";
      readonly value = "x";
    }
    for (const other of [
      { kind: "string", value: "x", other: inputStream.strings(empty()) },
      { kind: "string", value: inputStream.strings(empty()) },
      { kind: "u8", value: 1 },
      Object.assign(Object.create({ value: "inherited" }) as object, { kind: "string" }),
      new Node(),
      inputStream.strings(empty()),
      ["string", "x"],
      "x",
      null,
    ]) {
      expect(isPlainStringNode(other as unknown as ParamNode)).toBe(false);
    }
  });
});
