/**
 * Small text messages read straight from what a socket delivers (RFC 6455
 * section 5.2), before a general WebSocket receiver sees the bytes.
 * `TextFrameReader` splits the byte stream at frame boundaries: a frame that
 * is a whole message (final, text, no reserved bit, masked when a client
 * sent it, not when a server did), lies whole in one chunk and is small
 * enough is unmasked in place (a client's) and handed on as a view of the
 * chunk; every other frame (control frames, fragments, binary, a frame split
 * across chunks, anything malformed) goes, byte for byte and in order, to
 * the general receiver, which then always starts reading at a frame's first
 * byte and applies its own rules to it.
 *
 * Both Node transports read their sockets this way, with `ws` as the general
 * receiver (`readTextFramesBefore`): `ws`'s receiver took about 0.5 µs to
 * read a 64-byte item's frame on this project's machine (a buffer view for
 * each part of the header and one for the payload, and an event per message).
 *
 * Pure bytes: `Uint8Array` and `DataView`.
 */
import { mask } from "./websocket-masking.js";

/** The longest frame header: 2 bytes, a 64-bit length, a masking key. */
const MAX_HEADER_BYTES = 14;

/** A 64-bit length's high 32 bits above this is beyond 2^53 - 1 bytes, which no receiver reads (and numbers here cannot count). */
const MAX_LENGTH_HIGH_BITS = 0x1f_ffff;

export interface TextFrameReaderOptions<Chunk extends Uint8Array> {
  /**
   * Whose frames these are: a client's (masked, read by a server: the default) or a server's
   * (unmasked, read by a client). Frames masked otherwise go to `other`, whose rules refuse them
   * (RFC 6455 section 5.1).
   */
  readonly masked?: boolean;
  /** Frames whose payload is longer go to `other`: the general receiver applies its own size limit. */
  readonly maxPayloadBytes: number;
  /**
   * A whole-message text frame's payload, unmasked: a view of the chunk's memory, in place. If it
   * throws, the reader hands everything from the next frame on to `other` and rethrows.
   */
  readonly text: (payload: Uint8Array) => void;
  /** Bytes `start` to `end` of `chunk` belong to other frames: hand them to the general receiver, in order with `text`. */
  readonly other: (chunk: Chunk, start: number, end: number) => void;
  /**
   * Whether frames may still be read here, asked before each. Once it says
   * no (the connection is closing), every byte from that frame on goes to
   * `other`, so the general receiver alone decides what is read from a
   * closing connection. Default: always.
   */
  readonly open?: () => boolean;
}

/**
 * Splits one connection's inbound bytes (a client's frames as a server reads
 * them, or a server's as a client does) between whole-message text frames,
 * read here, and everything else, handed to a general receiver. `read`
 * takes each chunk as the socket delivers it.
 */
export class TextFrameReader<Chunk extends Uint8Array = Uint8Array> {
  readonly #maxPayloadBytes: number;
  /** The mask bit a frame read here carries: 0x80 for a client's frames, 0 for a server's. */
  readonly #maskBit: number;
  readonly #text: (payload: Uint8Array) => void;
  readonly #other: (chunk: Chunk, start: number, end: number) => void;
  readonly #open: () => boolean;
  /** Bytes of the frame being handed to `other` still to come. */
  #remaining = 0;
  /** The start of a header the last chunk ended in (already handed to `other`), to learn its frame's length. */
  readonly #header = new Uint8Array(MAX_HEADER_BYTES);
  #headerLength = 0;
  /** A fragmented message is under way: a final text frame now is the general receiver's to refuse (section 5.4). */
  #fragmented = false;
  /** Everything goes to `other` from here on. */
  #passThrough = false;

  constructor(options: TextFrameReaderOptions<Chunk>) {
    this.#maxPayloadBytes = options.maxPayloadBytes;
    this.#maskBit = options.masked === false ? 0 : 0x80;
    this.#text = options.text;
    this.#other = options.other;
    this.#open = options.open ?? (() => true);
  }

