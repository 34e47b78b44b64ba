/**
 * Behaviour of the message codecs that the vectors do not pin: limits at
 * their exact boundary, payload views, encoder checks, error details and
 * attempt recovery.
 */
import { describe, expect, it } from "vitest";
import {
  type ClientMessage,
  type InputU8Batch,
  LIMITS,
  type Message,
  ProtocolError,
  U64_MAX,
  decodeClientMessage,
  decodeServerMessage,
  encodeClientMessage,
  encodeMessage,
  encodeServerMessage,
  encodeUtf8,
  recoverAttemptId,
} from "../src/index.js";

const ATTEMPT = "ca7e5a82-2064-4c18-8359-806145c1562f";

function rejection(run: () => unknown): ProtocolError {
  try {
    run();
  } catch (error) {
    if (error instanceof ProtocolError) return error;
    throw error;
  }
  throw new Error("expected a ProtocolError");
}

const start = (overrides: Record<string, unknown> = {}) => ({
  type: "invocationStart" as const,
  attemptId: ATTEMPT,
  config: [],
  idempotencyKey: "k",
  methodParameters: { kind: "record", value: { fields: [] } },
  selector: {
    agentType: "echo",
    application: "demo",
    constructorParameters: { kind: "record", value: { fields: [] } },
    environment: "default",
    method: "reverse",
  },
  ...overrides,
});

