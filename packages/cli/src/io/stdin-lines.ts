/**
 * One string per line of stdin, for a `stream<string>` parameter (or one JSON value per line for
 * other element types): a line ends at LF, a CR before it is dropped (so CRLF files work), and a
 * last line without LF is still an item. A line longer than its `LineLimit` (line-limits.ts) or
 * not valid UTF-8 fails the stream rather than being truncated or silently altered; the lines
 * before it are handed over first.
 *
 * Why a reader of its own rather than an async generator: piping log lines is the CLI's small-item
 * path, and a generator yielding each line, wrapped in another that noticed the end, cost two
 * generator resumptions and a UTF-8 decode per line. Here each chunk of stdin is cut at once (its
 * newlines found natively, its complete lines decoded in one call) and its lines handed out from
 * an array, each as an already settled promise.
 */
import { usageError } from "../exit-codes.js";
import { STRING_ITEM_LINE, escapedLength, tooLongMessage } from "./line-limits.js";
import type { LineLimit } from "./line-limits.js";
import { toBytes } from "./stdin-source.js";

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * The lines of `source`. `onLines(lines, bytes)` counts what was cut (bytes without line ends),
 * once per chunk; `onEnd` is called once the last line has been handed out (not on a failure).
 * `sourceName` is what messages call the source: `stdin`, or the file an argument named.
 */
export function textLines(
  source: AsyncIterable<unknown>,
  onLines: (lines: number, bytes: number) => void,
  limit: LineLimit = STRING_ITEM_LINE,
  onEnd: () => void = () => undefined,
  sourceName = "stdin",
): AsyncIterableIterator<string> {
  return new LineReader(source[Symbol.asyncIterator](), onLines, limit, onEnd, sourceName);
}

class LineReader implements AsyncIterableIterator<string> {
  readonly #source: AsyncIterator<unknown>;
  readonly #onLines: (lines: number, bytes: number) => void;
  readonly #limit: LineLimit;
  /** A line of at most this many bytes fits whatever it holds: its exact size is not worked out. */
  readonly #surelyFits: number;
  readonly #onEnd: () => void;
  readonly #sourceName: string;
  /** Lines cut and not handed out yet, from `#at`. */
  #lines: string[] = [];
  #at = 0;
  /** Why the stream fails, once the lines before the bad one are handed out. */
  #failure: Error | undefined;
  /** The start of a line whose end has not arrived yet. */
  #partial: Uint8Array[] = [];
  #partialBytes = 0;
  /** Lines cut so far (numbering for errors). */
  #lineNumber = 0;
  /** Bytes of the lines the chunk being cut completed, their line ends left out. */
  #cutBytes = 0;
  #ended = false;
  /** `onEnd` was called. */
  #told = false;