  /** Reads one chunk of the connection's bytes. Unmasks the text frames it reads in place. */
  read(chunk: Chunk): void {
    const total = chunk.length;
    if (this.#passThrough) {
      if (total > 0) this.#other(chunk, 0, total);
      return;
    }
    let at = this.#finishHeader(chunk);
    at = this.#forward(chunk, at);
    let view: DataView | undefined;
    while (at < total && this.#remaining === 0) {
      const available = total - at;
      if (available < 2) return this.#keepHeader(chunk, at);
      const first = chunk[at]!;
      const second = chunk[at + 1]!;
      const headerBytes = headerBytesOf(second);
      if (available < headerBytes) return this.#keepHeader(chunk, at);
      const length = payloadLengthAt(chunk, at);
      if (length < 0) return this.#passAll(chunk, at);
      const end = at + headerBytes + length;
      const whole =
        first === 0x81 && (second & 0x80) === this.#maskBit && !this.#fragmented && length <= this.#maxPayloadBytes && end <= total;
      if (!this.#open()) return this.#passAll(chunk, at);
      if (whole) {
        const payload = at + headerBytes;
        if (this.#maskBit !== 0) {
          view ??= new DataView(chunk.buffer, chunk.byteOffset, total);
          mask(view, payload - 4, payload, length);
        }
        at = end;
        try {
          this.#text(new Uint8Array(chunk.buffer, chunk.byteOffset + payload, length));
        } catch (error) {
          // The rest of the chunk and everything after it go to the general receiver, from the
          // next frame's first byte: a throw must not leave this reader a frame boundary behind
          // (reading a frame hidden in another's payload as its own).
          this.#passAll(chunk, at);
          throw error;
        }
        continue;
      }
      this.#noteFragments(first);
      this.#remaining = headerBytes + length;
      at = this.#forward(chunk, at);
    }
  }

  /** Hands on as much of the frame being forwarded as `chunk` holds from `at`; returns where that stops. */
  #forward(chunk: Chunk, at: number): number {
    if (this.#remaining === 0 || at === chunk.length) return at;
    const end = Math.min(chunk.length, at + this.#remaining);
    this.#remaining -= end - at;
    this.#other(chunk, at, end);
    return end;
  }

  /** `chunk` ends in a frame's header: it goes to `other` now, and a copy stays to learn the frame's length. */
  #keepHeader(chunk: Chunk, at: number): void {
    const total = chunk.length;
    this.#header.set(chunk.subarray(at, total), 0);
    this.#headerLength = total - at;
    this.#other(chunk, at, total);
  }

  /** Completes a header the last chunk ended in, from the start of `chunk`; returns the offset after the bytes it took. */
  #finishHeader(chunk: Chunk): number {
    if (this.#headerLength === 0) return 0;
    const header = this.#header;
    let at = 0;
    for (;;) {
      const needed = this.#headerLength < 2 ? 2 : headerBytesOf(header[1]!);
      if (this.#headerLength >= needed) break;
      if (at === chunk.length) {
        if (at > 0) this.#other(chunk, 0, at);
        return at;
      }
      header[this.#headerLength++] = chunk[at++]!;
    }
    // A header kept was incomplete: this chunk gave it at least one byte.
    this.#other(chunk, 0, at);
    this.#headerLength = 0;
    const length = payloadLengthAt(header, 0);
    if (length < 0) {
      this.#passAll(chunk, at);
      return chunk.length;
    }
    this.#noteFragments(header[0]!);
    // The header is all handed on; what follows is the payload's.
    this.#remaining = length;
    return at;
  }

  /** Tracks whether a fragmented message is under way, from a frame handed to `other` (its first byte). */
  #noteFragments(first: number): void {
    const opcode = first & 0x0f;
    const final = first >= 0x80;
    if (opcode === 0x1 || opcode === 0x2) this.#fragmented = !final;
    else if (opcode === 0x0 && final) this.#fragmented = false;
  }

  /** From `at` on, everything goes to `other`. */
  #passAll(chunk: Chunk, at: number): void {
    this.#passThrough = true;
    this.#remaining = 0;
    if (at < chunk.length) this.#other(chunk, at, chunk.length);
  }
}

/**
 * The payload length of the frame whose header starts at `at` of `bytes` (the whole header
 * there); -1 for a 64-bit length beyond 2^53 - 1, which no receiver reads.
 */
function payloadLengthAt(bytes: Uint8Array, at: number): number {
  const length7 = bytes[at + 1]! & 0x7f;
  if (length7 < 126) return length7;
  if (length7 === 126) return (bytes[at + 2]! << 8) | bytes[at + 3]!;
  const high = bytes[at + 2]! * 2 ** 24 + ((bytes[at + 3]! << 16) | (bytes[at + 4]! << 8) | bytes[at + 5]!);
  if (high > MAX_LENGTH_HIGH_BITS) return -1;
  const low = bytes[at + 6]! * 2 ** 24 + ((bytes[at + 7]! << 16) | (bytes[at + 8]! << 8) | bytes[at + 9]!);
  return high * 2 ** 32 + low;
}

/** A header's size from its second byte. */
function headerBytesOf(second: number): number {
  const length7 = second & 0x7f;
  return 2 + (length7 === 126 ? 2 : length7 === 127 ? 8 : 0) + (second >= 0x80 ? 4 : 0);
}

/**
 * A general receiver a `TextFrameReader` can sit in front of: a Node
 * `Writable` written a connection's chunks, as `ws`'s receiver is.
 */
export interface FrameReceiver<Chunk extends Uint8Array> {
  write(chunk: Chunk): boolean;
  /** Set as soon as it refuses a frame (`Writable#errored`): it fails the connection, and nothing after that frame is read. */
  readonly errored: unknown;
  /** Ended by a close frame (`Writable#writableEnded`): nothing after the close frame is read. */
  readonly writableEnded: boolean;
}

export type ReadTextFramesBeforeOptions = Omit<TextFrameReaderOptions<Uint8Array>, "other">;

/**
 * Puts a `TextFrameReader` in front of `receiver`: its `write`, what the
 * socket library calls with each chunk the socket delivers, is replaced by
 * one that reads the whole-message text frames (handed to `options.text`)
 * and writes every other frame's bytes to the receiver as before. Frames are
 * read here only while `options.open()` and the receiver has neither
 * refused a frame nor read a close frame; after a close frame nothing more
 * is written to it, as its own parse stops there. Call it before the
 * receiver is written anything, so that the reader starts at a frame
 * boundary. The replaced `write` returns what the receiver's last write
 * returned (false: stop reading until it drains), true when it was not
 * written.
 */
export function readTextFramesBefore<Chunk extends Uint8Array>(receiver: FrameReceiver<Chunk>, options: ReadTextFramesBeforeOptions): void {
  const write = receiver.write.bind(receiver);
  const open = options.open;
  let flowing = true;
  const reader = new TextFrameReader<Chunk>({
    ...options,
    open: () => receiver.errored == null && (open === undefined || open()),
    other: (chunk, start, end) => {
      if (receiver.writableEnded) return;
      // A part of a Node Buffer is a Buffer: the receiver gets the kind of chunk it was given.
      flowing = write(start === 0 && end === chunk.length ? chunk : (chunk.subarray(start, end) as Chunk));
    },
  });
  receiver.write = (chunk: Chunk): boolean => {
    flowing = true;
    reader.read(chunk);
    return flowing;
  };
}

/** What is used of a `ws` WebSocket (the Node library both transports use) besides its private receiver. */
export interface WsSocketState {
  readonly readyState: number;
  readonly OPEN: number;
}

/**
 * `readTextFramesBefore` in front of a `ws` WebSocket's receiver: the small
 * text frames it would read are read here while the socket is open, and
 * everything else reaches `ws` as before. Call it before the socket delivers
 * anything (on the server at once after the upgrade, on the client on
 * `open`), with `ws` emitting messages synchronously (`allowSynchronousEvents`,
 * its default), so they keep their order with those read here.
 *
 * This leans on `ws`'s private receiver (`WebSocket#_receiver`, the
 * `Writable` its socket listener writes each chunk to; between frames with
 * nothing buffered when `_state` is 0 and `_bufferedBytes` 0). When it is not
 * there as expected (a `ws` release that changed it), nothing changes and
 * this returns false: `ws` reads every frame, slower, never wrong. Both
 * transports' tests check the fast path is in use with the `ws` the lockfile
 * holds.
 *
 * It also returns false, and `ws` reads alone, unless `ws` would read the
 * frames read here as they are read here (`readsAsThisReader`).
 */
export function readWsTextFramesFirst(socket: WsSocketState, options: Omit<ReadTextFramesBeforeOptions, "open">): boolean {
  const receiver: unknown = (socket as unknown as { _receiver?: unknown })._receiver;
  if (typeof receiver !== "object" || receiver === null) return false;
  const fields = receiver as Record<string, unknown>;
  const fresh = typeof fields.write === "function" && fields.errored === null && fields._state === 0 && fields._bufferedBytes === 0;
  if (!fresh || !readsAsThisReader(fields, options)) return false;
  // Not once ws is closing (a close frame read, or this side's own close sent): ws then reads alone.
  readTextFramesBefore(receiver as FrameReceiver<Uint8Array>, { ...options, open: () => socket.readyState === socket.OPEN });
  return true;
}

/**
 * Whether `ws`'s receiver, configured as `fields` say, reads a whole small text frame as the reader
 * does: on the same side (a server's receiver reads masked frames); no extension negotiated (with
 * permessage-deflate a frame may be compressed, and `ws` inflates such a message later, so one
 * read here would overtake it); its messages emitted while it parses (otherwise a message `ws` read
 * from a chunk would come after one read here from later in it); UTF-8 left to the caller's
 * decoder, as here (otherwise `ws` fails a connection that the decoder would fail with another
 * close code); and no size limit below the reader's (`ws` keeps `maxPayload | 0`: a frame between
 * the two would be read here and refused by `ws`; 0 is no limit), the reader's own limit a number
 * (NaN compares false with every length).
 */
function readsAsThisReader(
  fields: Record<string, unknown>,
  options: { readonly masked?: boolean; readonly maxPayloadBytes: number },
): boolean {
  const extensions = fields._extensions;
  const limit = fields._maxPayload;
  return (
    fields._isServer === (options.masked !== false) &&
    typeof extensions === "object" &&
    extensions !== null &&
    Object.keys(extensions).length === 0 &&
    fields._allowSynchronousEvents === true &&
    fields._skipUTF8Validation === true &&
    typeof limit === "number" &&
    options.maxPayloadBytes >= 0 &&
    (limit === 0 || (limit > 0 && options.maxPayloadBytes <= limit))
  );
}
