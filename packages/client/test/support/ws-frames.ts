/**
 * Reads the WebSocket messages out of one direction of a relayed TCP
 * connection (RFC 6455 section 5), so a proxy in a test can say what each
 * side sent — including what it keeps from the other side. Test support: the
 * peers are our own client and server, so a malformed frame is a test
 * failure, thrown, not a case to recover from.
 */

export interface WsMessage {
  readonly binary: boolean;
  readonly data: Uint8Array;
}

const OP_CONTINUATION = 0x0;
const OP_TEXT = 0x1;
const OP_BINARY = 0x2;

/** Feed it the bytes after the HTTP upgrade; it returns each message once its last frame is in. */
export class WsFrameReader {
  #buffer: Buffer = Buffer.alloc(0);
  /** A fragmented message being reassembled: its kind and the fragments so far. */
  #partial: { binary: boolean; parts: Buffer[] } | undefined;

  push(chunk: Uint8Array): WsMessage[] {
    this.#buffer = this.#buffer.length === 0 ? Buffer.from(chunk) : Buffer.concat([this.#buffer, chunk]);
    const messages: WsMessage[] = [];
    for (let frame = this.#nextFrame(); frame !== undefined; frame = this.#nextFrame()) {
      const { fin, opcode, payload } = frame;
      if (opcode >= 0x8) continue; // close, ping, pong: not protocol messages
      if (opcode === OP_CONTINUATION) {
        if (this.#partial === undefined) throw new Error("a continuation frame without a message");
        this.#partial.parts.push(payload);
      } else if (opcode === OP_TEXT || opcode === OP_BINARY) {
        if (this.#partial !== undefined) throw new Error("a new message inside a fragmented one");
        this.#partial = { binary: opcode === OP_BINARY, parts: [payload] };
      } else {
        throw new Error(`unknown opcode ${opcode}`);
      }
      if (fin) {
        messages.push({ binary: this.#partial.binary, data: Buffer.concat(this.#partial.parts) });
        this.#partial = undefined;
      }
    }
    return messages;
  }

  /** The next complete frame at the front of the buffer (unmasked), or undefined until more bytes come. */
  #nextFrame(): { fin: boolean; opcode: number; payload: Buffer } | undefined {
    const buffer = this.#buffer;
    if (buffer.length < 2) return undefined;
    const fin = (buffer[0]! & 0x80) !== 0;
    const opcode = buffer[0]! & 0x0f;
    const masked = (buffer[1]! & 0x80) !== 0;
    let length = buffer[1]! & 0x7f;
    let at = 2;
    if (length === 126) {
      if (buffer.length < 4) return undefined;
      length = buffer.readUInt16BE(2);
      at = 4;
    } else if (length === 127) {
      if (buffer.length < 10) return undefined;
      const long = buffer.readBigUInt64BE(2);
      if (long > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error("a frame longer than any test sends");
      length = Number(long);
      at = 10;
    }
    const maskAt = at;
    if (masked) at += 4;
    if (buffer.length < at + length) return undefined;
    const payload = Buffer.from(buffer.subarray(at, at + length));
    if (masked) for (let i = 0; i < payload.length; i++) payload[i] = payload[i]! ^ buffer[maskAt + (i % 4)]!;
    this.#buffer = buffer.subarray(at + length);
    return { fin, opcode, payload };
  }
}
