/**
 * `TextFrameReader` in front of `ws`'s receiver, against `ws`'s receiver
 * alone (RFC 6455 section 5): for any stream of client frames, valid or
 * not (whole text messages small and large, binary, fragmented messages
 * with control frames between their fragments, pings, a close, unmasked or
 * reserved-bit frames, lengths in a longer form than needed, payloads over
 * the limit, lengths beyond 2^53), cut into chunks anywhere, the two read
 * the same messages, control frames and refusal, in the same order; and the
 * reader reads the small whole text frames itself.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import * as ws from "ws";
import { readTextFramesBefore, readWsTextFramesFirst, TextFrameReader } from "../src/websocket-frame-reader.js";

/** `ws`'s frame reader: exported by the package, absent from its type definitions. */
interface WsReceiver {
  on(event: "message", listener: (data: Buffer, isBinary: boolean) => void): void;
  on(event: "ping" | "pong", listener: (data: Buffer) => void): void;
  on(event: "conclude", listener: (code: number, reason: Buffer) => void): void;
  on(event: "error", listener: (error: Error & { code?: string }) => void): void;
  write(chunk: Buffer): boolean;
  readonly errored: Error | null;
  readonly writableEnded: boolean;
}
const { Receiver } = ws as unknown as {
  Receiver: new (options: { isServer: boolean; maxPayload: number; skipUTF8Validation: boolean }) => WsReceiver;
};

/** What a receiver read, in order: each message, control frame, close and refusal. */
type Event = string;

/**
 * Which side reads: a server reads a client's frames (masked), a client a server's (unmasked).
 * The frames below are the reading side's peer's, valid or not.
 */
type Side = "server" | "client";

/** A receiver as the transports configure `ws`'s (UTF-8 left to the strict decoder), recording what it reads. */
function wsReceiver(side: Side, maxPayload: number, events: Event[]): { readonly receiver: WsReceiver; readonly concluded: () => boolean } {
  const receiver = new Receiver({ isServer: side === "server", maxPayload, skipUTF8Validation: true });
  let concluded = false;
  receiver.on("message", (data, isBinary) => events.push(`${isBinary ? "binary" : "text"} ${data.toString("hex")}`));
  receiver.on("ping", (data) => events.push(`ping ${data.toString("hex")}`));
  receiver.on("pong", (data) => events.push(`pong ${data.toString("hex")}`));
  receiver.on("conclude", (code) => {
    concluded = true;
    events.push(`close ${code}`);
  });
  // The refusal itself is emitted a tick later; the receiver knows at once (errored).
  receiver.on("error", () => {});
  return { receiver, concluded: () => concluded };
}

function refusal(receiver: WsReceiver): Event[] {
  const error = receiver.errored as (Error & { code?: string }) | null;
  return error === null ? [] : [`refused ${error.code ?? error.message}`];
}

/** `ws`'s receiver alone, fed the chunks as a socket delivers them (stopping, as `ws` does, at a close frame or a refusal). */
function readByWs(side: Side, chunks: readonly Buffer[], maxPayload: number): Event[] {
  const events: Event[] = [];
  const { receiver, concluded } = wsReceiver(side, maxPayload, events);
  for (const chunk of chunks) {
    if (concluded() || receiver.errored !== null) break;
    receiver.write(chunk);
  }
  return [...events, ...refusal(receiver)];
}

/**
 * The reader in front of `ws`'s receiver, as the transports put it there (`readTextFramesBefore`,
 * `open` standing for the socket's readyState, which a close frame ends); `read` counts the text
 * messages the reader read itself.
 */
function readByReader(side: Side, chunks: readonly Buffer[], maxPayload: number, readerLimit: number): { events: Event[]; read: number } {
  const events: Event[] = [];
  const { receiver, concluded } = wsReceiver(side, maxPayload, events);
  let read = 0;
  readTextFramesBefore(receiver, {
    maxPayloadBytes: readerLimit,
    masked: side === "server",
    text: (payload) => {
      read++;
      events.push(`text ${Buffer.from(payload).toString("hex")}`);
    },
    open: () => !concluded(),
  });
  for (const chunk of chunks) {
    if (concluded() || receiver.errored !== null) break;
    receiver.write(chunk);
  }
  return { events: [...events, ...refusal(receiver)], read };
}

