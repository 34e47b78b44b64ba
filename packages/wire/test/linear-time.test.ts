/**
 * Decoding work grows linearly with input size, even for inputs shaped to
 * defeat a naive scanner (backslash runs, escapes far from their strings,
 * huge objects, repeated deep nesting).
 *
 * Work is counted, not timed, so the test cannot flake on a busy machine:
 * while a decode runs, the primitives the decoder is built from are wrapped
 * to count what they touch (characters read or searched, strings sliced,
 * set and map lookups, regular-expression input, bytes given to JSON.parse,
 * whose own work is linear). Each shape is decoded at size n and 8n; a
 * linear decoder does about 8x the work (a little more as numbers in names
 * grow a digit), a quadratic one about 64x. Loops of pure arithmetic are not
 * counted; the scanner's only such loop, over the names of a small object, is
 * bounded by a constant (16 members) before it switches to a Set.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ProtocolError, decodeClientMessage, parseStrictJson } from "../src/index.js";

const GROWTH = 8;
const BOUND = 10;

let work = 0;
const restorers: (() => void)[] = [];

function wrap<T extends object>(owner: T, name: keyof T & string, cost: (self: unknown, args: unknown[], result: unknown) => number): void {
  const original = owner[name] as unknown as (...args: unknown[]) => unknown;
  const counted = function (this: unknown, ...args: unknown[]): unknown {
    const result = original.apply(this, args);
    work += cost(this, args, result);
    return result;
  };
  Object.defineProperty(owner, name, { value: counted, configurable: true, writable: true });
  restorers.push(() => Object.defineProperty(owner, name, { value: original, configurable: true, writable: true }));
}

/** The work one call of `run` does, in counted units. */
function countWork(run: () => void): number {
  work = 0;
  wrap(String.prototype, "charCodeAt", () => 1);
  wrap(String.prototype, "indexOf", (self, args, result) => {
    const from = typeof args[1] === "number" ? args[1] : 0;
    return 1 + ((result as number) < 0 ? (self as string).length - from : (result as number) - from);
  });
  wrap(String.prototype, "slice", (_self, _args, result) => 1 + (result as string).length);
  wrap(JSON, "parse", (_self, args) => 1 + String(args[0]).length);
  wrap(Set.prototype, "has", () => 1);
  wrap(Set.prototype, "add", () => 1);
  wrap(Map.prototype, "get", () => 1);
  wrap(RegExp.prototype, "test", (_self, args) => 1 + String(args[0]).length);
  wrap(Object, "keys", (_self, _args, result) => 1 + (result as unknown[]).length);
  try {
    run();
  } finally {
    while (restorers.length > 0) restorers.pop()?.();
  }
  return work;
}

afterEach(() => {
  while (restorers.length > 0) restorers.pop()?.();
});

function growth(make: (n: number) => string, n: number, decode: (text: string) => unknown): number {
  const attempt = (text: string) => () => {
    try {
      decode(text);
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw error;
    }
  };
  const small = countWork(attempt(make(n)));
  const large = countWork(attempt(make(n * GROWTH)));
  expect(small).toBeGreaterThan(n); // the counters saw the decoder at work
  return large / small;
}

const item = (value: string) => `{"channel":1,"sequence":"0","type":"inputStreamItem","value":{"kind":"x","value":${value}},"version":1}`;

const SHAPES: readonly (readonly [string, (n: number) => string])[] = [
  ["many short strings, one backslash at the end", (n) => `[${'"ab",'.repeat(n)}"\\n"]`],
  ["a run of escaped backslashes and quotes", (n) => `["${'\\\\\\"'.repeat(n)}"]`],
  ["an object with many members", (n) => `{${Array.from({ length: n }, (_, i) => `"m${i}":0`).join(",")}}`],
  ["many escaped member names", (n) => `{${Array.from({ length: n }, (_, i) => `"\\u006d${i}":0`).join(",")}}`],
  [
    "many objects of 16 members sharing their names",
    (n) => `[${Array.from({ length: n / 16 }, () => `{${Array.from({ length: 16 }, (_, i) => `"k${i}":1`).join(",")}}`).join(",")}]`,
  ],
  [
    "nesting to the limit, repeatedly",
    (n) => `[${Array.from({ length: n / 100 }, () => `${"[".repeat(100)}${"]".repeat(100)}`).join(",")}]`,
  ],
  ["one long number", (n) => `[0.${"1".repeat(n)}]`],
  ["many surrogate pair escapes", (n) => `["${"\\ud83d\\ude00".repeat(n)}"]`],
  ["an unterminated string full of escaped quotes", (n) => `["${'\\"'.repeat(n)}`],
  ["a duplicate name after many members", (n) => `{${Array.from({ length: n }, (_, i) => `"m${i}":0`).join(",")},"m0":1}`],
];

describe("decoding work is linear in the input", () => {
  it.each(SHAPES)("parseStrictJson: %s", (_name, make) => {
    expect(growth(make, 4000, (text) => parseStrictJson(text))).toBeLessThan(BOUND);
  });

  it.each(SHAPES)("decodeClientMessage, as a SchemaValue: %s", (_name, make) => {
    expect(
      growth(
        (n) => item(make(n)),
        4000,
        (text) => decodeClientMessage(text, false),
      ),
    ).toBeLessThan(BOUND);
  });

  it("a configuration value with many containers", () => {
    const config = (n: number) =>
      `{"attemptId":"ca7e5a82-2064-4c18-8359-806145c1562f","config":[{"path":["a"],"value":[${Array.from({ length: n }, (_, i) => `{"k${i}":[{"x":1}]}`).join(",")}]}],"idempotencyKey":"k","methodParameters":{"kind":"record","value":{}},"selector":{"agentType":"a","application":"b","constructorParameters":{"kind":"record","value":{}},"environment":"c","method":"d"},"type":"invocationStart","version":1}`;
    expect(growth(config, 4000, (text) => decodeClientMessage(text, false))).toBeLessThan(BOUND);
  });
});

describe("the work counter", () => {
  it("would see a quadratic scan", () => {
    // A deliberately quadratic search, to show the bound catches one.
    const quadratic = (text: string) => {
      for (let i = 0; i < text.length; i += 1) text.indexOf("\u0000", i);
    };
    expect(growth((n) => "a".repeat(n), 4000, quadratic)).toBeGreaterThan(BOUND * 4);
  });
});
