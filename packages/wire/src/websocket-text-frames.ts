/**
 * Small text messages as WebSocket data frames (RFC 6455 section 5.2), a
 * burst of them in one buffer: final text frames, masked as a client must
 * send them or unmasked as a server does. The Node transports send the
 * small messages of a burst (input items, output items, ACKs) this way, as
 * one socket write, instead of handing each to `ws`'s sender, which made
 * each message a header buffer, a payload buffer, two write requests and
 * their callbacks: about 0.6 µs per message instead of 1.0–1.6 on this
 * project's machine (a bare sender and receiver on loopback, 200 000
 * messages of 150 bytes, either direction). `ws` still does the handshake,
 * the control frames and every larger message it sends (inbound, see
 * `websocket-frame-reader.ts`); a transport writes what waits here before
 * anything it hands to `ws`, so frames keep the order they were sent in.
 *
 * Pure bytes: `Uint8Array`, `TextEncoder`, and the Web Crypto random source
 * for masking keys (RFC 6455 section 10.3: unpredictable).
 */
import { mask } from "./websocket-masking.js";

/** Text messages of at most this many UTF-16 code units are framed here (at most 3 bytes each, so under 64 KiB: a 16-bit length). */
export const MAX_FRAMED_TEXT_CHARS = 16 * 1024;

/** The slab frames are written into: a burst waits at most this many bytes before it is written. */
export const FRAME_SLAB_BYTES = 64 * 1024;

/** Masking keys drawn from the random source at a time. */
const KEY_POOL_BYTES = 4 * 1024;

const encoder = new TextEncoder();

/** Masking keys for every masked burst of the process. */
const keys = new Uint8Array(KEY_POOL_BYTES);
let keyAt = KEY_POOL_BYTES;

function drawKey(target: Uint8Array, at: number): void {
  if (keyAt === KEY_POOL_BYTES) {
    globalThis.crypto.getRandomValues(keys);
    keyAt = 0;
  }
  target[at] = keys[keyAt]!;
  target[at + 1] = keys[keyAt + 1]!;
  target[at + 2] = keys[keyAt + 2]!;
  target[at + 3] = keys[keyAt + 3]!;
  keyAt += 4;
}

/**
 * The buffer every burst of the process frames into, as Node's own pool
 * serves small buffers: a region once framed is never written again, and a
 * full slab is replaced, not reused, because sockets may still hold regions
 * of it. One slab for the process, not one per connection: a thousand
 * connections hold 64 KiB here, not 64 MiB.
 */
class Slab {
  readonly bytes = new Uint8Array(FRAME_SLAB_BYTES);
  readonly view = new DataView(this.bytes.buffer);
  /** Where the next frame of any burst goes. */
  end = 0;
}

let current: Slab | undefined;

export interface TextFrameBurstOptions {
  /** Mask every frame with its own random key: what a client sends (RFC 6455 section 5.3). A server's frames are unmasked. */
  readonly masked: boolean;
  /**
   * Whether the socket still holds bytes it has not written. Then a burst is
   * handed to `write` as a copy of its own size, not as a view of the slab:
   * a peer that reads slowly keeps every region queued for it alive, and a
   * view keeps the whole 64 KiB slab alive with it, so a socket holding a
   * region per small message (one output item a tick, say) would hold 64
   * KiB per message instead of the message. A socket with nothing queued
   * writes the view at once and lets go of it. Default: never.
   */
  readonly backlogged?: () => boolean;
  /**
   * Writes each burst once the work at hand is done: `add` hands this a task
   * (once per burst) that flushes, and a transport passes its runtime's
   * end-of-tick queue (`process.nextTick` in Node). Without it, only `flush`
   * writes.
   */
  readonly schedule?: (task: () => void) => void;
  /**
   * Whether the socket may still be written when a scheduled task runs; when
   * not (the peer's close was answered, and no frame may follow it), what
   * waits is dropped, as a socket library drops a send after close. Default:
   * always.
   */
  readonly open?: () => boolean;
}

/**
 * The text frames of one connection's current burst. `add` frames a
 * message; `flush` hands what waits to `write` as one `Uint8Array`, a
 * region of the slab that is never written again, so `write` may keep it
 * for as long as the socket needs it (or a copy: `backlogged`). A burst is
 * one region: when another burst framed into the slab meanwhile, or the
 * slab is full, what waits is written first and the burst goes on in a new
 * region.
 */