  constructor(
    source: AsyncIterator<unknown>,
    onLines: (lines: number, bytes: number) => void,
    limit: LineLimit,
    onEnd: () => void,
    sourceName: string,
  ) {
    this.#source = source;
    this.#onLines = onLines;
    this.#limit = limit;
    // JSON escapes a byte as at most 6.
    this.#surelyFits = limit.asJsonString === true ? Math.floor(limit.maxBytes / 6) : limit.maxBytes;
    this.#onEnd = onEnd;
    this.#sourceName = sourceName;
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<string> {
    return this;
  }

  next(): Promise<IteratorResult<string, undefined>> {
    if (this.#at < this.#lines.length) return Promise.resolve({ done: false, value: this.#lines[this.#at++] as string });
    return this.#read();
  }

  async return(): Promise<IteratorResult<string, undefined>> {
    this.#ended = true;
    this.#told = true;
    this.#lines = [];
    await this.#source.return?.();
    return { done: true, value: undefined };
  }

  async #read(): Promise<IteratorResult<string, undefined>> {
    for (;;) {
      if (this.#failure !== undefined) throw this.#failure;
      if (this.#ended) {
        // Told once the consumer has taken the last line and asked for more.
        if (!this.#told) {
          this.#told = true;
          this.#onEnd();
        }
        return { done: true, value: undefined };
      }
      const result = await this.#source.next();
      if (result.done === true) {
        this.#ended = true;
        if (this.#partialBytes === 0) continue;
        // A last line without LF.
        this.#cutBytes = 0;
        const last = this.#lineOf(joined(this.#partial, this.#partialBytes));
        this.#partial = [];
        this.#partialBytes = 0;
        this.#onLines(1, this.#cutBytes);
        return { done: false, value: last };
      }
      this.#cut(toBytes(result.value));
      if (this.#at < this.#lines.length) return { done: false, value: this.#lines[this.#at++] as string };
    }
  }

  /** Cuts a chunk into the lines it completes; its unfinished end waits for the next chunk. */
  #cut(bytes: Uint8Array): void {
    this.#lines = [];
    this.#at = 0;
    this.#cutBytes = 0;
    try {
      let start = 0;
      let end = bytes.indexOf(NEWLINE);
      if (end !== -1 && this.#partialBytes > 0) {
        // The line the previous chunks began ends here.
        this.#checkLength(this.#partialBytes + end);
        this.#partial.push(bytes.subarray(0, end));
        const line = joined(this.#partial, this.#partialBytes + end);
        this.#partial = [];
        this.#partialBytes = 0;
        this.#lines.push(this.#lineOf(line));
        start = end + 1;
        end = bytes.indexOf(NEWLINE, start);
      }
      if (end !== -1) start = this.#cutComplete(bytes, start, end);
      this.#keepPartial(bytes.subarray(start));
    } catch (error) {
      this.#failure = error as Error;
    }
    if (this.#lines.length > 0) this.#onLines(this.#lines.length, this.#cutBytes);
  }

  /**
   * The complete lines from `start` (the first ending at `end`): their lengths checked, then
   * decoded in one call and split. Returns where the unfinished rest begins. A line too long
   * fails the stream after the lines before it.
   */
  #cutComplete(bytes: Uint8Array, start: number, end: number): number {
    let lineStart = start;
    let tooLong: Error | undefined;
    let lines = 0;
    for (let at = end; at !== -1; at = bytes.indexOf(NEWLINE, at + 1)) {
      if (at - lineStart > this.#surelyFits && !this.#fits(bytes.subarray(lineStart, at))) {
        tooLong = usageError(tooLongMessage(this.#lineNumber + lines + 1, this.#limit, this.#sourceName));
        break;
      }
      lines++;
      lineStart = at + 1;
    }
    if (lines > 0) {
      // Up to the last complete line's LF, which is not part of it.
      const region = bytes.subarray(start, lineStart - 1);
      const text = decodeStrict(region);
      if (text === undefined) this.#cutOneByOne(region);
      else {
        let carriageReturns = 0;
        for (const piece of text.split("\n")) {
          const line = withoutCarriageReturn(piece);
          if (line.length !== piece.length) carriageReturns++;
          this.#lines.push(line);
        }
        this.#lineNumber += lines;
        this.#cutBytes += region.byteLength - (lines - 1) - carriageReturns;
      }
    }
    if (tooLong !== undefined) throw tooLong;
    return lineStart;
  }

  /** A region that is not valid UTF-8: its lines decoded one at a time, up to the bad one (which throws). */
  #cutOneByOne(region: Uint8Array): void {
    let lineStart = 0;
    for (;;) {
      const at = region.indexOf(NEWLINE, lineStart);
      this.#lines.push(this.#lineOf(region.subarray(lineStart, at === -1 ? region.byteLength : at)));
      if (at === -1) return;
      lineStart = at + 1;
    }
  }

  #keepPartial(bytes: Uint8Array): void {
    if (bytes.byteLength === 0) return;
    this.#checkLength(this.#partialBytes + bytes.byteLength);
    this.#partial.push(bytes);
    this.#partialBytes += bytes.byteLength;
  }

  /** One line's bytes (its LF already cut off) as its text, its CR dropped. */
  #lineOf(bytes: Uint8Array): string {
    if (bytes.byteLength > this.#surelyFits && !this.#fits(bytes))
      throw usageError(tooLongMessage(this.#lineNumber + 1, this.#limit, this.#sourceName));
    this.#lineNumber++;
    const body = withoutFinalCarriageReturn(bytes);
    this.#cutBytes += body.byteLength;
    try {
      return strictUtf8.decode(body);
    } catch (cause) {
      throw usageError(`${this.#sourceName} line ${this.#lineNumber} is not valid UTF-8`, cause);
    }
  }

  /**
   * Bytes of a line not ended yet: past the limit plus a CR (dropped at the end of the line), the
   * line is too long whatever follows, so it is not kept any longer.
   */
  #checkLength(bytes: number): void {
    if (bytes > this.#limit.maxBytes + 1) throw usageError(tooLongMessage(this.#lineNumber + 1, this.#limit, this.#sourceName));
  }

  /** Whether a line (its LF cut off, its CR not yet) is within the limit. */
  #fits(line: Uint8Array): boolean {
    const body = withoutFinalCarriageReturn(line);
    if (body.byteLength > this.#limit.maxBytes) return false;
    return this.#limit.asJsonString !== true || escapedLength(body) <= this.#limit.maxBytes;
  }
}

function withoutFinalCarriageReturn(line: Uint8Array): Uint8Array {
  return line.byteLength > 0 && line[line.byteLength - 1] === CARRIAGE_RETURN ? line.subarray(0, line.byteLength - 1) : line;
}

function decodeStrict(region: Uint8Array): string | undefined {
  try {
    return strictUtf8.decode(region);
  } catch {
    return undefined;
  }
}

function withoutCarriageReturn(line: string): string {
  return line.length > 0 && line.charCodeAt(line.length - 1) === CARRIAGE_RETURN ? line.slice(0, -1) : line;
}

function joined(parts: readonly Uint8Array[], length: number): Uint8Array {
  return parts.length === 1 ? (parts[0] as Uint8Array) : Buffer.concat(parts, length);
}
