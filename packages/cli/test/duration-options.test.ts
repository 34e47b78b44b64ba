/**
 * Every option that takes a duration: a value it refuses gets a message whose examples the
 * option takes, so no one is told `7d` and then refused it; the message states the bound.
 */
import { PassThrough } from "node:stream";
import type { Command, Option } from "commander";
import { expect, it } from "vitest";
import { buildProgram } from "../src/program.js";

function durationOptions(): { readonly name: string; readonly option: Option }[] {
  const stream = () => new PassThrough();
  const program = buildProgram(
    { stdin: stream(), stdout: stream(), stderr: stream(), env: {}, signal: new AbortController().signal },
    () => {},
  );
  const found: { name: string; option: Option }[] = [];
  const visit = (command: Command, path: string) => {
    for (const option of command.options) {
      if (option.flags.includes("<duration>") && option.parseArg !== undefined) found.push({ name: `${path} ${option.long}`, option });
    }
    for (const sub of command.commands) visit(sub, `${path} ${sub.name()}`.trim());
  };
  visit(program, "");
  return found;
}

/** The option's message for `value`, which it must refuse. */
function refusal(option: Option, value: string): string {
  try {
    option.parseArg!(value, undefined);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error(`${option.long} took ${value}`);
}

it("finds the duration options", () => {
  const names = durationOptions().map((found) => found.name);
  expect(names).toEqual(expect.arrayContaining(["invoke --timeout", "resume --timeout", "codegen --timeout", "serve --retention"]));
});

it.each(durationOptions())("$name: the examples of its message for a refused value are values it takes", ({ option }) => {
  for (const value of ["5", "1.5h", "-1s"]) {
    const message = refusal(option, value);
    const examples = /: ((?:[0-9]+(?:ms|s|m|h|d)(?:, )?)+)$/.exec(message)?.[1]?.split(", ");
    expect(examples, message).toBeDefined();
    for (const example of examples!) expect(() => option.parseArg!(example, undefined), `${message}: ${example}`).not.toThrow();
  }
});

it("--timeout states its bound in the message and in help", () => {
  for (const { name, option } of durationOptions().filter((found) => found.option.long === "--timeout")) {
    expect(refusal(option, "7d"), name).toBe("a duration is a whole number and a unit (ms, s, m, h or d), at most 1h: 500ms, 30s, 5m");
    expect(refusal(option, "5"), name).toBe("a duration is a whole number and a unit (ms, s, m, h or d), at most 1h: 500ms, 30s, 5m");
    expect(option.description, name).toMatch(/; up to 1h$/);
  }
});

it.each(durationOptions())("$name: takes every zero duration if it takes 0", ({ option }) => {
  let zero: unknown;
  try {
    zero = option.parseArg!("0", undefined);
  } catch {
    // No zero for this option: no spelling of it either.
    for (const value of ["0ms", "0s", "0m", "0h", "0d"]) expect(refusal(option, value)).not.toBe("");
    return;
  }
  expect(zero).toBe(0);
  for (const value of ["0ms", "0s", "0m", "0h", "0d"]) expect(option.parseArg!(value, undefined), value).toBe(0);
});