export class TextFrameBurst {
  readonly #write: (bytes: Uint8Array) => void;
  readonly #masked: boolean;
  readonly #backlogged: (() => boolean) | undefined;
  readonly #schedule: ((task: () => void) => void) | undefined;
  readonly #open: (() => boolean) | undefined;
  #scheduled = false;
  #slab: Slab | undefined;
  /** The region of `#slab` framed and not yet written. */
  #start = 0;
  #end = 0;

  constructor(write: (bytes: Uint8Array) => void, options: TextFrameBurstOptions) {
    this.#write = write;
    this.#masked = options.masked;
    this.#backlogged = options.backlogged;
    this.#schedule = options.schedule;
    this.#open = options.open;
  }

  /** Whether `text` is small enough to be framed here. */
  static fits(text: string): boolean {
    return text.length <= MAX_FRAMED_TEXT_CHARS;
  }

  /** Bytes framed and not yet written. */
  get pendingBytes(): number {
    return this.#end - this.#start;
  }

  /** Frames `text` (at most `MAX_FRAMED_TEXT_CHARS` long) as one final text frame. */
  add(text: string): void {
    if (!TextFrameBurst.fits(text)) throw new RangeError(`a text of ${text.length} characters is too long to be framed here`);
    const keyBytes = this.#masked ? 4 : 0;
    // UTF-8 takes at least a byte per UTF-16 unit and at most three: more than 125 units is the
    // 16-bit length for certain, at most 41 the 7-bit one; in between, the text is encoded first.
    const wide = text.length > 125;
    const slab = this.#regionFor(4 + keyBytes + 3 * text.length);
    const bytes = slab.bytes;
    const frame = this.#end;
    let payload = frame + (wide ? 4 : 2) + keyBytes;
    const length = encoder.encodeInto(text, bytes.subarray(payload, payload + 3 * text.length)).written;
    if (!wide && length > 125) {
      // Two more header bytes after all: the payload moves up to make room.
      bytes.copyWithin(payload + 2, payload, payload + length);
      payload += 2;
    }
    bytes[frame] = 0x81; // FIN, text
    const maskBit = this.#masked ? 0x80 : 0;
    if (length > 125) {
      bytes[frame + 1] = maskBit | 126; // a 16-bit length follows
      bytes[frame + 2] = length >>> 8;
      bytes[frame + 3] = length & 0xff;
    } else {
      bytes[frame + 1] = maskBit | length;
    }
    if (this.#masked) {
      drawKey(bytes, payload - 4);
      mask(slab.view, payload - 4, payload, length);
    }
    this.#end = payload + length;
    slab.end = this.#end;
    if (this.#schedule !== undefined && !this.#scheduled) {
      this.#scheduled = true;
      this.#schedule(this.#flushScheduled);
    }
  }

  /** The scheduled task: writes what waits while the socket is open, drops it otherwise. */
  readonly #flushScheduled = (): void => {
    this.#scheduled = false;
    if (this.#open?.() ?? true) this.flush();
    else this.discard();
  };

  /** Hands the frames that wait to `write`, as one region (a copy of it when the socket is backlogged). */
  flush(): void {
    if (this.#end === this.#start || this.#slab === undefined) return;
    const bytes = this.#slab.bytes;
    const frames = this.#backlogged?.() === true ? bytes.slice(this.#start, this.#end) : bytes.subarray(this.#start, this.#end);
    this.#start = this.#end;
    this.#write(frames);
  }

  /** Drops the frames that wait (the connection can no longer send them). */
  discard(): void {
    this.#start = this.#end;
  }

  /** The slab this burst's next frame (at most `bytes`) goes into, right after what waits: what waits is written first when it cannot. */
  #regionFor(bytes: number): Slab {
    const slab = this.#slab;
    if (slab !== undefined && slab === current && slab.end === this.#end && slab.bytes.length - slab.end >= bytes) return slab;
    this.flush();
    if (current === undefined || current.bytes.length - current.end < bytes) current = new Slab();
    this.#slab = current;
    this.#start = current.end;
    this.#end = current.end;
    return current;
  }
}