describe("limits at their boundary", () => {
  it("accepts a text message of exactly 8 MiB and rejects one byte more", () => {
    const head = '{"channel":1,"sequence":"0","type":"inputStreamItem","value":{"kind":"string","value":"';
    const tail = '"},"version":1}';
    const text = (size: number) => head + "a".repeat(size - head.length - tail.length) + tail;
    const message = decodeClientMessage(encodeUtf8(text(LIMITS.maxTextMessageBytes)), false);
    expect(message.type).toBe("inputStreamItem");
    expect(rejection(() => decodeClientMessage(text(LIMITS.maxTextMessageBytes + 1), false)).code).toBe("limit-exceeded");
  });

  it("accepts metadata of exactly 64 KiB and rejects one byte more", () => {
    const head = '{"channel":1,"itemCount":"1","kind":"input-binary","mimeType":"a/';
    const tail = '","sequence":"0","version":1}';
    const metadata = (size: number) => encodeUtf8(head + "b".repeat(size - head.length - tail.length) + tail);
    const frame = (meta: Uint8Array) => {
      const out = new Uint8Array(4 + meta.length + 1);
      new DataView(out.buffer).setUint32(0, meta.length);
      out.set(meta, 4);
      return out;
    };
    const ok = decodeClientMessage(frame(metadata(LIMITS.maxBinaryMetadataBytes)), true);
    // The MIME type is "a/" plus the filler.
    expect(ok.type === "input-binary" && ok.mimeType?.length).toBe(LIMITS.maxBinaryMetadataBytes - head.length - tail.length + 2);
    expect(rejection(() => decodeClientMessage(frame(metadata(LIMITS.maxBinaryMetadataBytes + 1)), true)).code).toBe("limit-exceeded");
  });

  it("accepts a packed u8 payload of exactly 1 MiB and a binary one of exactly 16 MiB", () => {
    const u8 = new Uint8Array(LIMITS.maxPackedU8PayloadBytes).fill(1);
    const batch = decodeClientMessage(encodeMessage({ type: "input-u8", channel: 1, sequence: 0n, payload: u8 }), true);
    expect(batch.type === "input-u8" && batch.payload.length).toBe(LIMITS.maxPackedU8PayloadBytes);
    const blob = new Uint8Array(LIMITS.maxBinaryPayloadBytes);
    const frame = encodeMessage({ type: "output-binary", channel: 1, sequence: 0n, cursorToken: "c", payload: blob });
    const item = decodeServerMessage(frame, true);
    expect(item.type === "output-binary" && item.payload.length).toBe(LIMITS.maxBinaryPayloadBytes);
  });

  it("refuses to encode payloads over their limits, or an empty batch", () => {
    const over = (size: number) => new Uint8Array(size);
    expect(
      rejection(() => encodeMessage({ type: "input-u8", channel: 1, sequence: 0n, payload: over(LIMITS.maxPackedU8PayloadBytes + 1) }))
        .code,
    ).toBe("limit-exceeded");
    expect(
      rejection(() => encodeMessage({ type: "input-binary", channel: 1, sequence: 0n, payload: over(LIMITS.maxBinaryPayloadBytes + 1) }))
        .code,
    ).toBe("limit-exceeded");
    expect(rejection(() => encodeMessage({ type: "input-u8", channel: 1, sequence: 0n, payload: over(0) })).code).toBe("invalid-message");
  });

  it("encodes a text message of exactly 8 MiB and refuses one byte more, as every decoder would", () => {
    // An item whose string value pads the canonical text to an exact size.
    const item = (textBytes: number) => {
      const empty = encodeMessage({ type: "inputStreamItem", channel: 1, sequence: 0n, value: { kind: "string", value: "" } });
      return {
        type: "inputStreamItem" as const,
        channel: 1,
        sequence: 0n,
        value: { kind: "string", value: "é".repeat((textBytes - empty.length) / 2) },
      };
    };
    const atLimit = encodeMessage(item(LIMITS.maxTextMessageBytes));
    expect(encodeUtf8(atLimit).length).toBe(LIMITS.maxTextMessageBytes);
    expect(decodeClientMessage(atLimit, false)).toMatchObject({ type: "inputStreamItem" });
    // Two bytes over, counted in UTF-8: the UTF-16 length is well under the limit.
    const over = item(LIMITS.maxTextMessageBytes + 2);
    expect(rejection(() => decodeClientMessage(JSON.stringify({ ...over, sequence: "0", version: 1 }), false)).code).toBe("limit-exceeded");
    const refused = rejection(() => encodeMessage(over));
    expect(refused.code).toBe("limit-exceeded");
    expect(refused.closeCode).toBe(1009);
  });

  it("accepts 256 config entries of 32 segments, 4096 cursors and an 8192-byte token", () => {
    const config = Array.from({ length: LIMITS.maxConfigEntries }, (_, i) => ({
      path: Array.from({ length: LIMITS.maxConfigPathSegments }, (_, j) => `e${i}s${j}`),
      value: i,
    }));
    expect(decodeClientMessage(encodeMessage(start({ config })), false)).toEqual(start({ config }));
    const cursors = Array.from({ length: LIMITS.maxStreamsPerSession }, (_, i) => `c${i}`);
    const resume = {
      type: "resumeAttach" as const,
      attemptId: ATTEMPT,
      operation: "resume" as const,
      outputCursors: cursors,
      sessionToken: "s".repeat(LIMITS.maxTokenBytes),
    };
    expect(decodeClientMessage(encodeMessage(resume), false)).toEqual(resume);
    expect(rejection(() => encodeMessage({ ...resume, outputCursors: [...cursors, "extra"] })).code).toBe("limit-exceeded");
  });
});

