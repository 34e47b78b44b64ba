/**
 * Adapts what applications have at hand — async iterables, sync iterables,
 * Web `ReadableStream`s, `Blob`s and `File`s, Node `Readable`s — to one
 * pull-based iterator, so the input feeder reads a source only when its
 * unacknowledged buffer has room (a paused producer, not an unbounded queue).
 */

import { describeJs } from "@golem-stream/schema-value";
import { ClientError } from "./errors.js";

const notASource = (): ClientError =>
  new ClientError("invalid-argument", "an input stream source must be an async iterable, an iterable, a ReadableStream or a Blob");

/** Anything the runtime can pull items from. */
export type Source<T> = AsyncIterable<T> | Iterable<T> | ReadableStream<T>;

/** What the runtime needs of a `Blob` or `File` (structural, so no DOM or Node types are required). */
export interface BlobLike {
  /** Its length in bytes. */
  readonly size: number;
  /** The MIME type, or "" when unknown. */
  readonly type: string;
  /** Its bytes, as a stream (how a `stream<u8>` input reads it). */
  stream(): ReadableStream<Uint8Array>;
  /** Its bytes at once (how a `stream<binary>` item is read). */
  arrayBuffer(): Promise<ArrayBuffer>;
}

/**
 * A source of byte chunks for `stream<u8>`: a `Blob`/`File` (read through
 * `stream()`), or chunks of bytes from any source; Node `Readable`s are async
 * iterables of `Buffer`s.
 */
export type ByteSource = Source<Uint8Array | ArrayBuffer | ArrayBufferView> | BlobLike;

export interface PullIterator<T> {
  next(): Promise<IteratorResult<T, undefined>>;
  /**
   * For a source that never waits (a sync iterable): what `next` would
   * resolve with, at once (or it throws what `next` would reject with), so
   * that taking an item costs no promise. Absent where an item may have to
   * be waited for.
   */
  readonly nextNow?: () => IteratorResult<T, undefined>;
  /** Releases the source early (cancel, server-side cancel, invocation end). Idempotent. */
  close(): Promise<void>;
}

function isReadableStream<T>(source: unknown): source is ReadableStream<T> {
  return typeof source === "object" && source !== null && typeof (source as ReadableStream<T>).getReader === "function";
}

/** Throws `invalid-argument` unless `value` can be pulled from. */
export function assertSource(value: unknown): void {
  if (!isSource(value)) throw notASource();
}

export function isBlobLike(value: unknown): value is BlobLike {
  if (typeof value !== "object" || value === null) return false;
  const blob = value as Partial<Record<keyof BlobLike, unknown>>;
  return typeof blob.stream === "function" && typeof blob.arrayBuffer === "function" && typeof blob.size === "number";
}

export function isSource(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return false;
  return (
    isBlobLike(value) ||
    isReadableStream(value) ||
    typeof (value as AsyncIterable<unknown>)[Symbol.asyncIterator] === "function" ||
    typeof (value as Iterable<unknown>)[Symbol.iterator] === "function"
  );
}

export function pullFrom<T>(source: Source<T> | BlobLike): PullIterator<T> {
  // Strings are iterable, but a string where a source belongs is a mistake, not a stream of characters.
  if (typeof source !== "object" || source === null) {
    throw notASource();
  }
  if (isBlobLike(source)) return fromReadableStream(source.stream() as unknown as ReadableStream<T>);
  if (isReadableStream<T>(source)) return fromReadableStream(source);
  const asyncIterable = (source as Partial<AsyncIterable<T>>)[Symbol.asyncIterator];
  if (typeof asyncIterable === "function") {
    const iterator = fromIterator(asyncIterable.call(source));
    return isNodeReadable(source) ? guardedReadable(source, iterator) : iterator;
  }
  const iterable = (source as Partial<Iterable<T>>)[Symbol.iterator];
  if (typeof iterable === "function") {
    return fromSyncIterator(iterable.call(source));
  }
  throw notASource();
}

/** A sync iterable's items, each also at hand at once (`nextNow`). */
function fromSyncIterator<T>(iterator: Iterator<T>): PullIterator<T> {
  let closed = false;
  const nextNow = (): IteratorResult<T, undefined> => {
    if (closed) return { done: true, value: undefined };
    const result = iterator.next();
    if (result.done === true) {
      closed = true;
      return { done: true, value: undefined };
    }
    return result;
  };
  return {
    nextNow,
    next: async () => nextNow(),
    async close() {
      if (closed) return;
      closed = true;
      iterator.return?.();
    },
  };
}

