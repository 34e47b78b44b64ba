/**
 * What the strict parser notes of numbers whose text is not an integer
 * although their double is (`0.99999999999999999`, `1e-400`), for the
 * SchemaValue decoder: the test of each number against an exact reference in
 * bigint, and the place of each note in the parsed value, on generated
 * documents.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type JsonValue, parseStrictJson } from "../src/index.js";
import { isRoundedInteger } from "../src/internal.js";
import { denotesInteger, roundsToInteger } from "../src/rounded-integers.js";

/** Numbers that are not integers, whose doubles are. */
const ROUNDED = [
  "0.99999999999999999",
  "1e-400",
  "-1E-400",
  "4294967294.9999999",
  "254.99999999999999",
  "1.00000000000000001",
  "-0.99999999999999999",
  "12345678901234567.5",
  "9.9999999999999999e2",
  `0.${"0".repeat(400)}1`,
];

/** Whether the decimal value of a JSON number is an integer, in bigint: digits x 10^(exponent - fraction digits). */
function exactlyInteger(text: string): boolean {
  const match = /^-?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (match === null) throw new Error(`not a number: ${text}`);
  const [, integerPart, fraction = "", exponentText = "0"] = match;
  const digits = BigInt(`${integerPart}${fraction}`);
  const shift = Number(exponentText) - fraction.length;
  return digits === 0n || shift >= 0 || digits % 10n ** BigInt(-shift) === 0n;
}

/** `roundsToInteger` called as the scan calls it: with the point's position and whether there is an exponent. */
function scanned(text: string): boolean {
  return roundsToInteger(text, 0, text.indexOf("."), text.length, /[eE]/.test(text));
}

const digitRun = (min: number, max: number) =>
  fc.oneof(
    fc.stringMatching(new RegExp(`^[0-9]{${min},${max}}$`)),
    // Runs of zeros or nines, which decide whether a double lands on an integer.
    fc
      .tuple(fc.constantFrom("0", "9"), fc.integer({ min: Math.max(min, 1), max: max + 10 }), fc.stringMatching(/^[0-9]{0,4}$/))
      .map(([digit, count, tail]) => digit.repeat(count) + tail),
  );
const lexeme = fc
  .tuple(
    fc.constantFrom("", "-"),
    fc.oneof(
      fc.constant("0"),
      fc.tuple(fc.stringMatching(/^[1-9]$/), digitRun(0, 19)).map(([a, b]) => a + b),
    ),
    fc.option(digitRun(1, 30), { nil: undefined }),
    fc.option(fc.tuple(fc.constantFrom("e", "E"), fc.constantFrom("", "+", "-"), fc.integer({ min: 0, max: 420 })), { nil: undefined }),
  )
  .map(([sign, integer, fraction, exponent]) => {
    const text = `${sign}${integer}${fraction === undefined ? "" : `.${fraction}`}`;
    return exponent === undefined ? text : `${text}${exponent[0]}${exponent[1]}${exponent[2]}`;
  });

describe("roundsToInteger", () => {
  it.each(ROUNDED)("%s is not an integer, but its double is", (text) => {
    expect(exactlyInteger(text)).toBe(false);
    expect(Number.isInteger(Number(text))).toBe(true);
    expect(scanned(text)).toBe(true);
  });

  it.each(["1.0", "1e2", "1.5e1", "-0.0", "0.5", "0.3333333333333333", "1e-7", "255.00000000000000000", "1E+400"])(
    "%s is not one",
    (text) => {
      expect(scanned(text)).toBe(false);
    },
  );

  it("agrees with an exact reference on any number", () => {
    fc.assert(
      fc.property(lexeme, (text) => {
        expect(denotesInteger(text, 0, text.length)).toBe(exactlyInteger(text));
        expect(scanned(text)).toBe(!exactlyInteger(text) && Number.isInteger(Number(text)));
      }),
      { numRuns: 5000 },
    );
  });
});

