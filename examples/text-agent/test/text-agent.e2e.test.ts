/**
 * The example as its README runs it, with real processes: `golem-stream
 * serve --agents dist/agents.js`, the typed client script against it, and
 * the CLI calling the same agent.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { golemStream, run, serveAgents, type Server } from "./support/processes.js";

let server: Server;
beforeAll(async () => {
  server = await serveAgents();
});
afterAll(async () => {
  const stopped = await server?.stop();
  expect(stopped?.code).toBe(0);
});

it("the client script streams a file up and prints each line's counts, then the statistics", async () => {
  const dir = mkdtempSync(join(tmpdir(), "text-agent-input-"));
  const file = join(dir, "input.txt");
  writeFileSync(file, "The cat\r\nthe dog and THE bird\n\nlast line");
  const result = await run(["dist/client.js", file], server.env).finally(() => rmSync(dir, { recursive: true, force: true }));
  expect(result.stderr).toBe("");
  expect(result.code).toBe(0);
  expect(result.stdout.split("\n")).toEqual([
    "   1 |   2 words | The cat",
    "   2 |   5 words | the dog and THE bird",
    "   3 |   0 words | ",
    "   4 |   2 words | last line",
    "4 lines, 9 words, 40 bytes",
    "most frequent: the (3), and (1), bird (1)",
    "",
  ]);
});

it("the client script refuses a file that is not there", async () => {
  const result = await run(["dist/client.js", "no-such-file.txt"], server.env);
  expect(result.code).toBe(2);
  expect(result.stderr).toBe("usage: node dist/client.js <file> (no-such-file.txt is not a file)\n");
});

it("the CLI lists and invokes it too", async () => {
  const types = await golemStream(["types", "-a", "examples", "-e", "default"], server.env);
  expect(types.stdout).toContain("lines(text: stream<u8>) -> stream<record{number: u32, words: u32, chars: u32, text: string}>");
  const stats = await golemStream(
    ["invoke", "text", "stats", "-a", "examples", "-c", '{"ignoreCase":false}', "-", "2"],
    server.env,
    "b a b\nA a\n",
  );
  expect(stats.code).toBe(0);
  // u64 values are JSON strings, so no digit of a large count is lost.
  expect(JSON.parse(stats.stdout)).toEqual({
    result: {
      lines: "2",
      words: "5",
      bytes: "10",
      topWords: [
        { word: "a", count: "2" },
        { word: "b", count: "2" },
      ],
    },
  });
});
