/** The text processing on its own: lines across chunk boundaries, words, the bounded counts. */
import { describe, expect, it } from "vitest";
import { linesOf, MAX_LINE_CHARS, WordCounts, wordsOf } from "../src/text.js";

async function lines(chunks: (string | Uint8Array)[]): Promise<string[]> {
  const encoder = new TextEncoder();
  const source = (async function* () {
    for (const chunk of chunks) yield typeof chunk === "string" ? encoder.encode(chunk) : chunk;
  })();
  const out: string[] = [];
  for await (const line of linesOf(source)) out.push(line);
  return out;
}

describe("linesOf", () => {
  it("splits on \\n and \\r\\n wherever the chunks end, and keeps a last line without \\n", async () => {
    expect(await lines(["one\r", "\ntw", "o\n\nthree"])).toEqual(["one", "two", "", "three"]);
    expect(await lines([])).toEqual([]);
  });

  it("decodes a character split across two chunks", async () => {
    const bytes = new TextEncoder().encode("é\n");
    expect(await lines([bytes.subarray(0, 1), bytes.subarray(1)])).toEqual(["é"]);
  });

  it("cuts a line longer than MAX_LINE_CHARS, with or without its \\n", async () => {
    const long = "x".repeat(MAX_LINE_CHARS + 5);
    expect((await lines([long, "\n"])).map((line) => line.length)).toEqual([MAX_LINE_CHARS, 5]);
    expect((await lines([long])).map((line) => line.length)).toEqual([MAX_LINE_CHARS, 5]);
  });
});

describe("words", () => {
  it("are runs of letters, digits, apostrophes and hyphens", () => {
    expect(wordsOf("It's a well-known fact: 42 Käse!")).toEqual(["It's", "a", "well-known", "fact", "42", "Käse"]);
  });

  it("are ranked by count, ties alphabetically", () => {
    const counts = new WordCounts();
    for (const word of ["b", "a", "c", "b", "a", "b"]) counts.add(word);
    expect(counts.top(2)).toEqual([
      { word: "b", count: 3 },
      { word: "a", count: 2 },
    ]);
  });
});