describe("binary payloads", () => {
  it("decode as a view of the input, also inside a larger buffer", () => {
    const frame = encodeMessage({ type: "input-u8", channel: 7, sequence: 5n, payload: new Uint8Array([1, 2, 3]) });
    const pool = new Uint8Array(frame.length + 20);
    pool.set(frame, 10);
    const view = pool.subarray(10, 10 + frame.length);
    const message = decodeClientMessage(view, true) as InputU8Batch;
    expect(message).toEqual({ type: "input-u8", channel: 7, sequence: 5n, payload: new Uint8Array([1, 2, 3]) });
    // The view aliases the input: a caller that reuses its buffer must copy first.
    pool[10 + frame.length - 1] = 9;
    expect(message.payload[2]).toBe(9);
  });

  it("encode into one new buffer that does not alias the payload", () => {
    const payload = new Uint8Array([4, 5, 6]);
    const frame = encodeMessage({ type: "input-binary", channel: 1, sequence: 0n, payload, mimeType: "text/plain" });
    expect(frame.byteOffset).toBe(0);
    expect(frame.buffer.byteLength).toBe(frame.length);
    payload[0] = 0;
    expect(frame[frame.length - 3]).toBe(4);
  });

  it("encode into memory an allocator gives, dirty and larger than needed, with the same bytes", () => {
    const message = { type: "input-u8" as const, channel: 3, sequence: 9n, payload: new Uint8Array([1, 2, 3, 4]) };
    const fresh = encodeMessage(message);
    const memory = new Uint8Array(fresh.length + 50).fill(0xee);
    const asked: number[] = [];
    const frame = encodeClientMessage(message, {
      allocate: (byteLength) => {
        asked.push(byteLength);
        return memory.subarray(10);
      },
    }) as Uint8Array;
    expect(asked).toEqual([fresh.length]);
    expect(frame.buffer).toBe(memory.buffer);
    expect(frame.byteOffset).toBe(10);
    expect(frame).toEqual(fresh);
    expect(decodeClientMessage(frame, true)).toEqual(message);
  });

  it("refuse an allocator's memory that is too short or not a Uint8Array, or its own error, as the caller's internal-error", () => {
    const message = { type: "output-binary" as const, channel: 1, sequence: 0n, cursorToken: "c", payload: new Uint8Array(8) };
    const callerBug = expect.objectContaining({ name: "ProtocolError", code: "internal-error" });
    expect(() => encodeServerMessage(message, { allocate: (n) => new Uint8Array(n - 1) })).toThrow(callerBug);
    expect(() => encodeServerMessage(message, { allocate: () => [] as unknown as Uint8Array })).toThrow(callerBug);
    const boom = new RangeError("out of pooled memory");
    const allocate = (): Uint8Array => {
      throw boom;
    };
    expect(() => encodeServerMessage(message, { allocate })).toThrow(expect.objectContaining({ code: "internal-error", cause: boom }));
  });

  it("accept a Node Buffer, as ws delivers it", () => {
    const frame = Buffer.from(
      encodeMessage({ type: "output-u8", channel: 2, sequence: 0n, cursorToken: "c1", payload: new Uint8Array([7]) }),
    );
    expect(decodeServerMessage(frame, true)).toMatchObject({ type: "output-u8", cursorToken: "c1", sequence: 0n });
  });
});

describe("encoder checks", () => {
  const end = { type: "inputStreamEnd" as const, channel: 1, sequence: 1n };
  it.each([
    ["a number where a bigint belongs", { ...end, sequence: 1 }],
    ["a string where a bigint belongs", { ...end, sequence: "1" }],
    ["a negative bigint", { ...end, sequence: -1n }],
    ["a bigint above 2^64 - 1", { ...end, sequence: U64_MAX + 1n }],
    ["channel 0", { ...end, channel: 0 }],
    ["an upper-case attempt id", start({ attemptId: ATTEMPT.toUpperCase() })],
    ["null for an optional member", { type: "outputStreamEnd", channel: 1, sequence: 0n, outcome: { kind: "ok" }, cursorToken: null }],
    ["the implicit version", { ...end, version: 1 }],
    ["a member of another variant", { ...end, cursorToken: "c" }],
    ["mimeType on a u8 batch", { type: "input-u8", channel: 1, sequence: 0n, payload: new Uint8Array(1), mimeType: "a/b" }],
    ["cursorToken on an input kind", { type: "input-binary", channel: 1, sequence: 0n, payload: new Uint8Array(1), cursorToken: "c" }],
    ["a batch that overflows the sequence", { type: "input-u8", channel: 1, sequence: U64_MAX - 1n, payload: new Uint8Array(2) }],
    ["an item at the last sequence", { type: "inputStreamItem", channel: 1, sequence: U64_MAX, value: { kind: "bool", value: true } }],
    ["a stream reference in config", start({ config: [{ path: ["a"], value: [{ kind: "stream", value: { streamToken: "t" } }] }] })],
    [
      "a non-JSON value inside a SchemaValue",
      { type: "inputStreamItem", channel: 1, sequence: 0n, value: { kind: "x", value: new Date() } },
    ],
    ["an unknown type", { type: "inputStreamBegin", channel: 1 }],
    [
      "duplicate mapping channels",
      {
        type: "inputStreamAck",
        channel: 1,
        highestContiguousSequence: 0n,
        terminal: false,
        mappings: [
          { channel: 2, direction: "output", streamToken: "a" },
          { channel: 2, direction: "output", streamToken: "b" },
        ],
      },
    ],
  ])("refuses %s", (_name, message) => {
    expect(rejection(() => encodeMessage(message as Message)).code).toBe("invalid-message");
  });

  it("writes canonical text whatever the property order of the typed message", () => {
    const shuffled = { sequence: 1n, channel: 1, type: "inputStreamEnd" as const };
    expect(encodeMessage(shuffled)).toBe('{"channel":1,"sequence":"1","type":"inputStreamEnd","version":1}');
  });

  it("encodes a client cancel with any server reason set member, so either side can use it", () => {
    expect(encodeMessage({ type: "streamCancel", channel: 3, reason: "transport-detached" })).toBe(
      '{"channel":3,"reason":"transport-detached","type":"streamCancel","version":1}',
    );
    expect(
      rejection(() => decodeClientMessage('{"channel":3,"reason":"transport-detached","type":"streamCancel","version":1}', false)).code,
    ).toBe("invalid-message");
  });
});

