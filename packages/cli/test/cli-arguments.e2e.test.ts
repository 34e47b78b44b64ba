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