/** A place in a generated document where a rounded number is written. */
class Rounded {
  constructor(readonly text: string) {}
}
type Tree = Rounded | number | string | boolean | null | Tree[] | { [name: string]: Tree };

/** Writes a tree as JSON text, each rounded number as its text. */
function write(tree: Tree): string {
  if (tree instanceof Rounded) return tree.text;
  if (Array.isArray(tree)) return `[${tree.map(write).join(", ")}]`;
  if (typeof tree === "object" && tree !== null) {
    return `{${Object.entries(tree)
      .map(([name, value]) => `${JSON.stringify(name)}:${write(value)}`)
      .join(",")}}`;
  }
  return JSON.stringify(tree);
}

/** Every number in `parsed` is noted exactly when the tree wrote a rounded one there. */
function checkNotes(tree: Tree, parsed: JsonValue): void {
  if (Array.isArray(tree)) {
    tree.forEach((child, i) => checkChild(child, parsed as JsonValue[], i));
  } else if (typeof tree === "object" && tree !== null && !(tree instanceof Rounded)) {
    for (const [name, child] of Object.entries(tree)) checkChild(child, parsed as { [name: string]: JsonValue }, name);
  }
}

function checkChild(child: Tree, holder: JsonValue[] | { [name: string]: JsonValue }, key: string | number): void {
  const value = (holder as Record<string | number, JsonValue>)[key] as JsonValue;
  if (child instanceof Rounded) expect(isRoundedInteger(holder, key, value as number)).toBe(true);
  else if (typeof value === "number") expect(isRoundedInteger(holder, key, value)).toBe(false);
  else checkNotes(child, value);
}

describe("parseStrictJson", () => {
  it("notes each such number in the array or object that holds it", () => {
    const text =
      '{"a":[1, 0.99999999999999999, {"n\\u0061me": 1e-400, "__proto__": 254.99999999999999, "1": 2.0, "0": 3}], "b": 1.00000000000000001, "c": 0.5}';
    const parsed = parseStrictJson(text) as { a: [number, number, Record<string, number>]; b: number; c: number };
    const inner = parsed.a[2];
    expect(isRoundedInteger(parsed.a, 0, 1)).toBe(false);
    expect(isRoundedInteger(parsed.a, 1, 1)).toBe(true);
    expect(isRoundedInteger(inner, "name", 0)).toBe(true);
    expect(isRoundedInteger(inner, "__proto__", 255)).toBe(true);
    expect(isRoundedInteger(inner, "1", 2)).toBe(false);
    expect(isRoundedInteger(inner, "0", 3)).toBe(false);
    expect(isRoundedInteger(parsed, "b", 1)).toBe(true);
    expect(isRoundedInteger(parsed, "c", 0.5)).toBe(false);
    // Only the number as parsed: another value put in its place is not taken for it.
    expect(isRoundedInteger(parsed, "b", 2)).toBe(false);
    // A document parsed by JSON.parse carries no note.
    expect(isRoundedInteger(JSON.parse(text) as object, "b", 1)).toBe(false);
  });

  it("notes exactly the rounded numbers of any document", () => {
    const leaf = fc.oneof(
      fc.constantFrom(...ROUNDED).map((text) => new Rounded(text)),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.integer(),
      fc.string(),
      fc.boolean(),
      fc.constant(null),
    );
    const { tree } = fc.letrec<{ tree: Tree }>((tie) => ({
      tree: fc.oneof(
        { depthSize: "small", withCrossShrink: true },
        leaf,
        fc.array(tie("tree"), { maxLength: 5 }),
        fc.dictionary(fc.oneof(fc.string(), fc.constantFrom("__proto__", "0", "1", 'a"\\', "\u00e9")), tie("tree"), { maxKeys: 5 }),
      ),
    }));
    fc.assert(
      fc.property(fc.oneof(fc.array(tree), fc.dictionary(fc.string(), tree)), (document) => {
        checkNotes(document, parseStrictJson(write(document)));
      }),
      { numRuns: 500 },
    );
  });
});