/** The same chunks read by `ws` alone and by the reader in front of it; `ws` is given copies, since the reader unmasks in place. */
function readBothWays(
  side: Side,
  chunks: readonly Buffer[],
  maxPayload: number,
  readerLimit: number,
): { alone: Event[]; events: Event[]; read: number } {
  const alone = readByWs(
    side,
    chunks.map((chunk) => Buffer.from(chunk)),
    maxPayload,
  );
  return { alone, ...readByReader(side, chunks, maxPayload, readerLimit) };
}

/** One frame as a client writes it: `first` is FIN, RSV and opcode; `lengthForm` the length's encoding (shortest unless forced). */
interface FrameSpec {
  readonly first: number;
  readonly payload: Uint8Array;
  readonly masked: boolean;
  readonly lengthForm: "shortest" | "16" | "64";
  readonly key: number;
}

function frameBytes(frame: FrameSpec): Uint8Array {
  const length = frame.payload.length;
  const form = frame.lengthForm === "shortest" ? (length < 126 ? "7" : length < 65536 ? "16" : "64") : frame.lengthForm;
  const lengthBytes = form === "7" ? 0 : form === "16" ? 2 : 8;
  const keyBytes = frame.masked ? 4 : 0;
  const bytes = new Uint8Array(2 + lengthBytes + keyBytes + length);
  const view = new DataView(bytes.buffer);
  bytes[0] = frame.first;
  const maskBit = frame.masked ? 0x80 : 0;
  if (form === "7") bytes[1] = maskBit | length;
  else if (form === "16") {
    bytes[1] = maskBit | 126;
    view.setUint16(2, length);
  } else {
    bytes[1] = maskBit | 127;
    view.setUint32(2, Math.floor(length / 2 ** 32));
    view.setUint32(6, length >>> 0);
  }
  const payloadAt = 2 + lengthBytes + keyBytes;
  if (frame.masked) view.setUint32(2 + lengthBytes, frame.key);
  for (let i = 0; i < length; i++)
    bytes[payloadAt + i] = frame.masked ? frame.payload[i]! ^ bytes[2 + lengthBytes + (i % 4)]! : frame.payload[i]!;
  return bytes;
}

const payload = (maxLength: number) => fc.uint8Array({ maxLength });
const key = fc.integer({ min: 0, max: 0xffff_ffff });
/** Sequences of frames the reading side's peer sends (`masked`: a client), mostly valid, now and then not. */
const framesOf = (masked: boolean): fc.Arbitrary<FrameSpec[][]> => {
  const frame = (first: number, body: fc.Arbitrary<Uint8Array>, maskedHere = masked): fc.Arbitrary<FrameSpec> =>
    fc.record({
      first: fc.constant(first),
      payload: body,
      masked: fc.constant(maskedHere),
      lengthForm: fc.constant("shortest" as const),
      key,
    });
  return fc.array(
    fc.oneof(
      { weight: 12, arbitrary: frame(0x81, payload(200)).map((f) => [f]) },
      { weight: 3, arbitrary: frame(0x81, fc.uint8Array({ minLength: 120, maxLength: 1200 })).map((f) => [f]) },
      { weight: 2, arbitrary: frame(0x82, payload(300)).map((f) => [f]) },
      { weight: 2, arbitrary: frame(0x89, payload(125)).map((f) => [f]) },
      { weight: 1, arbitrary: frame(0x8a, payload(20)).map((f) => [f]) },
      {
        // A fragmented message, a ping between its fragments.
        weight: 2,
        arbitrary: fc
          .tuple(fc.constantFrom(0x01, 0x02), payload(100), payload(100), payload(10), payload(100))
          .chain(([opcode, a, b, ping, c]) =>
            fc.tuple(
              frame(opcode, fc.constant(a)),
              frame(0x00, fc.constant(b)),
              frame(0x89, fc.constant(ping)),
              frame(0x80, fc.constant(c)),
            ),
          ),
      },
      // A whole text frame inside a fragmented message: a protocol error.
      { weight: 1, arbitrary: fc.tuple(frame(0x01, payload(20)), frame(0x81, payload(20))) },
      // A length in a longer form than needed: ws reads it; so must the pair.
      {
        weight: 1,
        arbitrary: fc
          .record({
            first: fc.constant(0x81),
            payload: payload(300),
            masked: fc.constant(masked),
            lengthForm: fc.constantFrom("16" as const, "64" as const),
            key,
          })
          .map((f) => [f]),
      },
      { weight: 1, arbitrary: frame(0x81, payload(40), !masked).map((f) => [f]) }, // masked the other way: refused
      { weight: 1, arbitrary: frame(0xc1, payload(40)).map((f) => [f]) }, // RSV1 without an extension: refused
      { weight: 1, arbitrary: frame(0x88, fc.constant(Uint8Array.of(0x03, 0xe8))).map((f) => [f]) }, // close 1000
    ),
    { maxLength: 40 },
  );
};