describe("errors", () => {
  it("name the offending member in path and message, never echo long input", () => {
    const text = JSON.stringify({
      type: "invocationAccepted",
      version: 1,
      attemptId: ATTEMPT,
      idempotencyKey: "k",
      sessionToken: "s",
      mappings: [
        { channel: 1, direction: "output", streamToken: "a" },
        { channel: 0, direction: "output", streamToken: "b" },
      ],
    });
    const error = rejection(() => decodeServerMessage(text, false));
    expect(error.path).toBe("mappings[1].channel");
    expect(error.message).toContain("mappings[1].channel");
    expect(error.retryable).toBe(false);
    expect(error.closeCode).toBe(1002);
    const long = rejection(() => decodeClientMessage(`{"${"x".repeat(10_000)}":1,"type":"inputStreamEnd","version":1}`, false));
    expect(long.message.length).toBeLessThan(200);
  });

  it("never reveal token values", () => {
    const secret = "gai1_SECRET-TOKEN-VALUE";
    const error = rejection(() =>
      decodeClientMessage(
        JSON.stringify({
          type: "resumeAttach",
          version: 1,
          attemptId: ATTEMPT,
          operation: "resume",
          outputCursors: [secret, secret],
          sessionToken: secret,
        }),
        false,
      ),
    );
    expect(error.message).not.toContain("SECRET");
  });

  it("say limit-exceeded, with close code 1009, for oversized input", () => {
    const error = rejection(() => decodeClientMessage(new Uint8Array(LIMITS.maxTextMessageBytes + 1), false));
    expect(error.code).toBe("limit-exceeded");
    expect(error.closeCode).toBe(1009);
  });
});

