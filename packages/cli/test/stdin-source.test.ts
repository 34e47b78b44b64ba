import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { CliError } from "../src/exit-codes.js";
import { byteChunks } from "../src/io/stdin-source.js";
import { textLines } from "../src/io/stdin-lines.js";
import { STRING_ITEM_LINE, tooLongMessage } from "../src/io/line-limits.js";
import type { LineLimit } from "../src/io/line-limits.js";

async function collect<T>(source: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of source) out.push(item);
  return out;
}

async function* chunked(bytes: Uint8Array, cuts: number[]): AsyncGenerator<Uint8Array> {
  let start = 0;
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    if (cut <= start || cut >= bytes.length) continue;
    yield bytes.subarray(start, cut);
    start = cut;
  }
  yield bytes.subarray(start);
}

/** The reference: what `split("\n")` says the lines are, with a trailing newline ending the last line. */
function referenceLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split("\n").map((l) => (l.endsWith("\r") ? l.slice(0, -1) : l));
  if (text.endsWith("\n")) lines.pop();
  return lines;
}

describe("textLines", () => {
  it("yields the same lines however the input is chunked", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc
          .array(fc.oneof(fc.string({ unit: "grapheme" }), fc.constantFrom("\n", "\r\n", "\r", "é", "😀")), { maxLength: 30 })
          .map((parts) => parts.join("")),
        fc.array(fc.nat(200), { maxLength: 10 }),
        async (text, cuts) => {
          const bytes = new TextEncoder().encode(text);
          let counted = 0;
          let told = 0;
          let ended = 0;
          const lines = await collect(
            textLines(
              chunked(bytes, cuts),
              (count, n) => {
                told += count;
                counted += n;
              },
              undefined,
              () => ended++,
            ),
          );
          expect(lines).toEqual(referenceLines(text));
          expect(counted).toBe(new TextEncoder().encode(lines.join("")).length);
          expect(told).toBe(lines.length);
          expect(ended).toBe(1);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("fails a line longer than the limit instead of truncating it", async () => {
    const bytes = new TextEncoder().encode("short\n" + "x".repeat(100) + "\nnever");
    const lines: string[] = [];
    const error = await (async () => {
      for await (const line of textLines(chunked(bytes, [3, 50, 70]), () => undefined, { maxBytes: 64 })) lines.push(line);
    })().catch((e: unknown) => e);
    expect(lines).toEqual(["short"]);
    expect(error).toBeInstanceOf(CliError);
    expect((error as CliError).message).toMatch(/line 2 is longer than 64 bytes/);
  });

  it("hands out every line before a bad one, then fails naming it, however the input is chunked", async () => {
    /** The outcome read from the whole input at once: the lines, then the first failure, if any. */
    const reference = (bytes: Uint8Array, limit: LineLimit): { lines: string[]; error: string | undefined } => {
      const lines: string[] = [];
      const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
      let start = 0;
      while (start < bytes.length) {
        const newline = bytes.indexOf(0x0a, start);
        const end = newline === -1 ? bytes.length : newline;
        const number = lines.length + 1;
        let line = bytes.subarray(start, end);
        if (line.length > 0 && line[line.length - 1] === 0x0d) line = line.subarray(0, line.length - 1);
        // The limit is on the line's text (the CR that ends it is not sent), or on that text as a JSON string.
        const size = limit.asJsonString === true ? JSON.stringify(Buffer.from(line).toString("latin1")).length - 2 : line.length;
        if (size > limit.maxBytes) return { lines, error: tooLongMessage(number, limit) };
        try {
          lines.push(decoder.decode(line));
        } catch {
          return { lines, error: `stdin line ${number} is not valid UTF-8` };
        }
        start = end + 1;
      }
      return { lines, error: undefined };
    };
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom(0x61, 0x62, 0x0a, 0x0d, 0xc3, 0xa9, 0xff, 0x22, 0x5c, 0x01, 0x09), { maxLength: 80 }),
        fc.array(fc.nat(90), { maxLength: 8 }),
        fc.integer({ min: 1, max: 12 }),
        fc.boolean(),
        async (values, cuts, maxLineBytes, asJsonString) => {
          const bytes = Uint8Array.from(values);
          const limit: LineLimit = { maxBytes: maxLineBytes, asJsonString };
          const expected = reference(bytes, limit);
          const lines: string[] = [];
          let error: string | undefined;
          try {
            for await (const line of textLines(chunked(bytes, cuts), () => undefined, limit)) lines.push(line);
          } catch (failure) {
            expect(failure).toBeInstanceOf(CliError);
            error = (failure as CliError).message;
          }
          expect({ lines, error }).toEqual(expected);
        },
      ),
      { numRuns: 500 },
    );
  });

  it("a stream<string> line may take what one protocol message leaves for it, as a JSON string", () => {
    expect(STRING_ITEM_LINE).toEqual({ maxBytes: 8 * 1024 * 1024 - 130, asJsonString: true });
  });

  it("fails on invalid UTF-8", async () => {
    const error = await collect(textLines(chunked(new Uint8Array([0x61, 0xff, 0x0a]), []), () => undefined)).catch((e: unknown) => e);
    expect((error as CliError).message).toMatch(/line 1 is not valid UTF-8/);
  });
});

describe("byteChunks", () => {
  it("joins chunks that are already buffered, up to the batch size, and never reorders bytes", async () => {
    const data = Buffer.from(Array.from({ length: 10_000 }, (_, i) => i % 251));
    // A source that reports how much more it holds, like a Node Readable's readableLength.
    let position = 0;
    const source = {
      get readableLength() {
        return data.length - position;
      },
      async *[Symbol.asyncIterator]() {
        while (position < data.length) {
          const chunk = data.subarray(position, position + 100);
          position += 100;
          yield chunk;
        }
      },
    };
    const batches = await collect(byteChunks(source, () => undefined, 1000));
    expect(Buffer.concat(batches)).toEqual(data);
    expect(batches.map((b) => b.length)).toEqual(Array.from({ length: 10 }, () => 1000));
  });

  it("sends a chunk at once when nothing more is buffered (interactive input)", async () => {
    const source = {
      readableLength: 0,
      async *[Symbol.asyncIterator]() {
        yield new Uint8Array([1]);
        yield new Uint8Array([2]);
      },
    };
    expect((await collect(byteChunks(source, () => undefined))).map((b) => [...b])).toEqual([[1], [2]]);
  });

  it("passes bytes through unchanged, skipping empty chunks, and counts them", async () => {
    let counted = 0;
    const chunks = await collect(byteChunks(chunked(new Uint8Array([1, 2, 3, 4, 5]), [2, 2, 4]), (n) => (counted += n)));
    expect(Buffer.concat(chunks)).toEqual(Buffer.from([1, 2, 3, 4, 5]));
    expect(counted).toBe(5);
    expect(chunks.every((c) => c.length > 0)).toBe(true);
  });
});