/** What is used of a Node `Readable` (known by its shape: the browser build imports no Node module). */
interface NodeReadableLike {
  on(event: "error", listener: (error: unknown) => void): unknown;
  destroy(): unknown;
  pipe: unknown;
}

function isNodeReadable(source: object): source is NodeReadableLike {
  const candidate = source as Partial<Record<keyof NodeReadableLike, unknown>>;
  return typeof candidate.on === "function" && typeof candidate.destroy === "function" && typeof candidate.pipe === "function";
}

/**
 * A Node `Readable` read through its async iterator, which listens to the stream only from its
 * first `next()`: until the invocation is accepted and the input mapped, an `error` the stream
 * emits (a file that does not exist) had no listener and ended the process. One is here from the
 * claim on: the error stays with the stream, and the first read fails with it as a source
 * failure. Closed before its first read, the iterator's `return` does nothing, so the stream is
 * destroyed here: no source is left open. The listener stays: an error the stream emits while it
 * is destroyed must not end the process either.
 */
function guardedReadable<T>(readable: NodeReadableLike, iterator: PullIterator<T>): PullIterator<T> {
  readable.on("error", () => {});
  return {
    next: () => iterator.next(),
    async close() {
      try {
        await iterator.close();
      } finally {
        readable.destroy();
      }
    },
  };
}

function fromIterator<T>(iterator: AsyncIterator<T>): PullIterator<T> {
  let closed = false;
  return {
    async next() {
      if (closed) return { done: true, value: undefined };
      const result = await iterator.next();
      if (result.done) {
        closed = true;
        return { done: true, value: undefined };
      }
      return result;
    },
    async close() {
      if (closed) return;
      closed = true;
      await iterator.return?.();
    },
  };
}

function fromReadableStream<T>(stream: ReadableStream<T>): PullIterator<T> {
  const reader = stream.getReader();
  let closed = false;
  return {
    async next() {
      if (closed) return { done: true, value: undefined };
      const result = await reader.read();
      if (result.done) {
        closed = true;
        reader.releaseLock();
        return { done: true, value: undefined };
      }
      return { done: false, value: result.value };
    },
    async close() {
      if (closed) return;
      closed = true;
      await reader.cancel();
    },
  };
}

/**
 * Items of a `stream<binary>` source that are `Blob`s or `File`s become
 * `{bytes, mimeType}` items, read one at a time as the feeder asks for them.
 */
export function readingBlobItems(items: PullIterator<unknown>): PullIterator<unknown> {
  return {
    async next() {
      const result = await items.next();
      if (result.done === true || !isBlobLike(result.value)) return result;
      const blob = result.value;
      const bytes = new Uint8Array(await blob.arrayBuffer());
      // A binary item's mimeType is `type/subtype`: a Blob's parameters (`;charset=utf-8`) are left out.
      const mimeType = blob.type.split(";", 1)[0]!.trim();
      return { done: false, value: mimeType === "" ? { bytes } : { bytes, mimeType } };
    },
    close: () => items.close(),
  };
}

/** Whether `chunk` is bytes `toBytes` takes. */
export function isByteChunk(chunk: unknown): chunk is Uint8Array | ArrayBuffer | ArrayBufferView {
  return chunk instanceof ArrayBuffer || ArrayBuffer.isView(chunk);
}

/**
 * Normalises one chunk of a byte source (`Buffer`, `Uint8Array`, `ArrayBuffer`, any typed array
 * view). Anything else is refused in the words a value stream's item is (`hexdump.data: item 1:
 * expected bytes …, got "oops"`): `item` names it, with the parameter's place when a typed call
 * gave one.
 */
export function toBytes(chunk: unknown, item?: string): Uint8Array {
  if (chunk instanceof Uint8Array) return chunk;
  if (chunk instanceof ArrayBuffer) return new Uint8Array(chunk);
  if (ArrayBuffer.isView(chunk)) return new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  const expected = `expected bytes (a Uint8Array, Buffer or ArrayBuffer), got ${describeJs(chunk)}`;
  throw new ClientError("invalid-argument", item === undefined ? expected : `${item}: ${expected}`);
}
