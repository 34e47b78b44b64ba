/**
 * The limit on a stdin line bound to a `stream<string>` is what the protocol lets the item be:
 * its JSON string must fit in one 8 MiB `inputStreamItem` message, 8 388 478 bytes as a JSON
 * string (a quote takes 2). A line within it is sent (the demo's `tally` counts its bytes); one
 * past it fails with a message that says so, instead of passing the CLI's check and failing
 * later as "not a valid SchemaValue". With --input json such a line is a JSON string instead, which
 * may hold a newline. A line for any other element type is one JSON value: one that is not (a
 * blank line) fails the invocation, and the message says so once.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { itemsOf, lines, run, scratchDir, startServeAgents, startServer } from "./support/processes.js";
import type { ServerProcess } from "./support/processes.js";

/** 8 MiB less what an `inputStreamItem` of an empty string takes at the largest channel and sequence. */
const MAX_JSON_STRING_BYTES = 8 * 1024 * 1024 - 130;
let server: ServerProcess;

beforeAll(async () => {
  server = await startServer(join(scratchDir(), "data"));
});
afterAll(async () => {
  await server?.stop();
});

function tally(stdin: string): ReturnType<typeof run> {
  return run(["invoke", "echo", "tally", "-c", '{"name":"lines"}', "-"], { env: server.env, stdin });
}

describe("a stdin line for a stream<string>", () => {
  it.each([
    ["plain text", "a".repeat(MAX_JSON_STRING_BYTES), MAX_JSON_STRING_BYTES],
    // Each quote is 2 bytes as a JSON string; the CR before the LF is not part of the line.
    ["quotes, ended by CRLF", `${'"'.repeat(MAX_JSON_STRING_BYTES / 2)}\r`, MAX_JSON_STRING_BYTES / 2],
  ])("is sent when its JSON string takes exactly what a message leaves: %s", async (_, line, bytes) => {
    const result = await tally(`${line}\n`);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(EXIT.success);
    expect(lines(result.stdout).map((l) => JSON.parse(l) as unknown)).toEqual([{ result: { items: "1", bytes: String(bytes) } }]);
  });

  it.each([
    ["plain text", "a".repeat(MAX_JSON_STRING_BYTES + 1)],
    ["quotes", '"'.repeat(MAX_JSON_STRING_BYTES / 2 + 1)],
  ])("one byte longer as a JSON string fails, saying what the limit is: %s", async (_, line) => {
    const result = await tally(`first\n${line}\nlast\n`);
    expect(result.code).toBe(EXIT.invocationFailed);
    expect(result.stderr).toContain(
      "golem-stream: reading stdin failed, the input stream was cancelled: stdin line 2 is too long: a stream<string> item " +
        `must fit in one protocol message of 8388608 bytes, which leaves ${MAX_JSON_STRING_BYTES} bytes for the line as a ` +
        "JSON string (there a quote or a backslash takes 2 bytes, a control character 2 or 6)\n",
    );
    expect(result.stdout.length).toBe(0);
  });
});

describe("--input json: each line of a stream<string> is a JSON string", () => {
  const reverse = (stdin: string, ...extra: string[]) =>
    run(["invoke", "echo", "reverse", "-c", '{"name":"me"}', "--output", "lines", ...extra, "-"], { env: server.env, stdin });

  it("so an item can hold a newline, as --output lines prints one", async () => {
    const result = await reverse('"one\\ntwo"\n"three"\n', "--input", "json");
    expect(result.stderr).toBe("");
    expect(result.code).toBe(EXIT.success);
    expect(itemsOf(result.stdout, "$")).toEqual(["owt\neno", "eerht"]);
    // Without it the line is the item, quotes and backslash included (reversed as they are).
    expect(itemsOf((await reverse('"one\\ntwo"\n')).stdout, "$")).toEqual(['"owtn\\eno"']);
  });

  it("a line that is no JSON string fails the input, saying what it should be", async () => {
    const result = await reverse('"one"\ntwo\n', "--input", "json");
    expect(result.code).toBe(EXIT.invocationFailed);
    expect(result.stderr).toContain(
      'stdin line 2 is not a JSON string: with --input json, each line of a stream<string> is one, e.g. "two"',
    );
  });
});

describe("a stdin line for a stream<f64> (the tutorial's tally, test/fixtures/agents/tally.js)", () => {
  let agents: ServerProcess;
  beforeAll(async () => {
    agents = await startServeAgents("test/fixtures/agents/tally.js");
  });
  afterAll(async () => {
    await agents?.stop();
  });

  function sum(stdin: string): ReturnType<typeof run> {
    return run(["invoke", "tally", "sum", "-a", "tutorial", "-c", '{"unit":"kg"}', "-"], { env: agents.env, stdin });
  }

  it("is one JSON value each", async () => {
    const result = await sum("1.5\n2\n3\n");
    expect(result.stderr).toBe("");
    expect(lines(result.stdout).map((l) => JSON.parse(l) as unknown)).toEqual([{ result: { count: 3, total: 6.5, unit: "kg" } }]);
  });

  it("a blank one fails the invocation, and the message says why once (it is empty, and what it should be), not again in the invocation's failure", async () => {
    const result = await sum("1.5\n\n3\n");
    expect(result.code).toBe(EXIT.invocationFailed);
    expect(result.stdout.length).toBe(0);
    expect(result.stderr).toBe(
      "golem-stream: reading stdin failed, the input stream was cancelled: stdin line 2 is empty: expected an f64, e.g. 1.5\n" +
        "golem-stream: the invocation failed on the server (invocation-failed) after its input was cancelled\n",
    );
  });

  it("one that is not JSON is told what the stream's items are, with an example as a line holds it", async () => {
    const result = await sum("1.5\nabc\n");
    expect(result.code).toBe(EXIT.invocationFailed);
    expect(result.stderr).toContain(": stdin line 2 is not valid JSON: expected an f64, e.g. 1.5\n");
  });

  it("--constructor that is not JSON is told the record it is for, with an example made of its text", async () => {
    const result = await run(["invoke", "tally", "sum", "-a", "tutorial", "-c", "kg", "-"], { env: agents.env, stdin: "1\n" });
    expect(result.code).toBe(EXIT.usage);
    expect(result.stderr).toBe(`golem-stream: --constructor is not valid JSON: expected a record{unit: string}, e.g. '{"unit":"kg"}'\n`);
  });

  it("--output json: the failed event on stdout keeps the reason, for a reader of stdout alone", async () => {
    const result = await run(["invoke", "tally", "sum", "-a", "tutorial", "-c", '{"unit":"kg"}', "--output", "json", "-"], {
      env: agents.env,
      stdin: "1.5\n\n3\n",
    });
    expect(result.code).toBe(EXIT.invocationFailed);
    const failed = lines(result.stdout)
      .map((l) => JSON.parse(l) as { event?: string; message?: string })
      .find((event) => event.event === "failed");
    expect(failed?.message).toContain("stdin line 2 is empty");
    expect(result.stderr.split("stdin line 2 is empty").length).toBe(2);
  });
});
