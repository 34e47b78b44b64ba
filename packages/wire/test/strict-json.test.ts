/**
 * parseStrictJson: the section 2 rules JSON.parse does not enforce, the
 * limits, and agreement with JSON.parse on everything else.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type JsonValue, LIMITS, ProtocolError, parseStrictJson } from "../src/index.js";

function codeOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ProtocolError);
    return (error as ProtocolError).code;
  }
  return "accepted";
}

const bytes = (text: string) => new TextEncoder().encode(text);

describe("duplicate member names", () => {
  it.each([
    ["top level", '{"a":1,"a":2}'],
    ["same value", '{"a":1,"a":1}'],
    ["nested object", '{"x":{"b":true,"b":false}}'],
    ["inside an array", '[{"a":1},{"c":1,"c":2}]'],
    ["deep", `${"[".repeat(50)}{"k":0,"k":0}${"]".repeat(50)}`],
    ["spelled with an escape", '{"type":1,"t\\u0079pe":2}'],
    ["both spelled with escapes", '{"\\u00e9":1,"\\u00E9":2}'],
    ["escape against a raw non-ASCII name", '{"é":1,"\\u00e9":2}'],
    ["astral name escaped as a pair", '{"😀":1,"\\ud83d\\ude00":2}'],
    ["after many members (set mode)", `{${Array.from({ length: 40 }, (_, i) => `"m${i}":${i}`).join(",")},"m7":0}`],
    ["escaped after many members", `{${Array.from({ length: 20 }, (_, i) => `"m${i}":${i}`).join(",")},"m\\u0031":0}`],
  ])("rejects a duplicate %s", (_name, text) => {
    expect(codeOf(() => parseStrictJson(text))).toBe("invalid-message");
    expect(codeOf(() => parseStrictJson(bytes(text)))).toBe("invalid-message");
  });

  it.each([
    ["same name in sibling objects", '[{"a":1},{"a":1}]'],
    ["same name at different depths", '{"a":{"a":{"a":1}}}'],
    ["names of equal length", '{"ab":1,"ac":2,"ba":3}'],
    ["a name equal to a value", '{"a":"a","b":"a"}'],
    ["names differing only in case", '{"Type":1,"type":2}'],
    ["a quote inside a name", '{"a\\"b":1,"a":2,"b":3}'],
    ["17 distinct members", `{${Array.from({ length: 17 }, (_, i) => `"m${i}":${i}`).join(",")}}`],
  ])("accepts %s", (_name, text) => {
    expect(parseStrictJson(text)).toEqual(JSON.parse(text));
  });

  it("keeps __proto__ as an ordinary member, never as the prototype", () => {
    const value = parseStrictJson('{"__proto__":{"polluted":true},"constructor":1}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.keys(value)).toEqual(["__proto__", "constructor"]);
    expect(Object.getOwnPropertyDescriptor(value, "__proto__")?.value).toEqual({ polluted: true });
    expect(({} as Record<string, unknown>)["polluted"]).toBeUndefined();
    expect(codeOf(() => parseStrictJson('{"__proto__":1,"__proto__":2}'))).toBe("invalid-message");
  });

  it("leaves no state behind after a rejected document", () => {
    const big = `{${Array.from({ length: 30 }, (_, i) => `"n${i}":{"a":1}`).join(",")},"n3":0}`;
    expect(codeOf(() => parseStrictJson(big))).toBe("invalid-message");
    expect(parseStrictJson('{"n3":{"n3":1}}')).toEqual({ n3: { n3: 1 } });
  });
});

describe("surrogates", () => {
  it.each([
    ["lone high escape", '["\\ud800"]'],
    ["lone low escape", '["\\udc00"]'],
    ["high then non-low escape", '["\\ud800\\u0041"]'],
    ["high then a short escape", '["\\ud800\\n"]'],
    ["high then a raw character", '["\\ud800x"]'],
    ["low then high", '["\\udc00\\ud800"]'],
    ["lone surrogate in a member name", '{"\\udfff":1}'],
  ])("rejects a %s", (_name, text) => {
    expect(codeOf(() => parseStrictJson(text))).toBe("invalid-message");
  });

  it("accepts an escaped pair and an escaped backslash before u", () => {
    expect(parseStrictJson('["\\ud83d\\ude00"]')).toEqual(["😀"]);
    expect(parseStrictJson('["\\\\ud800"]')).toEqual(["\\ud800"]);
  });

  it("rejects a lone surrogate in a string input, which has no UTF-8 form", () => {
    expect(codeOf(() => parseStrictJson('["\ud800"]'))).toBe("invalid-message");
  });
});

describe("limits", () => {
  it("checks the size before decoding or parsing anything", () => {
    // Neither valid UTF-8 nor JSON: only a size check that comes first yields limit-exceeded.
    const garbage = new Uint8Array(1025).fill(0xff);
    expect(codeOf(() => parseStrictJson(garbage, { maxBytes: 1024 }))).toBe("limit-exceeded");
    expect(codeOf(() => parseStrictJson("\ud800".repeat(1025), { maxBytes: 1024 }))).toBe("limit-exceeded");
  });

  it("counts UTF-8 bytes, not UTF-16 units, for string input", () => {
    const text = `"${"€".repeat(341)}"`; // 2 + 1023 bytes, 343 units
    expect(parseStrictJson(text, { maxBytes: 1025 })).toBe("€".repeat(341));
    expect(codeOf(() => parseStrictJson(text, { maxBytes: 1024 }))).toBe("limit-exceeded");
  });

  it("accepts exactly the default text limit and rejects one byte more", () => {
    const fill = (size: number) => {
      const out = new Uint8Array(size).fill(0x61);
      out[0] = 0x22;
      out[size - 1] = 0x22;
      return out;
    };
    expect((parseStrictJson(fill(LIMITS.maxTextMessageBytes)) as string).length).toBe(LIMITS.maxTextMessageBytes - 2);
    expect(codeOf(() => parseStrictJson(fill(LIMITS.maxTextMessageBytes + 1)))).toBe("limit-exceeded");
  });

  it("accepts 128 levels of nesting and rejects 129", () => {
    const nest = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
    expect(() => parseStrictJson(nest(128))).not.toThrow();
    expect(codeOf(() => parseStrictJson(nest(129)))).toBe("limit-exceeded");
    expect(codeOf(() => parseStrictJson(`${'{"a":'.repeat(129)}1${"}".repeat(129)}`))).toBe("limit-exceeded");
    expect(codeOf(() => parseStrictJson(nest(5), { maxDepth: 4 }))).toBe("limit-exceeded");
  });

  it("does not count brackets inside strings as nesting", () => {
    expect(parseStrictJson(`["${"[".repeat(500)}"]`)).toEqual(["[".repeat(500)]);
  });
});

describe("numbers", () => {
  it.each(["1e999", "-1e999", `1${"0".repeat(400)}`, "[1,2,1e309]"])("rejects %s, beyond a double", (text) => {
    expect(codeOf(() => parseStrictJson(text))).toBe("invalid-message");
  });

  it.each([
    ["1e-999", 0],
    ["0.5e1", 5],
    [`0.${"0".repeat(400)}1`, 0],
    ["-0", -0],
    ["true", true],
  ] as const)("accepts %s", (text, value) => {
    expect(parseStrictJson(text)).toBe(value);
  });
});

describe("agreement with JSON.parse", () => {
  it("returns what JSON.parse returns for any JSON without duplicate names", () => {
    fc.assert(
      fc.property(fc.json({ depthSize: "small" }), (text) => {
        expect(parseStrictJson(text)).toEqual(JSON.parse(text));
        expect(parseStrictJson(bytes(text))).toEqual(JSON.parse(text));
      }),
      { numRuns: 300 },
    );
  });

  it("rejects any object once one of its names is repeated", () => {
    const names = fc.uniqueArray(fc.string({ unit: "binary", maxLength: 6 }), { minLength: 1, maxLength: 24 });
    fc.assert(
      fc.property(names, fc.nat(), fc.jsonValue({ maxDepth: 2 }), (unique, pick, value) => {
        const repeated = unique[pick % unique.length] as string;
        const members = [...unique, repeated].map((name) => `${JSON.stringify(name)}:${JSON.stringify(value)}`);
        expect(codeOf(() => parseStrictJson(`{"outer":{${members.join(",")}}}`))).toBe("invalid-message");
      }),
      { numRuns: 200 },
    );
  });
});

describe("input types", () => {
  it.each([undefined, null, 1, true, {}, [], new ArrayBuffer(2), new Uint16Array(2), Symbol("x"), 1n])(
    "rejects %s with invalid-message",
    (input) => {
      expect(codeOf(() => parseStrictJson(input as unknown as string))).toBe("invalid-message");
    },
  );

  it("reads a Uint8Array view at a non-zero offset", () => {
    const buffer = new TextEncoder().encode('xx{"a":[1]}yy');
    expect(parseStrictJson(buffer.subarray(2, 11))).toEqual({ a: [1] } as JsonValue);
  });
});
