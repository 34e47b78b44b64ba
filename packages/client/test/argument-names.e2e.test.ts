/**
 * Arguments that do not fit the schema are refused in the caller's words: the constructor's and
 * the method's parameter names, record fields, list indexes, and what was passed, never the
 * native value's structure (`value.fields[0]`), which the caller never wrote.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { echoContract } from "@golem-stream/contract/demo";
import type { Client } from "../src/index.js";
import { startServerWithClient, type TestServer } from "./support/embedded.js";

let server: TestServer;
let client: Client;
beforeAll(async () => ({ server, client } = await startServerWithClient()));
afterAll(async () => server.dispose());

const where = { application: "demo", environment: "default" };

/** What `run` threw (synchronously or as a rejection). */
async function refusal(run: () => unknown): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  throw new Error("expected a refusal");
}

describe("arguments are refused by the names the caller wrote", () => {
  it("constructor parameters: constructor.<field>, and what was passed", async () => {
    const error = await refusal(() => client.connect(echoContract, { ...where, constructor: { name: 3 as never } }));
    expect(error).toMatchObject({
      kind: "invalid-argument",
      code: "validation-error",
      message: "constructor.name: expected a string, got 3",
    });
    expect(await refusal(() => client.agent({ ...where, agentType: "echo", constructorArgs: { nam: "x" } }))).toMatchObject({
      kind: "invalid-argument",
      code: "validation-error",
      message: 'constructor: unknown parameter "nam" (the parameters are name)',
    });
  });

  it("method parameters: <method>.<parameter>, an unknown parameter with the ones there are, a bound broken", async () => {
    const echo = await client.connect(echoContract, { ...where, constructor: { name: "names" } });
    expect(await refusal(() => echo.count({ n: 1, delayMs: 0 } as never))).toMatchObject({
      kind: "invalid-argument",
      code: "validation-error",
      message: 'count: unknown parameter "n" (the parameters are to, delayMs)',
    });
    expect(await refusal(() => echo.count({ to: "4" as never, delayMs: 0 }))).toMatchObject({
      kind: "invalid-argument",
      code: "validation-error",
      message: 'count.to: expected a number, got "4"',
    });
    expect(await refusal(() => echo.count({ to: 4 } as never))).toMatchObject({
      message: "count.delayMs: missing (expected a u32 value)",
    });
    // Found by the decoder after the walk (the schema's max): the same place.
    const bound = await refusal(() => echo.blobs({ count: 70_000, size: 1 }));
    expect(bound).toMatchObject({ kind: "invalid-argument", code: "validation-error" });
    expect((bound as Error).message).toMatch(/^blobs\.count: /);
    // The untyped agent says it the same way.
    const agent = await client.agent({ ...where, agentType: "echo", constructorArgs: { name: "names" } });
    expect(await refusal(() => agent.invoke("count", [4, 0]))).toMatchObject({
      message: "count: expected an object keyed by parameter name, got an array",
    });
  });
});