/** The stream cut at `cuts` (fractions of its length), each chunk its own buffer, some at an offset in a larger one (as a socket's reads are). */
function chunksOf(stream: Uint8Array, cuts: readonly number[], offsets: readonly number[]): Buffer[] {
  const points = [...new Set(cuts.map((cut) => Math.floor(cut * stream.length)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let from = 0;
  for (const [i, point] of [...points, stream.length].entries()) {
    if (point <= from) continue;
    const offset = offsets[i % Math.max(1, offsets.length)] ?? 0;
    const backing = Buffer.alloc(offset + point - from + 3);
    backing.set(stream.subarray(from, point), offset);
    chunks.push(backing.subarray(offset, offset + point - from));
    from = point;
  }
  return chunks;
}

const concat = (parts: readonly Uint8Array[]): Uint8Array => Buffer.concat(parts.map((p) => Buffer.from(p)));

describe.each([
  ["a server's, reading a client's masked frames", "server" as const],
  ["a client's, reading a server's unmasked frames", "client" as const],
])("TextFrameReader in front of ws's receiver: %s", (_, side) => {
  const masked = side === "server";
  it("reads what ws alone reads, in order, whatever the frames and wherever the chunks end", () => {
    fc.assert(
      fc.property(
        framesOf(masked),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 30 }),
        fc.array(fc.integer({ min: 0, max: 7 }), { maxLength: 5 }),
        fc.constantFrom(1024, 300, 64),
        (groups, cuts, offsets, readerLimit) => {
          const stream = concat(groups.flat().map(frameBytes));
          const { alone, events } = readBothWays(side, chunksOf(stream, cuts, offsets), 1024, readerLimit);
          expect(events).toEqual(alone);
        },
      ),
      { numRuns: 400 },
    );
  });

  it("reads a payload over ws's limit as ws refuses it: 1009, the messages before it read", () => {
    const before = frameBytes({ first: 0x81, payload: Uint8Array.of(1, 2, 3), masked, lengthForm: "shortest", key: 7 });
    const over = frameBytes({ first: 0x81, payload: new Uint8Array(200), masked, lengthForm: "shortest", key: 9 });
    const { alone, events } = readBothWays(side, [Buffer.from(concat([before, over, before]))], 100, 100);
    expect(alone).toEqual(["text 010203", "refused WS_ERR_UNSUPPORTED_MESSAGE_LENGTH"]);
    expect(events).toEqual(alone);
  });

  it("hands a length beyond 2^53 to ws, which refuses it, and reads nothing after it", () => {
    const small = frameBytes({ first: 0x81, payload: Uint8Array.of(5), masked, lengthForm: "shortest", key: 1 });
    const huge = Uint8Array.of(0x82, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 0, 0, 0, 0);
    for (const cut of [1, small.length + 3, small.length + 12]) {
      const stream = concat([small, huge, small]);
      const chunks = [Buffer.from(stream.subarray(0, cut)), Buffer.from(stream.subarray(cut))];
      const { alone, events } = readBothWays(side, chunks, 1 << 20, 1 << 20);
      expect(alone[0]).toBe("text 05");
      expect(alone.at(-1)).toMatch(/^refused/);
      expect(events).toEqual(alone);
    }
  });

  it("reads the small whole text frames itself, even when chunks end inside frames", () => {
    const items = Array.from({ length: 1000 }, (_, i) =>
      frameBytes({ first: 0x81, payload: Buffer.from(`{"item":${i}}`), masked, lengthForm: "shortest", key: i * 2654435761 }),
    );
    // After a fragmented message (with a ping between its fragments), whole text frames are read here again.
    const fragmented = [
      { first: 0x01, payload: Uint8Array.of(1) },
      { first: 0x89, payload: Uint8Array.of(2) },
      { first: 0x80, payload: Uint8Array.of(3) },
    ].map((f) => frameBytes({ ...f, masked, lengthForm: "shortest", key: 5 }));
    const stream = concat([...fragmented, ...items]);
    // Chunks of 4 KiB: most frames lie whole in one; those cut by a chunk's end go to ws.
    const chunks: Buffer[] = [];
    for (let at = 0; at < stream.length; at += 4096) chunks.push(Buffer.from(stream.subarray(at, at + 4096)));
    const { alone, events, read } = readBothWays(side, chunks, 1 << 20, 1 << 16);
    expect(events).toEqual(alone);
    expect(events).toHaveLength(1002);
    expect(read).toBeGreaterThan(1000 - chunks.length);
  });

  it("reads the text frames after a frame of 16- or 64-bit length itself, whether its header lies whole in a chunk or is cut", () => {
    const text = (n: number) => frameBytes({ first: 0x81, payload: Uint8Array.of(n), masked, lengthForm: "shortest", key: n });
    for (const [length, lengthForm] of [
      [300, "16"],
      [70_000, "64"],
      [5, "64"],
    ] as const) {
      const big = frameBytes({ first: 0x82, payload: new Uint8Array(length).fill(7), masked, lengthForm, key: 3 });
      const stream = concat([text(1), big, text(2), text(3)]);
      const bigStart = text(1).length;
      // Whole in one chunk; cut inside the big frame's header (its length learned from the carried part); cut inside its payload.
      for (const cut of [stream.length, bigStart + 3, bigStart + big.length - 1]) {
        const chunks = [Buffer.from(stream.subarray(0, cut)), Buffer.from(stream.subarray(cut))].filter((c) => c.length > 0);
        const { alone, events, read } = readBothWays(side, chunks, 1 << 20, 1 << 20);
        expect(events).toEqual(alone);
        expect(events).toHaveLength(4);
        // Every text frame, the ones after the long one included: its length was read right.
        expect(read).toBe(3);
      }
    }
  });

  it("hands everything to ws once the connection is no longer open, from the next frame on", () => {
    const item = (n: number) => frameBytes({ first: 0x81, payload: Uint8Array.of(n), masked, lengthForm: "shortest", key: n });
    const texts: number[] = [];
    const others: Array<[number, number]> = [];
    let open = true;
    const reader = new TextFrameReader({
      masked,
      maxPayloadBytes: 100,
      text: (payload) => {
        texts.push(payload[0]!);
        if (payload[0] === 2) open = false;
      },
      other: (_chunk, start, end) => others.push([start, end]),
      open: () => open,
    });
    const stream = concat([item(1), item(2), item(3), item(4)]);
    reader.read(stream);
    reader.read(Uint8Array.of(1, 2, 3));
    reader.read(new Uint8Array(0));
    expect(texts).toEqual([1, 2]);
    const frameLength = item(1).length;
    expect(others).toEqual([
      [2 * frameLength, 4 * frameLength],
      [0, 3],
    ]);
  });

  it("reads what ws alone reads when chunks are single bytes (headers of every length form cut everywhere) or empty", () => {
    const frame = (first: number, payload: Uint8Array, lengthForm: FrameSpec["lengthForm"] = "shortest") =>
      frameBytes({ first, payload, masked, lengthForm, key: 0x1234_5678 });
    const bytes = (n: number) => Uint8Array.from({ length: n }, (_, i) => i % 251);
    const before = concat([frame(0x81, bytes(5)), frame(0x81, bytes(300)), frame(0x81, bytes(40), "64")]);
    // A length needing the 64-bit form: its header and the ends of its payload come a byte at a time,
    // the middle of its payload in 4 KiB chunks. Single bytes there too would only time ws's
    // receiver, whose queue of 70 000 buffers makes reading them quadratic (seconds on a busy machine).
    const long = frame(0x82, bytes(70_000));
    const after = concat([
      frame(0x01, bytes(3)),
      frame(0x89, bytes(2)),
      frame(0x80, bytes(4)),
      frame(0x81, bytes(7), "16"),
      frame(0x88, Uint8Array.of(0x03, 0xe8)),
      frame(0x81, bytes(9)),
    ]);
    const oneByteEach = (part: Uint8Array) => Array.from(part, (byte) => Buffer.of(byte));
    const inChunks = (part: Uint8Array) => {
      const chunks: Buffer[] = [];
      for (let at = 0; at < part.length; at += 4096) chunks.push(Buffer.from(part.subarray(at, at + 4096)));
      return chunks;
    };
    const edge = 14 + 32; // the long frame's header (14 bytes at most, with a mask key) and 32 payload bytes
    const chunks = [
      ...oneByteEach(before),
      ...oneByteEach(long.subarray(0, edge)),
      ...inChunks(long.subarray(edge, long.length - 32)),
      ...oneByteEach(long.subarray(long.length - 32)),
      ...oneByteEach(after),
    ].flatMap((chunk, i) => (i % 50 === 0 ? [Buffer.alloc(0), chunk] : [chunk]));
    const { alone, events } = readBothWays(side, chunks, 1 << 20, 1 << 16);
    expect(alone.at(-1)).toBe("close 1000");
    expect(events).toEqual(alone);
  });

  it("hands a length beyond 2^53 whose header ends a chunk to ws, and then everything", () => {
    const huge = Uint8Array.of(0x82, (masked ? 0x80 : 0) | 127, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, ...(masked ? [1, 2, 3, 4] : []));
    const small = frameBytes({ first: 0x81, payload: Uint8Array.of(5), masked, lengthForm: "shortest", key: 1 });
    const chunks = () => [Buffer.from(huge.subarray(0, 3)), Buffer.from(huge.subarray(3)), Buffer.from(small), Buffer.alloc(0)];
    const { alone, events } = readBothWays(side, chunks(), 1 << 20, 1 << 20);
    expect(alone.at(-1)).toMatch(/^refused/);
    expect(events).toEqual(alone);
  });

  it("hands everything from the next frame on to ws when the text callback throws, and rethrows", () => {
    const frame = (first: number, payload: Uint8Array, key: number) => frameBytes({ first, payload, masked, lengthForm: "shortest", key });
    // A binary frame whose payload ends in the bytes of a text frame: only a reader that lost its
    // place would read that as a frame.
    const hidden = frame(0x81, Buffer.from("EVIL"), 0);
    const binary = frame(0x82, concat([Uint8Array.of(1, 2), hidden]), 0);
    const boom = frame(0x81, Buffer.from("boom"), 0);
    const texts: string[] = [];
    const others: Array<[number, number, number]> = [];
    let chunkIndex = 0;
    const reader = new TextFrameReader({
      masked,
      maxPayloadBytes: 100,
      text: (payload) => {
        texts.push(Buffer.from(payload).toString());
        if (texts.length === 1) throw new Error("the callback failed");
      },
      other: (_chunk, start, end) => others.push([chunkIndex, start, end]),
    });
    const stream = concat([boom, binary]);
    // Cut just before the hidden frame's header.
    const cut = stream.length - hidden.length;
    expect(() => reader.read(stream.slice(0, cut))).toThrow("the callback failed");
    chunkIndex = 1;
    reader.read(stream.slice(cut));
    reader.read(frame(0x81, Buffer.from("next"), 3));
    expect(texts).toEqual(["boom"]);
    expect(others).toEqual([
      [0, boom.length, cut],
      [1, 0, hidden.length],
      [1, 0, frame(0x81, Buffer.from("next"), 3).length],
    ]);
  });

  it("reads every frame with no open() given, and an empty chunk changes nothing", () => {
    const texts: number[] = [];
    const reader = new TextFrameReader({ masked, maxPayloadBytes: 100, text: (payload) => texts.push(payload[0]!), other: () => {} });
    reader.read(new Uint8Array(0));
    reader.read(
      concat([1, 2, 3].map((n) => frameBytes({ first: 0x81, payload: Uint8Array.of(n), masked, lengthForm: "shortest", key: n }))),
    );
    expect(texts).toEqual([1, 2, 3]);
  });
});

describe("readWsTextFramesFirst", () => {
  /** A stand-in for a `ws` WebSocket: its state, and a real `ws` receiver where `ws` keeps it. */
  const socketWith = (receiver: unknown) => ({ readyState: 1, OPEN: 1, _receiver: receiver });
  const client = (n: number) =>
    Buffer.from(frameBytes({ first: 0x81, payload: Uint8Array.of(n), masked: true, lengthForm: "shortest", key: n }));

  it("reads a fresh receiver's text frames while the socket is open, then leaves them to ws", () => {
    const events: Event[] = [];
    const { receiver } = wsReceiver("server", 1 << 20, events);
    const socket = socketWith(receiver);
    const read: number[] = [];
    expect(readWsTextFramesFirst(socket, { maxPayloadBytes: 100, masked: true, text: (payload) => read.push(payload[0]!) })).toBe(true);
    receiver.write(client(1));
    socket.readyState = 2; // closing: ws reads alone
    receiver.write(client(2));
    expect(read).toEqual([1]);
    expect(events).toEqual(["text 02"]);
  });

  it("changes nothing for a receiver that would read a small text frame otherwise than the reader", () => {
    const options = { maxPayloadBytes: 100, masked: true, text: () => {} };
    const receiver = (settings: Record<string, unknown>) =>
      new Receiver({ isServer: true, maxPayload: 1 << 20, skipUTF8Validation: true, ...settings } as never);
    // As the transports configure ws (maxPayload 0 is no limit): read here.
    expect(readWsTextFramesFirst(socketWith(receiver({})), options)).toBe(true);
    expect(readWsTextFramesFirst(socketWith(receiver({ maxPayload: 0 })), options)).toBe(true);
    expect(readWsTextFramesFirst(socketWith(receiver({ maxPayload: 100 })), options)).toBe(true);
    for (const settings of [
      { isServer: false }, // a client's receiver: the server's frames, unmasked
      { extensions: { "permessage-deflate": {} } }, // compressed messages inflate later
      { allowSynchronousEvents: false }, // one message per tick
      { skipUTF8Validation: false }, // ws fails invalid UTF-8 with its own close code
      { maxPayload: 99 }, // a limit below the reader's
    ]) {
      expect(readWsTextFramesFirst(socketWith(receiver(settings)), options), JSON.stringify(settings)).toBe(false);
    }
    expect(readWsTextFramesFirst(socketWith(receiver({})), { ...options, maxPayloadBytes: Number.NaN })).toBe(false);
    // The same limit given to both, beyond 32 bits: ws keeps 100 of it (maxPayload | 0), the reader would not.
    const beyond = 2 ** 32 + 100;
    expect(readWsTextFramesFirst(socketWith(receiver({ maxPayload: beyond })), { ...options, maxPayloadBytes: beyond })).toBe(false);
    expect(readWsTextFramesFirst(socketWith(receiver({ isServer: false })), { ...options, masked: false })).toBe(true);
  });

  it("changes nothing for a socket whose receiver is missing, has read something, or has failed", () => {
    const options = { maxPayloadBytes: 100, masked: true, text: () => {} };
    expect(readWsTextFramesFirst(socketWith(undefined), options)).toBe(false);
    expect(readWsTextFramesFirst(socketWith({ write: () => true }), options)).toBe(false);
    const partway = wsReceiver("server", 1 << 20, []).receiver;
    partway.write(client(1).subarray(0, 3));
    expect(readWsTextFramesFirst(socketWith(partway), options)).toBe(false);
    const failed = wsReceiver("server", 1 << 20, []).receiver;
    failed.write(Buffer.from(frameBytes({ first: 0x81, payload: Uint8Array.of(1), masked: false, lengthForm: "shortest", key: 0 })));
    expect(readWsTextFramesFirst(socketWith(failed), options)).toBe(false);
  });
});
