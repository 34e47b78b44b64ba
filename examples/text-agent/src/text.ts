/**
 * The text processing itself, free of any protocol: lines out of a stream
 * of UTF-8 bytes, words out of a line, and a bounded word count.
 */

/** A line longer than this many characters is cut into pieces of it, so one endless line cannot hold the server's memory. */
export const MAX_LINE_CHARS = 65_536;
/** How many distinct words `WordCounts` tracks; words first seen after that are counted in the totals only. */
export const MAX_DISTINCT_WORDS = 100_000;

/** The lines of a UTF-8 byte stream (`\n` or `\r\n` ends one), as its chunks arrive; a last line without `\n` is a line too. */
export async function* linesOf(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let pending = "";
  for await (const chunk of chunks) {
    pending += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = pending.indexOf("\n")) !== -1) {
      yield* pieces(pending.slice(0, end).replace(/\r$/, ""));
      pending = pending.slice(end + 1);
    }
    while (pending.length > MAX_LINE_CHARS) {
      yield pending.slice(0, MAX_LINE_CHARS);
      pending = pending.slice(MAX_LINE_CHARS);
    }
  }
  pending += decoder.decode();
  if (pending !== "") yield* pieces(pending);
}

function* pieces(line: string): Generator<string> {
  if (line.length <= MAX_LINE_CHARS) return yield line;
  for (let start = 0; start < line.length; start += MAX_LINE_CHARS) yield line.slice(start, start + MAX_LINE_CHARS);
}

/** The words of a line: runs of letters, digits, apostrophes and hyphens. */
export function wordsOf(line: string): string[] {
  return line.match(/[\p{L}\p{N}'-]+/gu) ?? [];
}

/** Counts words, keeping at most `MAX_DISTINCT_WORDS` distinct ones. */
export class WordCounts {
  readonly #counts = new Map<string, number>();

  add(word: string): void {
    const count = this.#counts.get(word);
    if (count !== undefined) this.#counts.set(word, count + 1);
    else if (this.#counts.size < MAX_DISTINCT_WORDS) this.#counts.set(word, 1);
  }

  /** The `n` most frequent words, most frequent first, ties in alphabetical order. */
  top(n: number): { word: string; count: number }[] {
    return [...this.#counts]
      .sort(([a, x], [b, y]) => y - x || (a < b ? -1 : a > b ? 1 : 0))
      .slice(0, n)
      .map(([word, count]) => ({ word, count }));
  }
}
