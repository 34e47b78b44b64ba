/**
 * Turns stdin into the items of an input stream. Bytes arrive in arbitrary
 * chunks; these generators re-cut them into the items the parameter's
 * element type needs, with every size bounded before data accumulates.
 */
import { createReadStream, fstatSync } from "node:fs";
import type { Readable } from "node:stream";
import { LIMITS } from "@golem-stream/wire";
import { usageError } from "../exit-codes.js";

/**
 * Raw bytes for `stream<u8>`, counted as they are read. Chunks already
 * waiting in the source's buffer are joined, up to `batchBytes`: every batch
 * is one durable event on the server, so when the network or the server is
 * slower than stdin, batches grow (fewer, larger events), and when stdin is
 * slow (a person typing) each chunk still goes out at once.
 */
export async function* byteChunks(
  source: AsyncIterable<unknown> & { readonly readableLength?: number },
  onChunk: (bytes: number) => void,
  batchBytes: number = LIMITS.maxPackedU8PayloadBytes,
): AsyncGenerator<Uint8Array> {
  let parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of source) {
    const bytes = toBytes(chunk);
    if (bytes.length === 0) continue;
    parts.push(bytes);
    size += bytes.length;
    if (size < batchBytes && (source.readableLength ?? 0) > 0) continue;
    onChunk(size);
    yield parts.length === 1 ? bytes : new Uint8Array(Buffer.concat(parts, size));
    parts = [];
    size = 0;
  }
  if (size > 0) {
    onChunk(size);
    yield new Uint8Array(Buffer.concat(parts, size));
  }
}

/** All of stdin as one item, for `stream<binary>`; larger than `maxBytes` is an error, never a truncation. */
export async function readAllBounded(source: Readable, maxBytes: number, what: string): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of source) {
    const bytes = toBytes(chunk);
    total += bytes.length;
    if (total > maxBytes) throw usageError(`${what} is larger than ${maxBytes} bytes`);
    parts.push(bytes);
  }
  return new Uint8Array(Buffer.concat(parts, total));
}

/** A chunk of stdin as bytes (a stream with an encoding set yields strings). */
export function toBytes(chunk: unknown): Uint8Array {
  if (chunk instanceof Uint8Array) return chunk;
  if (typeof chunk === "string") return Buffer.from(chunk, "utf8");
  throw usageError("stdin produced something that is not bytes");
}

/**
 * Stdin for `stream<u8>`, read `readBytes` at a time (default: one packed
 * batch, 1 MiB) when it is a regular file (`golem-stream ... < file`).
 * Node reads a file on stdin 64 KiB at a time with nothing read ahead, so
 * `byteChunks` found nothing to join and every 64 KiB became its own message,
 * durable event and payload write: 16 times the per-event work of 1 MiB
 * batches on both sides (measured: docs/performance.md).
 * A pipe or a terminal hands over what it holds whatever is asked for, so it
 * is read as it is.
 */
export function stdinBytes(stdin: Readable, readBytes: number = LIMITS.maxPackedU8PayloadBytes): Readable {
  const fd = (stdin as { fd?: unknown }).fd;
  if (typeof fd !== "number" || knownInputSize(stdin) === undefined) return stdin;
  // From the file's current position, as stdin itself would read; fd 0 stays open (it is not ours).
  return createReadStream("", { fd, highWaterMark: readBytes, autoClose: false });
}

/**
 * The bytes a regular file on stdin still holds (`golem-stream ... < file`),
 * as `pv` finds out; undefined for a pipe, a terminal or anything unknown.
 */
export function knownInputSize(source: Readable): number | undefined {
  const fd = (source as { fd?: unknown }).fd;
  if (typeof fd !== "number") return undefined;
  try {
    const stats = fstatSync(fd);
    return stats.isFile() ? stats.size : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Refuses a directory on stdin (`golem-stream ... - < dir`): Node hands a directory on fd 0 over
 * as a stream that ends at once, so it read as empty input and the invocation ran on nothing.
 */
export function refuseDirectoryStdin(stdin: Readable, parameter: string): void {
  const fd = (stdin as { fd?: unknown }).fd;
  if (typeof fd !== "number") return;
  let isDirectory: boolean;
  try {
    isDirectory = fstatSync(fd).isDirectory();
  } catch {
    return; // Not a file descriptor this process can look at: reading it says what is wrong.
  }
  if (isDirectory) throw usageError(`stdin is a directory, not data for ${parameter}: redirect a file or a pipe into it`);
}

/** Passes the items of `items` through and calls `done` once they ended (not when they failed). */
export async function* thenDone<T>(items: AsyncIterable<T>, done: () => void): AsyncGenerator<T> {
  yield* items;
  done();
}
