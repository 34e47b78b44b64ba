/**
 * canonicalJson (protocol section 2): no insignificant whitespace, JSON's
 * minimal escapes, members in Unicode code-point order.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type JsonValue, ProtocolError, canonicalJson, compareCodePoints, parseStrictJson } from "../src/index.js";

function codeOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ProtocolError);
    return (error as ProtocolError).code;
  }
  return "accepted";
}

describe("member order", () => {
  it("sorts by code point: astral characters after U+E000..U+FFFF", () => {
    // UTF-16 code units would order U+1F600 (D83D DE00) before U+E000 and U+FFFF.
    const value = { "\u{1F600}": 6, "\uFFFF": 5, "\uE000": 4, é: 3, a: 2, Z: 1, "": 0 };
    expect(canonicalJson(value)).toBe('{"":0,"Z":1,"a":2,"é":3,"\uE000":4,"\uFFFF":5,"\u{1F600}":6}');
  });

  it("orders a prefix before its extensions and compares astral characters among themselves", () => {
    expect(canonicalJson({ ab: 1, a: 2, "\u{10000}": 3, "\u{1F600}": 4, "\u{10FFFF}": 5 })).toBe(
      '{"a":2,"ab":1,"\u{10000}":3,"\u{1F600}":4,"\u{10FFFF}":5}',
    );
  });

  it("sorts nested objects and keeps array order", () => {
    expect(canonicalJson({ b: [{ y: 1, x: 2 }, 3], a: { d: null, c: true } })).toBe('{"a":{"c":true,"d":null},"b":[{"x":2,"y":1},3]}');
  });

  it("agrees with a sort over code point arrays for any names", () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: "binary" }), { maxLength: 12 }), (names) => {
        const byCodePoints = [...names].sort((a, b) => {
          const x = Array.from(a, (c) => c.codePointAt(0) as number);
          const y = Array.from(b, (c) => c.codePointAt(0) as number);
          for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return (x[i] as number) - (y[i] as number);
          return x.length - y.length;
        });
        expect([...names].sort(compareCodePoints)).toEqual(byCodePoints);
      }),
    );
  });
});

describe("escaping", () => {
  it.each([
    ['"', '"\\""'],
    ["\\", '"\\\\"'],
    ["/", '"/"'],
    ["\b\f\n\r\t", '"\\b\\f\\n\\r\\t"'],
    ["\u0000\u0001\u001f", '"\\u0000\\u0001\\u001f"'],
    ["\u007f", '"\u007f"'],
    ["\u2028\u2029", '"\u2028\u2029"'],
    ["é😀", '"é😀"'],
  ])("writes %j as %s", (text, expected) => {
    expect(canonicalJson(text)).toBe(expected);
    expect(parseStrictJson(expected)).toBe(text);
  });

  it("quotes every well-formed string exactly as JSON.stringify does, inside objects and as names too", () => {
    // Strings with nothing to escape are quoted by concatenation: the two paths must agree.
    const text = fc.oneof(
      fc.string({ unit: "grapheme" }),
      fc.string({ unit: fc.constantFrom("a", '"', "\\", "\u0000", "\u001f", "\u0020", "\u007f", "\u2028", "é", "😀") }),
    );
    fc.assert(
      fc.property(text, text, (a, b) => {
        expect(canonicalJson(a)).toBe(JSON.stringify(a));
        expect(canonicalJson({ [a]: b })).toBe(`{${JSON.stringify(a)}:${JSON.stringify(b)}}`);
      }),
      { numRuns: 2000 },
    );
  });
});

describe("shape", () => {
  it("writes no whitespace and omits undefined members", () => {
    const value = { a: [1, 2], b: undefined, c: { d: "x y" } } as unknown as JsonValue;
    expect(canonicalJson(value)).toBe('{"a":[1,2],"c":{"d":"x y"}}');
  });

  it("writes numbers in their shortest round-trip form", () => {
    expect(canonicalJson([1, 1.5, -2, 0.1, 1e21, 5e-7, -0])).toBe("[1,1.5,-2,0.1,1e+21,5e-7,-0]");
  });

  it("is a fixed point of parse then encode for any JSON", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = canonicalJson(value as JsonValue);
        expect(canonicalJson(parseStrictJson(text))).toBe(text);
      }),
    );
  });
});

describe("values JSON cannot carry", () => {
  const cyclic: Record<string, unknown> = {};
  cyclic["self"] = cyclic;
  let deep: unknown = 0;
  for (let i = 0; i < 200; i++) deep = [deep];

  it.each([
    ["NaN", Number.NaN, "invalid-message"],
    ["Infinity", [Number.POSITIVE_INFINITY], "invalid-message"],
    ["a lone surrogate", { a: "\ud800" }, "invalid-message"],
    ["a lone surrogate in a name", { "\udc00": 1 }, "invalid-message"],
    ["a bigint", { n: 1n }, "invalid-message"],
    ["a function", [() => 1], "invalid-message"],
    ["a symbol", Symbol("s"), "invalid-message"],
    ["undefined", undefined, "invalid-message"],
    ["an undefined array element", [undefined], "invalid-message"],
    ["a Date", new Date(0), "invalid-message"],
    ["a Map", new Map(), "invalid-message"],
    ["a Uint8Array", new Uint8Array(1), "invalid-message"],
    ["a cycle", cyclic, "invalid-message"],
    ["200 levels of nesting", deep, "limit-exceeded"],
  ])("rejects %s", (_name, value, code) => {
    expect(codeOf(() => canonicalJson(value as JsonValue))).toBe(code);
  });

  it("accepts an object without prototype", () => {
    const bare = Object.create(null) as Record<string, JsonValue>;
    bare["b"] = 1;
    bare["a"] = 2;
    expect(canonicalJson(bare)).toBe('{"a":2,"b":1}');
  });
});
