/**
 * An f64 or f32 −0 from an agent (a real server and CLI process) prints as `-0` in invoke's
 * default output, in a result line and as a bare stream's item, as `--output json` already
 * printed it: floats keep the sign of zero (docs/protocol/schema-value.md), and JSON.stringify
 * had written it `0`.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { run, startServeAgents, type ServerProcess } from "./support/processes.js";

let server: ServerProcess;
beforeAll(async () => {
  server = await startServeAgents("test/fixtures/agents/signed-zero.js");
});
afterAll(async () => {
  await server?.stop();
});

const invoke = (method: string, ...extra: string[]) =>
  run(["invoke", "signs", method, "-a", "signs", "-c", "{}", "--no-progress", ...extra], { env: server.env });

it("a result: -0 beside 0, in a record and a list", async () => {
  const result = await invoke("zero");
  expect(result.code).toBe(EXIT.success);
  expect(result.stdout.toString()).toBe('{"result":{"negative":-0,"positive":0,"list":[-0,0]}}\n');
  expect(Object.is((JSON.parse(result.stdout.toString()) as { result: { negative: number } }).result.negative, -0)).toBe(true);
});

it("a bare stream<f64>: one line per item, -0 among them", async () => {
  const result = await invoke("zeros");
  expect(result.code).toBe(EXIT.success);
  expect(result.stdout.toString()).toBe("-0\n0\n-1.5\n");
});

it("--output json as before: the native value keeps -0", async () => {
  const result = await invoke("zeros", "--output", "json");
  expect(result.code).toBe(EXIT.success);
  expect(result.stdout.toString()).toContain('"value":{"kind":"f64","value":-0}');
});
