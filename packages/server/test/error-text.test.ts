/**
 * The text and the stack a log line gives an agent's error (error-text.ts):
 * an agent may throw anything, and writing the line must never throw.
 */
import { expect, it } from "vitest";
import { errorLogFields, errorStack } from "../src/error-text.js";

it("the stack of the error, then each cause's, or its text where it has none", () => {
  const root = new RangeError("too far");
  const error = new Error("outer", { cause: new Error("middle", { cause: root }) });
  const stack = errorStack(error)!;
  expect(stack.startsWith(`${error.stack}\ncaused by ${(error.cause as Error).stack}\ncaused by ${root.stack}`)).toBe(true);
  expect(stack).toContain("error-text.test.ts");
  expect(errorStack(new Error("outer", { cause: "a string" }))).toMatch(/^Error: outer\n {4}at [^]*\ncaused by a string$/);
});

it("no stack at all for a value that has none", () => {
  expect(errorStack("a string")).toBeUndefined();
  expect(errorStack(42)).toBeUndefined();
  expect(errorStack(undefined)).toBeUndefined();
  expect(errorStack(Object.create(null))).toBeUndefined();
  expect(errorLogFields("a string")).toEqual({ error: "a string" });
});

it("never throws, whatever the agent threw or its causes are", () => {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  const throwingStack = Object.defineProperty(new Error("no stack"), "stack", {
    get() {
      throw new Error("a getter that throws");
    },
  });
  const throwingCause = Object.defineProperty(new Error("outer"), "cause", {
    get() {
      throw new Error("a getter that throws");
    },
  });
  expect(errorStack(proxy)).toBeUndefined();
  expect(errorStack(throwingStack)).toBeUndefined();
  expect(errorStack(new Error("outer", { cause: proxy }))).toMatch(/^Error: outer\n[^]*\ncaused by /);
  expect(errorStack(new Error("outer", { cause: Object.create(null) }))).toMatch(/\ncaused by \[object Object\]$/);
  expect(errorStack(throwingCause)).toBe(throwingCause.stack);
  expect(errorLogFields(throwingStack)).toEqual({ error: "Error: no stack" });
});

it("at most three causes, as the error's text names", () => {
  let error = new Error("0");
  for (let i = 1; i <= 6; i++) error = new Error(String(i), { cause: error });
  expect(errorStack(error)!.match(/^(caused by )?Error: \d$/gm)).toEqual([
    "Error: 6",
    "caused by Error: 5",
    "caused by Error: 4",
    "caused by Error: 3",
  ]);
});