describe("recoverAttemptId", () => {
  const broken = (message: Record<string, unknown>) => JSON.stringify({ ...message, version: 1 });

  it("recovers the attempt of a start or resume that fails later rules", () => {
    const badStart = broken({ ...start(), config: "none" });
    expect(rejection(() => decodeClientMessage(badStart, false)).code).toBe("invalid-message");
    expect(recoverAttemptId(badStart)).toBe(ATTEMPT);
    expect(recoverAttemptId(encodeUtf8(badStart))).toBe(ATTEMPT);
    const badResume = broken({ type: "resumeAttach", attemptId: ATTEMPT, operation: "pause" });
    expect(recoverAttemptId(badResume)).toBe(ATTEMPT);
    expect(recoverAttemptId(broken({ ...start(), version: 2 }))).toBe(ATTEMPT);
  });

  it.each([
    ["invalid JSON", `{"type":"invocationStart","attemptId":"${ATTEMPT}"`],
    ["a duplicate member", `{"type":"invocationStart","attemptId":"${ATTEMPT}","attemptId":"${ATTEMPT}"}`],
    ["a non-start message", broken({ type: "inputStreamItem", attemptId: ATTEMPT })],
    ["an attempt id that is not a UUIDv4", broken({ ...start(), attemptId: ATTEMPT.toUpperCase() })],
    ["a top-level array", `[{"type":"invocationStart","attemptId":"${ATTEMPT}"}]`],
  ])("gives up on %s", (_name, text) => {
    expect(recoverAttemptId(text)).toBeUndefined();
  });

  it("recovers the attempt of a start that nests too deep or is broken inside a value", () => {
    const deep = "[".repeat(5000) + "]".repeat(5000);
    const tooDeep = `{"attemptId":"${ATTEMPT}","config":${deep},"type":"invocationStart","version":1}`;
    expect(rejection(() => decodeClientMessage(tooDeep, false)).code).toBe("limit-exceeded");
    expect(recoverAttemptId(tooDeep)).toBe(ATTEMPT);
    const brokenInside = `{"type":"resumeAttach","outputCursors":[{"a":1,"a":2}, tru],"attemptId":"${ATTEMPT}"}`;
    expect(recoverAttemptId(brokenInside)).toBe(ATTEMPT);
  });

  it.each([
    ["a repeated type", `{"type":"invocationStart","type":"resumeAttach","attemptId":"${ATTEMPT}"}`],
    ["a non-string attempt id", `{"type":"invocationStart","attemptId":["${ATTEMPT}"]}`],
    ["an unterminated nested value", `{"type":"invocationStart","attemptId":"${ATTEMPT}","config":[[[]]`],
    ["trailing garbage in the top level", `{"type":"invocationStart","attemptId":"${ATTEMPT}" x}`],
    // Only whitespace may follow the object: anything else makes the text something other than one object.
    [
      "a second object after the first",
      `{"type":"invocationStart","attemptId":"${ATTEMPT}"}{"type":"resumeAttach","attemptId":"0dff1c71-f12f-4bb1-996c-23d693bdc825"}`,
    ],
    ["text after the object", `{"type":"invocationStart","attemptId":"${ATTEMPT}"} ]]] not json`],
    ["a comma after the object", `{"type":"invocationStart","attemptId":"${ATTEMPT}"},`],
    ["an empty object followed by another", `{} {"type":"invocationStart","attemptId":"${ATTEMPT}"}`],
  ])("gives up on %s", (_name, text) => {
    expect(recoverAttemptId(text)).toBeUndefined();
  });

  it("recovers the attempt of an object with only whitespace around it", () => {
    expect(recoverAttemptId(` \r\n\t${broken({ ...start(), config: "none" })} \r\n\t`)).toBe(ATTEMPT);
  });

  it("gives up on binary frames, which cannot be a first message", () => {
    expect(recoverAttemptId(broken(start()), true)).toBeUndefined();
  });
});

describe("decoding", () => {
  it("does not modify its input and returns a fresh message each time", () => {
    const bytes = encodeUtf8(encodeMessage(start()));
    const copy = bytes.slice();
    const first = decodeClientMessage(bytes, false) as ClientMessage;
    const second = decodeClientMessage(bytes, false);
    expect(bytes).toEqual(copy);
    expect(first).toEqual(second);
    expect(first).not.toBe(second);
  });

  it("accepts insignificant whitespace and any member order", () => {
    const text = ' {\n "version" : 1 , "sequence":"3",\t"type":"inputStreamEnd", "channel" :9 }\r\n';
    expect(decodeClientMessage(text, false)).toEqual({ type: "inputStreamEnd", channel: 9, sequence: 3n });
  });

  it("reads channel and version by value, as docs/protocol/json.md decides", () => {
    expect(decodeClientMessage('{"channel":1.0,"sequence":"0","type":"inputStreamEnd","version":1e0}', false)).toEqual({
      type: "inputStreamEnd",
      channel: 1,
      sequence: 0n,
    });
  });

  it("rejects a text message sent in a binary frame and the reverse", () => {
    const text = encodeMessage({ type: "inputStreamEnd", channel: 1, sequence: 0n });
    // As an envelope, the first four bytes ('{"ch') read as a metadata length far over 64 KiB.
    expect(rejection(() => decodeClientMessage(encodeUtf8(text), true)).code).toBe("limit-exceeded");
    expect(rejection(() => decodeClientMessage(encodeUtf8(" ".repeat(4) + text), true)).code).toBe("limit-exceeded");
    const binary = encodeMessage({ type: "input-u8", channel: 1, sequence: 0n, payload: new Uint8Array([1]) });
    expect(rejection(() => decodeClientMessage(binary, false)).code).toBe("invalid-message");
  });
});
