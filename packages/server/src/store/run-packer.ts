/**
 * Packs a run of input chunks into rows as they arrive, rather than once the run is complete:
 * the chunks that join one queued write (`InputAppendTask.join`) are copied into the run's bytes
 * and listed in their row's part list at once, and the rows are ready when the group commits.
 *
 * Why: packing the whole run at the commit walked it three times (`packRun` to cut it,
 * `joinParts` to size each row and again to fill it), with `bigint` arithmetic on every item's
 * count in each walk, and kept every chunk, and the socket's read buffer it is a view of, alive
 * until then: about 0.18 µs of the server's event loop per 64-byte item on loopback
 * (docs/performance.md). Here each chunk is sized, copied and listed once.
 *
 * The rows are exactly those `packRun` and `joinParts` make of the same chunks: a row takes
 * chunks while its bytes and part list stay within `maxBytes`; a row of one chunk is that chunk
 * itself, unpacked (test/run-packer.test.ts holds the two to each other). The rows' bytes lie back
 * to back in one buffer, so a run kept in a payload file is written from it without another copy.
 */
import { varintLength, writeVarint } from "./packed-rows.js";
import type { InputChunk } from "./session-store.js";

/** A row of a packed run: one chunk as it is (`parts` undefined), or several packed. */
export interface PackedRunRow {
  /** The row's first chunk: its stream and sequence; the whole row when `parts` is undefined. */
  readonly first: InputChunk;
  readonly itemCount: bigint;
  readonly data: Uint8Array;
  /** The part list (`packed-rows.ts`), when the row packs several chunks. */
  readonly parts: Uint8Array | undefined;
}

const MAX_SAFE_BIGINT = BigInt(Number.MAX_SAFE_INTEGER);
/** The run's buffer starts this large and doubles as chunks join it; a row's part list starts at `FIRST_PARTS_CAPACITY`. */
const FIRST_CAPACITY = 4096;
const FIRST_PARTS_CAPACITY = 512;

/** A closed row, its bytes named by where they lie in the run's buffer (views are made once it is final). */
interface ClosedRow {
  readonly first: InputChunk;
  readonly itemCount: bigint;
  readonly start: number;
  readonly end: number;
  readonly parts: Uint8Array | undefined;
}

export class RunPacker {
  readonly #maxBytes: number;
  readonly #closed: ClosedRow[] = [];
  #rows: PackedRunRow[] | undefined;
  /**
   * Every chunk's bytes back to back, in one buffer for the whole run: each row's bytes are a view
   * of it, and the run's are one view (`bytes`), which a payload file takes as it is
   * (`InputAppendTask.placePayload`). Grown by doubling; no view of it is made until the run is
   * complete, so a buffer outgrown is garbage at once: the run holds at most twice its bytes
   * (views made as rows closed would keep every outgrown buffer alive, up to three times).
   */
  #bytes: Uint8Array | undefined;
  #bytesEnd = 0;
  /** The open row: its first chunk, and where its bytes start in `#bytes`. */
  #first: InputChunk | undefined;
  #rowStart = 0;
  #chunks = 0;
  /** Its size as `packRun` counts it: bytes and both varints of each part. */
  #size = 0;
  #parts: Uint8Array | undefined;
  #partsEnd = 0;
  /** Its item count: summed as a number while exact, the rest as a bigint. */
  #items = 0;
  #itemsBeyond = 0n;
  #finished = false;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  add(chunk: InputChunk): void {
    if (this.#finished) throw new Error("a finished run takes no more chunks");
    const length = chunk.data.byteLength;
    const count = chunk.itemCount;
    const small = count <= MAX_SAFE_BIGINT;
    const countNumber = small ? Number(count) : 0;
    const size = length + varintLength(small ? countNumber : count) + varintLength(length);
    if (this.#first === undefined || this.#maxBytes === 0 || this.#size + size > this.#maxBytes) {
      this.#close();
      this.#first = chunk;
      this.#rowStart = this.#bytesEnd;
      this.#copy(chunk.data);
      this.#chunks = 1;
      this.#size = size;
      this.#items = 0;
      this.#itemsBeyond = 0n;
      this.#count(count, small, countNumber);
      return;
    }
    if (this.#chunks === 1) this.#list(this.#first.itemCount, this.#first.data.byteLength);
    this.#copy(chunk.data);
    this.#list(small ? countNumber : count, length);
    this.#chunks++;
    this.#size += size;
    this.#count(count, small, countNumber);
  }

  /** The rows, the open one closed; the packer takes no more chunks. */
  rows(): readonly PackedRunRow[] {
    if (this.#rows === undefined) {
      this.#close();
      this.#finished = true;
      const bytes = this.#bytes ?? new Uint8Array(0);
      this.#rows = this.#closed.map(({ first, itemCount, start, end, parts }) => ({
        first,
        itemCount,
        data: bytes.subarray(start, end),
        parts,
      }));
    }
    return this.#rows;
  }

  /** The run's bytes: every row's `data`, back to back, in row order (the packer takes no more chunks). */
  bytes(): Uint8Array {
    this.rows();
    return this.#bytes === undefined ? new Uint8Array(0) : this.#bytes.subarray(0, this.#bytesEnd);
  }

  #count(count: bigint, small: boolean, countNumber: number): void {
    if (small && this.#items + countNumber <= Number.MAX_SAFE_INTEGER) this.#items += countNumber;
    else this.#itemsBeyond += count;
  }

  /** Copies a chunk's bytes to the end of the run's. */
  #copy(data: Uint8Array): void {
    const end = this.#bytesEnd + data.byteLength;
    let bytes = this.#bytes;
    if (bytes === undefined || bytes.byteLength < end) {
      let capacity = Math.max(FIRST_CAPACITY, 2 * (bytes?.byteLength ?? 0));
      while (capacity < end) capacity *= 2;
      // Not zeroed: only the bytes copied in are ever read (every view ends at `#bytesEnd`).
      const unzeroed = Buffer.allocUnsafe(capacity);
      const grown = new Uint8Array(unzeroed.buffer, unzeroed.byteOffset, capacity);
      if (bytes !== undefined) grown.set(bytes.subarray(0, this.#bytesEnd));
      this.#bytes = bytes = grown;
    }
    bytes.set(data, this.#bytesEnd);
    this.#bytesEnd = end;
  }

  /** Lists a part of `length` bytes and `count` items in the open row's part list. */
  #list(count: number | bigint, length: number): void {
    // Two varints of at most 10 bytes each.
    this.#parts = ensure(this.#parts, this.#partsEnd + 20);
    this.#partsEnd = writeVarint(this.#parts, writeVarint(this.#parts, this.#partsEnd, count), length);
  }

  #close(): void {
    const first = this.#first;
    if (first === undefined) return;
    const itemCount = this.#itemsBeyond + BigInt(this.#items);
    const parts = this.#chunks === 1 ? undefined : (this.#parts as Uint8Array).subarray(0, this.#partsEnd);
    this.#closed.push({ first, itemCount, start: this.#rowStart, end: this.#bytesEnd, parts });
    this.#first = undefined;
    this.#parts = undefined;
    this.#partsEnd = 0;
  }
}

/** `array`, or a larger copy of it, with room for `needed` bytes. */
function ensure(array: Uint8Array | undefined, needed: number): Uint8Array {
  if (array !== undefined && array.byteLength >= needed) return array;
  let capacity = Math.max(FIRST_PARTS_CAPACITY, array?.byteLength ?? 0);
  while (capacity < needed) capacity *= 2;
  const grown = new Uint8Array(capacity);
  if (array !== undefined) grown.set(array);
  return grown;
}
