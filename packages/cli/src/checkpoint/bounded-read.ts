/**
 * Reads a whole file of at most a given size, also when it is a FIFO (`mkfifo`), without ever
 * holding a thread of libuv's pool. Opened the usual way, a FIFO without a writer makes the open
 * call itself wait for one on a pool thread, where neither Ctrl-C nor the process's exit can
 * stop it (exit waits for that thread): the process stayed until SIGKILL. Opened with O_NONBLOCK
 * the open returns at once, and the FIFO is read as a pipe through the event loop, which waits
 * for a writer, reads until the last writer closes, and stops when `signal` aborts.
 */
import { close, constants, fstat, open, read } from "node:fs";
import { Socket } from "node:net";
import { promisify } from "node:util";

const openFd = promisify(open);
const fstatFd = promisify(fstat);
const closeFd = promisify(close);
const readFd = promisify(read);

export interface BoundedReadOptions {
  /** More than this many bytes: rejects with `tooLarge()`, having read at most one chunk more. */
  readonly maxBytes: number;
  readonly tooLarge: () => Error;
  /** Stops waiting for a FIFO's writer or data: rejects with the signal's reason. */
  readonly signal?: AbortSignal;
}

export async function readBounded(path: string, options: BoundedReadOptions): Promise<Uint8Array> {
  let fd = await openFd(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    if ((await fstatFd(fd)).isFIFO()) return readPipe(new Socket({ fd, readable: true, writable: false }), options);
  } catch (error) {
    await closeFd(fd);
    throw error;
  }
  // Anything else is opened again without O_NONBLOCK: a terminal (`resume /dev/stdin` typed or
  // pasted into) read without it answers EAGAIN at once instead of waiting for the text.
  await closeFd(fd);
  fd = await openFd(path, constants.O_RDONLY);
  try {
    const stats = await fstatFd(fd);
    // Replaced by a FIFO between the two opens: the open above has found its writer already.
    if (stats.isFIFO()) {
      const pipe = new Socket({ fd, readable: true, writable: false });
      fd = -1;
      return await readPipe(pipe, options);
    }
    return await readFile(fd, options);
  } finally {
    if (fd >= 0) await closeFd(fd);
  }
}

/** A regular file, or a device such as a terminal, read from libuv's thread pool. */
async function readFile(fd: number, options: BoundedReadOptions): Promise<Uint8Array> {
  const buffer = Buffer.alloc(Math.min(options.maxBytes + 1, 64 * 1024));
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const { bytesRead } = await readFd(fd, buffer, 0, buffer.length, null);
    if (bytesRead === 0) break;
    total += bytesRead;
    if (total > options.maxBytes) throw options.tooLarge();
    chunks.push(Buffer.from(buffer.subarray(0, bytesRead)));
  }
  return new Uint8Array(Buffer.concat(chunks, total));
}

/** A FIFO, through the event loop: the socket owns the descriptor and closes it when destroyed. */
function readPipe(pipe: Socket, options: BoundedReadOptions): Promise<Uint8Array> {
  const { signal } = options;
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    let settled = false;
    const finish = (error: unknown, bytes?: Uint8Array): void => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener("abort", onAbort);
      pipe.destroy();
      if (bytes === undefined) reject(error);
      else resolve(bytes);
    };
    const onAbort = (): void => finish(signal?.reason);
    pipe.on("data", (chunk: Buffer) => {
      total += chunk.length;
      if (total > options.maxBytes) finish(options.tooLarge());
      else chunks.push(chunk);
    });
    pipe.once("end", () => finish(undefined, new Uint8Array(Buffer.concat(chunks, total))));
    pipe.once("error", (error) => finish(error));
    if (signal?.aborted === true) onAbort();
    else signal?.addEventListener("abort", onAbort, { once: true });
  });
}
