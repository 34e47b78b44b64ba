/**
 * The items of a value stream the server has not durably acknowledged, kept
 * for a resend after a reconnect (protocol section 9): each item's canonical
 * value text as UTF-8, back to back in blocks of bytes, with where it lies and
 * its charge to the unacknowledged window in typed arrays. No object per item.
 *
 * Why not the texts themselves: a client sending small items faster than the
 * server commits them holds its whole window (8 MiB by default, about 50 000
 * items of 64 bytes) for as long as an item takes to be acknowledged, longer
 * than the young generation lives. Every item's string, entry and sequence
 * then survived a young-generation collection or two, was copied each time,
 * and was promoted to the old generation, where the full collections found
 * it dead: about a quarter of the sending client's CPU per item
 * (docs/performance.md). A block of bytes is one object whatever it holds;
 * encoding each text into one costs less than copying it once.
 *
 * Blocks rather than one buffer: a block is let go of once every item in it
 * is acknowledged, so nothing is ever moved, and a window of any size (an
 * application may allow gigabytes) never needs one allocation of its size.
 * Blocks start at 1 KiB and double up to `maxBlockBytes` (64 KiB) while items
 * are held; an item larger than that has a block of its own. A block holds
 * its items' bytes and less than one item's worst case unused at its end.
 * Once nothing is held, nothing is kept: a stream that sends now and then
 * holds a small block only while an item waits for its acknowledgement.
 *
 * A resend decodes the texts back, which only a reconnect does. The items are
 * numbered from `firstSequence`, one per item, as a value stream's are.
 */
const DEFAULT_CAPACITY = { maxBlockBytes: 64 * 1024, items: 1024 };
/** The first block's size (or `maxBlockBytes`, when smaller). */
const FIRST_BLOCK_BYTES = 1024;
/** The most UTF-8 bytes a UTF-16 unit encodes to (a surrogate pair is two units, four bytes). */
const MAX_BYTES_PER_UNIT = 3;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A block of texts; `first` is the index (counted over the life of the object) of the first item written into it. */
interface Block {
  readonly bytes: Uint8Array;
  readonly first: number;
}

export class PendingValues {
  readonly #maxBlockBytes: number;
  /** The size of the next block: doubled with each block up to `#maxBlockBytes`, and reset once nothing is held. */
  #nextBlockBytes: number;
  /** The blocks holding items, oldest first from `#firstBlock`; the last is written into. */
  #blocks: (Block | undefined)[] = [];
  #firstBlock = 0;
  /** Where the next item goes in the last block. */
  #blockEnd = 0;
  /** A block of the largest size let go of while items are held, kept to be written into again. */
  #spare: Uint8Array | undefined;
  /** Per item, indexed from `#base`: where its bytes start and end in its block, and its window charge. */
  #starts: Uint32Array;
  #ends: Uint32Array;
  #charges: Uint32Array;
  #base = 0;
  /** The held items, as indexes over the life of the object: `#head` up to `#tail`. */
  #head = 0;
  #tail = 0;
  #firstSequence: bigint;

  /**
   * `firstSequence`: the sequence of the first item that will be pushed. `capacity`: the largest
   * block, and how many items the per-item arrays start with (they double as needed; tests start
   * both small).
   */
  constructor(firstSequence: bigint, capacity: { readonly maxBlockBytes: number; readonly items: number } = DEFAULT_CAPACITY) {
    this.#firstSequence = firstSequence;
    this.#maxBlockBytes = capacity.maxBlockBytes;
    this.#nextBlockBytes = Math.min(FIRST_BLOCK_BYTES, capacity.maxBlockBytes);
    this.#starts = new Uint32Array(capacity.items);
    this.#ends = new Uint32Array(capacity.items);
    this.#charges = new Uint32Array(capacity.items);
  }

  get length(): number {
    return this.#tail - this.#head;
  }

