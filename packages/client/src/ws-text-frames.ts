/**
 * The Node transport's framing of small text messages (RFC 6455 section 5):
 * each becomes a masked text frame written into a shared buffer, and a burst
 * of them reaches the TCP socket as one write, instead of two `ws` frames'
 * worth of buffers, write requests and callbacks per message. An input
 * feeder sends a burst of small items from one tick; through `ws`'s sender
 * that cost the client about 1.1–1.6 µs per message, this about 0.6 (a
 * bare sender and receiver on loopback, 200 000 messages of 150 bytes).
 *
 * Only the data frames of small text messages are framed here. `ws` still
 * does the handshake, every inbound frame, control frames and every other
 * message; whoever writes through `ws` flushes the burst first, so frames
 * keep the order they were sent in.
 */
import { randomFillSync } from "node:crypto";
import { createRequire } from "node:module";

/** Text messages of at most this many UTF-16 code units are framed here (at most 3 bytes each: under 64 KiB, a 16-bit length). */
export const MAX_FRAMED_TEXT_CHARS = 16 * 1024;

/** The size of the slab frames are written into: a burst waits at most this many bytes before it is written. */
export const BURST_BYTES = 64 * 1024;

/** The longest header of a frame framed here: two bytes, a 16-bit extended length, the 4-byte masking key. */
const MAX_HEADER_BYTES = 8;

/** Masking keys are drawn from the system's random source this many at a time (RFC 6455 section 10.3: unpredictable keys). */
const KEY_POOL_BYTES = 8 * 1024;

type MaskFunction = (source: Uint8Array, mask: Uint8Array, output: Uint8Array, offset: number, length: number) => void;

/** Below this a native call costs more than the loop (`ws` draws the same line). */
const NATIVE_MASK_FROM_BYTES = 48;

/** `bufferutil`'s native masking when it is installed (an optional dependency, as for `ws`) and not turned off as `ws` lets it be. */
function loadNativeMask(): MaskFunction | undefined {
  if (process.env["WS_NO_BUFFER_UTIL"]) return undefined;
  try {
    const bufferUtil = createRequire(import.meta.url)("bufferutil") as { mask?: MaskFunction };
    return typeof bufferUtil.mask === "function" ? bufferUtil.mask : undefined;
  } catch {
    return undefined;
  }
}

const nativeMask = loadNativeMask();

/** XORs the `length` bytes of `buffer` from `start` with the 4-byte key at `keyAt`. */
function maskInPlace(buffer: Buffer, keyAt: number, start: number, length: number): void {
  if (nativeMask !== undefined && length >= NATIVE_MASK_FROM_BYTES) {
    nativeMask(buffer.subarray(start, start + length), buffer.subarray(keyAt, keyAt + 4), buffer, start, length);
    return;
  }
  const k0 = buffer[keyAt]!;
  const k1 = buffer[keyAt + 1]!;
  const k2 = buffer[keyAt + 2]!;
  const k3 = buffer[keyAt + 3]!;
  const end = start + length;
  let i = start;
  for (; i + 3 < end; i += 4) {
    buffer[i] = buffer[i]! ^ k0;
    buffer[i + 1] = buffer[i + 1]! ^ k1;
    buffer[i + 2] = buffer[i + 2]! ^ k2;
    buffer[i + 3] = buffer[i + 3]! ^ k3;
  }
  // The tail starts a multiple of four bytes in, so its nth byte takes the key's nth.
  for (let j = 0; i < end; i++, j++) buffer[i] = buffer[i]! ^ buffer[keyAt + j]!;
}

/** Masking keys for every connection of the process, drawn from the system's random source a pool at a time. */
const keys = Buffer.allocUnsafeSlow(KEY_POOL_BYTES);
let keyAt = KEY_POOL_BYTES;

function drawKey(buffer: Buffer, at: number): void {
  if (keyAt === KEY_POOL_BYTES) {
    randomFillSync(keys);
    keyAt = 0;
  }
  buffer[at] = keys[keyAt]!;
  buffer[at + 1] = keys[keyAt + 1]!;
  buffer[at + 2] = keys[keyAt + 2]!;
  buffer[at + 3] = keys[keyAt + 3]!;
  keyAt += 4;
}

/**
 * The buffer every connection of the process frames into, as Node's own
 * pool serves small `Buffer`s: a region once framed is never written again,
 * and a full slab is replaced, not reused, because sockets may still hold
 * regions of it. One slab for the process, not one per connection: a client
 * with a thousand connections holds 64 KiB here, not 64 MiB.
 */
class Slab {
  readonly buffer = Buffer.allocUnsafeSlow(BURST_BYTES);
  /** Where the next frame of any connection goes. */
  end = 0;
}

let current: Slab | undefined;

/**
 * The masked text frames of one connection's current burst. `add` frames a
 * message; `flush` hands what waits to `write` as one `Uint8Array`, a
 * region of the slab that is never written again, so `write` may keep it
 * for as long as the socket needs it. A burst is one region: when another
 * connection framed into the slab meanwhile, or the slab is full, what
 * waits is written first and the burst goes on in a new region.
 */
export class TextFrameBurst {
  readonly #write: (bytes: Uint8Array) => void;
  #slab: Slab | undefined;
  /** The region of `#slab` framed and not yet written. */
  #start = 0;
  #end = 0;

  constructor(write: (bytes: Uint8Array) => void) {
    this.#write = write;
  }

  /** Whether `text` is small enough to be framed here. */
  static fits(text: string): boolean {
    return text.length <= MAX_FRAMED_TEXT_CHARS;
  }

  /** Bytes framed and not yet written. */
  get pendingBytes(): number {
    return this.#end - this.#start;
  }

  /** Frames `text` (at most `MAX_FRAMED_TEXT_CHARS` long) as one masked, final text frame. */
  add(text: string): void {
    if (!TextFrameBurst.fits(text)) throw new RangeError(`a text of ${text.length} characters is framed by ws, not here`);
    const length = Buffer.byteLength(text, "utf8");
    const header = length < 126 ? 6 : MAX_HEADER_BYTES;
    const slab = this.#regionFor(header + length);
    const buffer = slab.buffer;
    let at = this.#end;
    buffer[at++] = 0x81; // FIN, text
    if (length < 126) {
      buffer[at++] = 0x80 | length; // MASK, 7-bit length
    } else {
      buffer[at++] = 0x80 | 126; // MASK, 16-bit length follows
      buffer[at++] = length >>> 8;
      buffer[at++] = length & 0xff;
    }
    const keyAt = at;
    drawKey(buffer, keyAt);
    at += 4;
    buffer.write(text, at, length, "utf8");
    maskInPlace(buffer, keyAt, at, length);
    this.#end = at + length;
    slab.end = this.#end;
  }

  /** Hands the frames that wait to `write`, as one region. */
  flush(): void {
    if (this.#end === this.#start || this.#slab === undefined) return;
    const frames = this.#slab.buffer.subarray(this.#start, this.#end);
    this.#start = this.#end;
    this.#write(frames);
  }

  /** Drops the frames that wait (the connection can no longer send them). */
  discard(): void {
    this.#start = this.#end;
  }

  /** The slab this burst's next `bytes` go into, right after what waits: what waits is written first when they cannot. */
  #regionFor(bytes: number): Slab {
    const slab = this.#slab;
    if (slab !== undefined && slab === current && slab.end === this.#end && slab.buffer.length - slab.end >= bytes) return slab;
    this.flush();
    if (current === undefined || current.buffer.length - current.end < bytes) current = new Slab();
    this.#slab = current;
    this.#start = current.end;
    this.#end = current.end;
    return current;
  }
}
