/**
 * Direct I/O for payload files (Linux `O_DIRECT`): a payload's bytes go from
 * a staging buffer of this process straight to the disk, not through the
 * page cache.
 *
 * Why: a file written through the page cache costs the kernel a copy of
 * every byte into page-cache pages it has to find first: about 1.8 ms of CPU
 * per MiB here, 2.5 once the machine's free pages are cold (a VM that hands
 * freed memory back to its host faults on each one), against 0.1 ms to copy
 * the bytes into a staging buffer that stays warm. The payloads are not read
 * again soon (a resume, a replay), so the cache held nothing worth the copy.
 * With `O_DSYNC` beside it, each write still returns only once its bytes are
 * on the device.
 *
 * What direct I/O asks: the memory, the file offset and the length of every
 * write aligned to the device's logical block. `DIRECT_IO_ALIGNMENT` covers
 * the 512- and 4096-byte blocks in use; a file system that refuses
 * (`EINVAL`: tmpfs on older kernels, a larger block) is written through the
 * page cache instead, by the caller. Each payload starts at an aligned
 * offset, so a run is written whole windows at a time, its padding zeroed
 * (never another session's stale bytes).
 */
import type { FileHandle } from "node:fs/promises";

/** A payload with its place in its file (`PendingPayload` of `payload-files.ts`, which builds on this file). */
export interface PlacedPayload {
  readonly ref: { readonly offset: number; readonly length: number };
  readonly data: Uint8Array;
}

/** Offset, length and memory of every direct write are multiples of this. */
export const DIRECT_IO_ALIGNMENT = 4096;

/** The bytes one direct write takes at most: a run longer than this is written a window at a time. */
export const STAGING_BYTES = 4 * 1024 * 1024;

/** Staging buffers kept at once: libuv's thread pool runs four writes at a time by default. */
export const MAX_STAGING_BUFFERS = 4;

const WASM_PAGE_BYTES = 65536;

/** `n` rounded up to the next multiple of `alignment` (1: `n` itself). */
export function alignUp(n: number, alignment = DIRECT_IO_ALIGNMENT): number {
  const rest = n % alignment;
  return rest === 0 ? n : n + alignment - rest;
}

/**
 * Memory that starts on a page boundary. JavaScript cannot ask for an address, but a WebAssembly
 * memory is mapped from whole pages of its own, so its first byte is page-aligned; a `Buffer` comes
 * from `malloc`, whose alignment is 16 bytes. Undefined where WebAssembly is not available
 * (`--jitless`): the caller then writes through the page cache.
 */
function pageAlignedBytes(length: number): Uint8Array | undefined {
  // The lib this package compiles against (ES2022, no DOM) does not declare WebAssembly's types.
  const wasm = (globalThis as { WebAssembly?: { Memory: new (size: { initial: number; maximum: number }) => { buffer: ArrayBuffer } } })
    .WebAssembly;
  if (wasm === undefined) return undefined;
  const pages = Math.ceil(length / WASM_PAGE_BYTES);
  try {
    return new Uint8Array(new wasm.Memory({ initial: pages, maximum: pages }).buffer, 0, length);
  } catch {
    return undefined;
  }
}

/**
 * Staging buffers: at most `MAX_STAGING_BUFFERS` slices of one page-aligned block, made when first
 * needed and reused (so their pages stay warm); a write that finds none free waits for one. The
 * payload files of every store in the process share one set (`SHARED_STAGING`): each WebAssembly
 * memory reserves gigabytes of address space (guard regions, never touched), so the process makes
 * one, and the thread pool writes four at a time however many stores there are.
 */
export class StagingBuffers {
  readonly #free: Uint8Array[] = [];
  readonly #waiting: ((buffer: Uint8Array) => void)[] = [];
  /** The block the buffers are cut from; null once it could not be made. */
  #block: Uint8Array | null | undefined;
  #made = 0;

  /** A buffer of `STAGING_BYTES` for one run's writes, or undefined if aligned memory cannot be had. */
  async take(): Promise<Uint8Array | undefined> {
    const free = this.#free.pop();
    if (free !== undefined) return free;
    if (this.#made < MAX_STAGING_BUFFERS) {
      if (this.#block === undefined) this.#block = pageAlignedBytes(MAX_STAGING_BUFFERS * STAGING_BYTES) ?? null;
      if (this.#block === null) return undefined;
      // Each slice starts a whole number of staging windows into a page-aligned block: aligned too.
      return this.#block.subarray(this.#made * STAGING_BYTES, ++this.#made * STAGING_BYTES);
    }
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  give(buffer: Uint8Array): void {
    const waiter = this.#waiting.shift();
    if (waiter !== undefined) waiter(buffer);
    else this.#free.push(buffer);
  }
}

/** The staging buffers of every payload file writer in this process. */
export const SHARED_STAGING = new StagingBuffers();

/**
 * Writes one run of payloads (each at an aligned offset, each starting at the aligned end of the
 * one before) through `staging`, a window at a time; returns the run's aligned end. The padding
 * after each payload is written as zeros.
 */
export async function writeRunDirect(file: FileHandle, run: readonly PlacedPayload[], staging: Uint8Array): Promise<number> {
  const last = run[run.length - 1]!;
  const end = alignUp(last.ref.offset + last.ref.length);
  let position = run[0]!.ref.offset;
  let index = 0;
  let within = 0; // bytes of run[index] staged so far
  while (position < end) {
    const windowLength = Math.min(staging.byteLength, end - position);
    let filled = 0;
    while (filled < windowLength) {
      const payload = run[index];
      const next = payload === undefined ? end : payload.ref.offset + within;
      if (position + filled < next) {
        // Padding, up to the next payload's bytes or the window's end.
        const zeros = Math.min(next - position, windowLength) - filled;
        staging.fill(0, filled, filled + zeros);
        filled += zeros;
        continue;
      }
      const payloadNow = payload as PlacedPayload;
      const take = Math.min(payloadNow.ref.length - within, windowLength - filled);
      staging.set(payloadNow.data.subarray(within, within + take), filled);
      filled += take;
      within += take;
      if (within === payloadNow.ref.length) {
        index++;
        within = 0;
      }
    }
    for (let written = 0; written < filled;) {
      const { bytesWritten } = await file.write(staging, written, filled - written, position + written);
      // A regular file takes at least one byte or fails (ENOSPC, EIO); never loop on nothing.
      if (bytesWritten === 0) throw new Error(`payload file write at ${position + written} took no bytes`);
      written += bytesWritten;
    }
    position += filled;
  }
  return end;
}
