/**
 * What a person reads and types for the parameters of their own agents
 * (test/fixtures/agents/shapes.js, served by a real `serve --agents`): `types` shows the members
 * an argument spells, and `invoke` takes the arguments as they are written at a shell.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { run, startServeAgents, type ServerProcess } from "./support/processes.js";

let server: ServerProcess;
beforeAll(async () => {
  server = await startServeAgents("test/fixtures/agents/shapes.js");
});
afterAll(async () => {
  await server?.stop();
});

const invoke = (method: string, ...args: string[]) =>
  run(["invoke", "shapes", method, "-a", "shapes", "-c", "{}", "--no-progress", ...args], { env: server.env });

describe("types", () => {
  it("shows a variant's cases with their payloads, a tuple's elements in order and an enum's cases and flags, a result's branches, as a record's fields", async () => {
    const result = await run(["types", "-a", "shapes"], { env: server.env });
    expect(result.code).toBe(EXIT.success);
    const text = result.stdout.toString();
    expect(text).toContain("    area(shape: variant{circle: f64, square: tuple<f64, f64>, point}) -> f64\n");
    expect(text).toContain("    pair(at: tuple<s32, string>) -> tuple<s32, string>\n");
    expect(text).toContain("    colour(c: enum{red, green}) -> enum{red, green}\n");
    expect(text).toContain("    shift(by: f64, big: s64) -> record{by: f64, big: s64}\n");
    expect(text).toContain("    lookup(keys: flags{a, b}) -> result{ok: map<string, u32>, err: string}\n");
  });
});

describe("invoke's arguments", () => {
  it("a negative number in any spelling, and -Infinity, is an argument, not an option; a float takes NaN and Infinity bare, and .5 and -.5", async () => {
    const infinite = await invoke("shift", "-Infinity", "-3");
    expect(infinite.stderr).toBe("");
    expect(infinite.stdout.toString()).toBe('{"result":{"by":"-Infinity","big":"-3"}}\n');
    // Commander's own negative numbers (`-3`) before and after it, options after it, `--` after it.
    const exponent = await invoke("shift", "-1E3", "-2", "--output", "lines");
    expect(exponent.stdout.toString()).toBe('{"result":{"by":-1000,"big":"-2"}}\n');
    const ended = await invoke("shift", "NaN", "--", "-4");
    expect(ended.stdout.toString()).toBe('{"result":{"by":"NaN","big":"-4"}}\n');
    // A float also takes the decimals JSON has no spelling for, as typed at a shell.
    const fraction = await invoke("shift", "-.5", "1");
    expect(fraction.stderr).toBe("");
    expect(fraction.stdout.toString()).toBe('{"result":{"by":-0.5,"big":"1"}}\n');
    expect((await invoke("shift", "2.", "1")).stdout.toString()).toBe('{"result":{"by":2,"big":"1"}}\n');
    // Not an integer's: there a fraction is refused, whatever its spelling.
    expect((await invoke("shift", "0", ".5")).code).toBe(EXIT.usage);
  });

  it("an option no command has is refused after such a value too, and a text that starts with - goes after --", async () => {
    const refused = await invoke("shift", "-Infinity", "--nope", "1");
    expect(refused.code).toBe(EXIT.usage);
    expect(refused.stderr).toBe("golem-stream: unknown option '--nope' (see --help)\n");
    expect((await invoke("forget", "-k")).stderr).toBe("golem-stream: unknown option '-k' (see --help)\n");
    expect((await invoke("forget", "--", "-k")).code).toBe(EXIT.success);
  });

  it("a 64-bit integer keeps every digit typed, and a wrong value is explained in the schema's words, not JavaScript's", async () => {
    const least = await invoke("shift", "0", "-9223372036854775808");
    expect(least.stdout.toString()).toBe('{"result":{"by":0,"big":"-9223372036854775808"}}\n');
    const fraction = await invoke("shift", "0", "1.5");
    expect(fraction.code).toBe(EXIT.usage);
    expect(fraction.stderr).toBe(
      "golem-stream: argument 2 (big): expected an s64, a whole number: a JSON number up to 2^53 - 1 in size, " +
        'or any as a decimal string ("-9223372036854775808")\n',
    );
    const flags = await invoke("lookup", '"a"');
    expect(flags.code).toBe(EXIT.usage);
    expect(flags.stderr).toBe("golem-stream: argument 1 (keys): expected an array of flag names\n");
  });

  it("an unknown case of a variant is refused with the cases there are, as an unknown field is with the fields", async () => {
    const refused = await invoke("area", '{"case":"triangle","value":1}');
    expect(refused.code).toBe(EXIT.usage);
    expect(refused.stderr).toBe('golem-stream: argument 1 (shape): unknown case "triangle" (cases: circle, square, point)\n');
    const square = await invoke("area", '{"case":"square","value":[2,-3]}');
    expect(square.stdout.toString()).toBe('{"result":-6}\n');
  });
});

describe("a value that is not JSON", () => {
  it("is told the type it is for, as types prints it, and an example the type takes", async () => {
    const refused = async (method: string, ...args: string[]) => {
      const result = await invoke(method, ...args);
      expect(result.code).toBe(EXIT.usage);
      return result.stderr;
    };
    expect(await refused("find", "null", "abc")).toBe("golem-stream: argument 2 (limit) is not valid JSON: expected a u32, e.g. 3\n");
    expect(await refused("find", "null", "")).toBe("golem-stream: argument 2 (limit) is empty: expected a u32, e.g. 3\n");
    expect(await refused("pair", "x")).toBe(
      `golem-stream: argument 1 (at) is not valid JSON: expected a tuple<s32, string>, e.g. '[3,"x"]'\n`,
    );
    expect(await refused("area", "circle")).toBe(
      `golem-stream: argument 1 (shape) is not valid JSON: expected a variant{circle: f64, square: tuple<f64, f64>, point}, e.g. '{"case":"circle","value":1.5}'\n`,
    );
  });

  it("for an option<string>, whose JSON is a string but which takes null too, says to quote it, and quoted as it says it is taken", async () => {
    const bare = await invoke("find", "p/", "1");
    expect(bare.code).toBe(EXIT.usage);
    expect(bare.stderr).toBe(
      `golem-stream: argument 1 (prefix) is not valid JSON: expected an option<string>; give a JSON string: '"p/"'\n`,
    );
    const quoted = await invoke("find", '"p/"', "1");
    expect(quoted.stderr).toBe("");
    expect(quoted.stdout.toString()).toBe('{"result":"p/"}\n');
  });
});

describe("a method without a result", () => {
  it("prints nothing on stdout, in lines too; --output json has its result event of kind none", async () => {
    for (const output of ["auto", "lines"]) {
      const result = await invoke("forget", "key", "--output", output);
      expect(result.code).toBe(EXIT.success);
      expect(result.stdout.toString()).toBe("");
      expect(result.stderr).toBe("");
    }
    const json = await invoke("forget", "key", "--output", "json");
    expect(json.code).toBe(EXIT.success);
    const events = json.stdout
      .toString()
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { event: string; kind?: string });
    expect(events.map((event) => event.event)).toEqual(["accepted", "result", "finished"]);
    expect(events[1]).toEqual({ event: "result", kind: "none" });
  });
});

describe("- for a parameter that is not a stream", () => {
  it("is refused naming the parameter's type with its article: an f64, a tuple", async () => {
    const float = await invoke("shift", "-", "1");
    expect(float.code).toBe(EXIT.usage);
    expect(float.stderr).toBe("golem-stream: argument 1 (by) is an f64, not a stream; - binds stdin to stream parameters only\n");
    const tuple = await invoke("pair", "-");
    expect(tuple.stderr).toBe("golem-stream: argument 1 (at) is a tuple, not a stream; - binds stdin to stream parameters only\n");
  });
});
