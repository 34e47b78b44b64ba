/**
 * The items of a value stream the server has not durably acknowledged, kept
 * for a resend after a reconnect (protocol section 9): each item's canonical
 * value text as UTF-8, back to back in one buffer, with its end and its
 * charge to the unacknowledged window in typed arrays. No object per item.
 *
 * Why not the texts themselves: a client sending small items faster than the
 * server commits them holds its whole window (8 MiB by default, about 50 000
 * items of 64 bytes) for as long as an item takes to be acknowledged, longer
 * than the young generation lives. Every item's string, entry and sequence
 * then survived a young-generation collection or two, was copied each time,
 * and was promoted to the old generation, where the full collections found
 * it dead: about a quarter of the sending client's CPU per item
 * (docs/performance.md). Bytes in one buffer are one object whatever their
 * number; encoding each text into it once costs less than copying it once.
 *
 * A resend decodes the texts back, which only a reconnect does. The items are
 * numbered from `firstSequence`, one per item, as a value stream's are.
 */
const FIRST_CAPACITY = { bytes: 64 * 1024, items: 1024 };
/** The most UTF-8 bytes a UTF-16 unit encodes to (a surrogate pair is two units, four bytes). */
const MAX_BYTES_PER_UNIT = 3;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export class PendingValues {
  /** The texts' UTF-8, back to back from `#start` to `#end`. */
  #bytes: Uint8Array;
  #start = 0;
  #end = 0;
  /** Per held item, from index `#head` to `#tail`: where its bytes end, and its window charge. */
  #ends: Uint32Array;
  #charges: Uint32Array;
  #head = 0;
  #tail = 0;
  #firstSequence: bigint;

  /**
   * `firstSequence`: the sequence of the first item that will be pushed. `capacity`: the
   * buffers' first sizes, which grow by doubling (tests start them small).
   */
  constructor(firstSequence: bigint, capacity: { readonly bytes: number; readonly items: number } = FIRST_CAPACITY) {
    this.#firstSequence = firstSequence;
    this.#bytes = new Uint8Array(capacity.bytes);
    this.#ends = new Uint32Array(capacity.items);
    this.#charges = new Uint32Array(capacity.items);
  }

  get length(): number {
    return this.#tail - this.#head;
  }

  /** Holds the next item: its canonical value text and what it charges to the window. */
  push(text: string, charge: number): void {
    this.#makeRoom(text.length * MAX_BYTES_PER_UNIT);
    const { written } = encoder.encodeInto(text, this.#bytes.subarray(this.#end));
    this.#end += written;
    this.#ends[this.#tail] = this.#end;
    this.#charges[this.#tail] = charge;
    this.#tail++;
  }

  /** Lets go of the items before `sequence` (at most all of them); returns what they charged. */
  dropBefore(sequence: bigint): number {
    if (sequence <= this.#firstSequence || this.#head === this.#tail) return 0;
    const count = Math.min(this.#tail - this.#head, Number(sequence - this.#firstSequence));
    let charge = 0;
    const last = this.#head + count;
    for (let i = this.#head; i < last; i++) charge += this.#charges[i]!;
    this.#start = this.#ends[last - 1]!;
    this.#head = last;
    this.#firstSequence += BigInt(count);
    if (this.#head === this.#tail) this.#start = this.#end = this.#head = this.#tail = 0;
    return charge;
  }

  /** Each held item's sequence and text, in order. */
  forEach(visit: (sequence: bigint, text: string) => void): void {
    let start = this.#start;
    let sequence = this.#firstSequence;
    for (let i = this.#head; i < this.#tail; i++) {
      const end = this.#ends[i]!;
      visit(sequence, decoder.decode(this.#bytes.subarray(start, end)));
      start = end;
      sequence++;
    }
  }

  /** Lets go of every item; the next pushed is numbered `nextSequence`. */
  clear(nextSequence: bigint): void {
    this.#start = this.#end = this.#head = this.#tail = 0;
    this.#firstSequence = nextSequence;
  }

  /**
   * Room for `bytes` more and one more item: the held items moved to the front once the
   * dropped ones are at least half of a buffer, a larger buffer when that is not enough.
   * Moving only what outlived half a buffer keeps each byte's moves amortised constant.
   */
  #makeRoom(bytes: number): void {
    if (this.#end + bytes <= this.#bytes.length && this.#tail < this.#ends.length) return;
    const liveBytes = this.#end - this.#start;
    const liveItems = this.#tail - this.#head;
    const byteCapacity = grown(this.#bytes.length, liveBytes + bytes);
    if (byteCapacity === this.#bytes.length) this.#bytes.copyWithin(0, this.#start, this.#end);
    else {
      const larger = new Uint8Array(byteCapacity);
      larger.set(this.#bytes.subarray(this.#start, this.#end));
      this.#bytes = larger;
    }
    const itemCapacity = grown(this.#ends.length, liveItems + 1);
    const ends = itemCapacity === this.#ends.length ? this.#ends : new Uint32Array(itemCapacity);
    const charges = itemCapacity === this.#charges.length ? this.#charges : new Uint32Array(itemCapacity);
    // In place, index i is read (at head + i) before it is written (at i).
    for (let i = 0; i < liveItems; i++) {
      ends[i] = this.#ends[this.#head + i]! - this.#start;
      charges[i] = this.#charges[this.#head + i]!;
    }
    this.#ends = ends;
    this.#charges = charges;
    this.#start = 0;
    this.#end = liveBytes;
    this.#head = 0;
    this.#tail = liveItems;
  }
}

/** `capacity`, doubled until `needed` is at most half of it (so that moving the held part is worth it), or as it is when `needed` fits in half. */
function grown(capacity: number, needed: number): number {
  let next = capacity;
  while (needed * 2 > next) next *= 2;
  return next;
}