  /** The bytes of the blocks kept: those holding items (the last one being written into), and a spare. */
  get retainedBytes(): number {
    let bytes = this.#spare?.length ?? 0;
    for (let at = this.#firstBlock; at < this.#blocks.length; at++) bytes += this.#blocks[at]!.bytes.length;
    return bytes;
  }

  /** Holds the next item: its canonical value text and what it charges to the window. */
  push(text: string, charge: number): void {
    const block = this.#blockFor(text.length * MAX_BYTES_PER_UNIT);
    const start = this.#blockEnd;
    this.#blockEnd += encoder.encodeInto(text, block.subarray(start)).written;
    // A block of one large item takes no other: it goes as soon as that item is acknowledged.
    const end = this.#blockEnd;
    if (block.length > this.#maxBlockBytes) this.#blockEnd = block.length;
    if (this.#tail - this.#base === this.#ends.length) this.#makeItemRoom();
    const slot = this.#tail - this.#base;
    this.#starts[slot] = start;
    this.#ends[slot] = end;
    this.#charges[slot] = charge;
    this.#tail++;
  }

  /** Lets go of the items before `sequence` (at most all of them); returns what they charged. */
  dropBefore(sequence: bigint): number {
    if (sequence <= this.#firstSequence || this.#head === this.#tail) return 0;
    const count = Math.min(this.#tail - this.#head, Number(sequence - this.#firstSequence));
    let charge = 0;
    const last = this.#head - this.#base + count;
    for (let slot = this.#head - this.#base; slot < last; slot++) charge += this.#charges[slot]!;
    this.#head += count;
    this.#firstSequence += BigInt(count);
    if (this.#head === this.#tail) {
      this.#letGoOfBlocks();
      return charge;
    }
    // A block goes once the next one starts at or before the first item held.
    while (this.#firstBlock + 1 < this.#blocks.length && this.#blocks[this.#firstBlock + 1]!.first <= this.#head) {
      this.#release(this.#blocks[this.#firstBlock]!);
      this.#blocks[this.#firstBlock++] = undefined;
    }
    if (this.#firstBlock > 64 && this.#firstBlock * 2 > this.#blocks.length) {
      this.#blocks = this.#blocks.slice(this.#firstBlock);
      this.#firstBlock = 0;
    }
    return charge;
  }

  /** Each held item's sequence and text, in order. */
  forEach(visit: (sequence: bigint, text: string) => void): void {
    let blockAt = this.#firstBlock;
    let sequence = this.#firstSequence;
    for (let index = this.#head; index < this.#tail; index++) {
      while (blockAt + 1 < this.#blocks.length && this.#blocks[blockAt + 1]!.first <= index) blockAt++;
      const slot = index - this.#base;
      visit(sequence, decoder.decode(this.#blocks[blockAt]!.bytes.subarray(this.#starts[slot], this.#ends[slot])));
      sequence++;
    }
  }

  /** Lets go of every item; the next pushed is numbered `nextSequence`. */
  clear(nextSequence: bigint): void {
    this.#letGoOfBlocks();
    this.#head = this.#tail = this.#base = 0;
    this.#firstSequence = nextSequence;
  }

  /** The last block, or a new one when it has less than `bytes` left. */
  #blockFor(bytes: number): Uint8Array {
    const last = this.#blocks.length > this.#firstBlock ? this.#blocks[this.#blocks.length - 1] : undefined;
    if (last !== undefined && this.#blockEnd + bytes <= last.bytes.length) return last.bytes;
    let fresh: Uint8Array;
    if (bytes > this.#maxBlockBytes) fresh = new Uint8Array(bytes);
    else if (this.#spare !== undefined) {
      fresh = this.#spare;
      this.#spare = undefined;
    } else {
      while (this.#nextBlockBytes < bytes) this.#nextBlockBytes *= 2;
      fresh = new Uint8Array(Math.min(this.#nextBlockBytes, this.#maxBlockBytes));
      this.#nextBlockBytes = Math.min(this.#nextBlockBytes * 2, this.#maxBlockBytes);
    }
    this.#blocks.push({ bytes: fresh, first: this.#tail });
    this.#blockEnd = 0;
    return fresh;
  }

  #release(block: Block): void {
    if (block.bytes.length === this.#maxBlockBytes) this.#spare = block.bytes;
  }

  /** Nothing is held: every block goes, the spare too, and the next starts small again. */
  #letGoOfBlocks(): void {
    this.#blocks = [];
    this.#firstBlock = this.#blockEnd = 0;
    this.#spare = undefined;
    this.#nextBlockBytes = Math.min(FIRST_BLOCK_BYTES, this.#maxBlockBytes);
  }

  /** Room for one more item in the per-item arrays: the held ones moved to the front, into larger arrays when they fill half. */
  #makeItemRoom(): void {
    const held = this.#tail - this.#head;
    const from = this.#head - this.#base;
    const capacity = held * 2 <= this.#ends.length ? this.#ends.length : this.#ends.length * 2;
    this.#starts = moved(this.#starts, from, held, capacity);
    this.#ends = moved(this.#ends, from, held, capacity);
    this.#charges = moved(this.#charges, from, held, capacity);
    this.#base = this.#head;
  }
}

/** `array`'s `count` entries from `from`, at the front of `array` itself or of a new array of `capacity`. */
function moved(array: Uint32Array, from: number, count: number, capacity: number): Uint32Array {
  if (capacity === array.length) {
    array.copyWithin(0, from, from + count);
    return array;
  }
  const larger = new Uint32Array(capacity);
  larger.set(array.subarray(from, from + count));
  return larger;
}
