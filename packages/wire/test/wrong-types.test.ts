/**
 * A table of wrong-typed inputs fed to every public entry point, in every
 * argument position: each is refused with a ProtocolError (or, for
 * recoverAttemptId, with `undefined`), never a TypeError or RangeError. An
 * object of the caller's that throws when it is read (a getter, a proxy's
 * trap) is the caller's bug, `internal-error` with the original as its cause,
 * wherever the function reads it; where only strings or bytes are taken, it
 * is refused like any other wrong type, without being read. The small
 * helpers (UTF-8, `getMember`, `EnvelopePool`) refuse a wrong-typed argument
 * the same way, with `internal-error`; what `getMember` reads of an object
 * passes through it unchanged, for the decoder built on it to report.
 */
import { describe, expect, it } from "vitest";
import {
  EnvelopePool,
  ProtocolError,
  canonicalJson,
  compareCodePoints,
  decodeUtf8,
  decodeClientMessage,
  decodeBearerSubprotocol,
  decodeServerMessage,
  encodeBearerSubprotocol,
  encodeClientMessage,
  encodeMessage,
  encodeServerMessage,
  encodeUtf8,
  getMember,
  isProtocolError,
  isWellFormedText,
  parseStrictJson,
  recoverAttemptId,
  utf8ByteLength,
} from "../src/index.js";

const cyclic: Record<string, unknown> = { type: "inputStreamEnd" };
cyclic["self"] = cyclic;

const thrownByCaller = new Error("thrown by the caller's object");
const fail = (): never => {
  throw thrownByCaller;
};
/** Every trap throws. */
const hostileProxy = new Proxy({}, { get: fail, has: fail, ownKeys: fail, getPrototypeOf: fail, getOwnPropertyDescriptor: fail });
/** Plain, with a throwing getter for every member an entry point reads first. */
const throwingGetters = Object.defineProperties(
  {},
  Object.fromEntries(["type", "maxBytes", "maxDepth", "what", "a"].map((name) => [name, { enumerable: true, get: fail }])),
);
/** The values whose own code throws when they are read. */
const THROWS_WHEN_READ: ReadonlySet<unknown> = new Set([hostileProxy, throwingGetters]);

const WRONG: readonly (readonly [string, unknown])[] = [
  ["undefined", undefined],
  ["null", null],
  ["zero", 0],
  ["NaN", Number.NaN],
  ["a number", 42],
  ["a bigint", 1n],
  ["true", true],
  ["a symbol", Symbol("frame")],
  ["a function", () => "{}"],
  ["an empty object", {}],
  ["an array", [1, 2]],
  ["an array of bytes", [0x7b, 0x7d]],
  ["an ArrayBuffer", new ArrayBuffer(8)],
  ["a DataView", new DataView(new ArrayBuffer(8))],
  ["a Uint16Array", new Uint16Array([0x7b, 0x7d])],
  ["a Date", new Date(0)],
  ["a Map", new Map([["type", "inputStreamEnd"]])],
  ["a String object", new String('{"type":"inputStreamEnd"}')],
  ["an object with a cycle", cyclic],
  ["a Promise", Promise.resolve("{}")],
  ["an object without a prototype", Object.create(null) as object],
  ["a proxy whose every trap throws", hostileProxy],
  ["an object whose getters throw", throwingGetters],
];

/** `internal-error`, the calling code's bug, refused without reading the argument (so no cause). */
function expectWrongArgument(run: () => unknown): void {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ProtocolError);
    expect(error).toMatchObject({ code: "internal-error" });
    expect((error as Error).cause).toBeUndefined();
    return;
  }
  throw new Error("expected a ProtocolError");
}

function expectProtocolError(run: () => unknown): void {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ProtocolError);
    expect((error as ProtocolError).code).toMatch(/^(invalid-message|limit-exceeded)$/);
    return;
  }
  throw new Error("expected a ProtocolError");
}

/** `internal-error`, the calling code's bug, carrying what its own object threw as the cause. */
function expectCallerFault(run: () => unknown): void {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ProtocolError);
    expect(error).toMatchObject({ code: "internal-error", cause: thrownByCaller });
    return;
  }
  throw new Error("expected a ProtocolError");
}

/** What an encoder must throw for `value` as the thing it reads: the caller's fault when reading it throws. */
function expectRefusedAsInput(value: unknown, run: () => unknown): void {
  if (THROWS_WHEN_READ.has(value)) expectCallerFault(run);
  else expectProtocolError(run);
}

const validText = '{"channel":1,"sequence":"1","type":"inputStreamEnd","version":1}';

describe.each(WRONG.map(([name, value]) => [name, value] as const))("%s", (_name, value) => {
  it("as parseStrictJson input", () => expectProtocolError(() => parseStrictJson(value as string)));

  it("as parseStrictJson options or option values: internal-error (a caller's bug), never an unbounded parse", () => {
    const expectCallerBug = (run: () => unknown): void => {
      try {
        run();
      } catch (error) {
        expect(error).toBeInstanceOf(ProtocolError);
        expect((error as ProtocolError).code).toBe("internal-error");
        return;
      }
      throw new Error("expected a ProtocolError");
    };
    // null and undefined mean "the defaults"; any object is read member by member.
    if (value === undefined || value === null) {
      expect(parseStrictJson("{}", value as never)).toEqual({});
    } else if (typeof value !== "object" && typeof value !== "function") {
      expectCallerBug(() => parseStrictJson("{}", value as never));
    } else if (THROWS_WHEN_READ.has(value)) {
      expectCallerFault(() => parseStrictJson("{}", value as never));
    }
    // 0 is a legitimate bound (nothing fits); 42 is too; everything else is not a count.
    if (value !== undefined && value !== 0 && value !== 42) {
      expectCallerBug(() => parseStrictJson("{}", { maxBytes: value as number }));
      expectCallerBug(() => parseStrictJson("{}", { maxDepth: value as number }));
    }
    if (value !== undefined) expectCallerBug(() => parseStrictJson("{}", { what: value as string }));
  });

  it("as decodeClientMessage / decodeServerMessage data, text and binary", () => {
    for (const decode of [decodeClientMessage, decodeServerMessage]) {
      expectProtocolError(() => decode(value as string, false));
      expectProtocolError(() => decode(value as string, true));
    }
  });

  // A boolean is the right type for this argument: the case exists for every other entry. The
  // flag is what the caller's transport said of the frame, not the peer's data: a caller's bug.
  if (typeof value !== "boolean") {
    it("as the isBinary flag: internal-error, never blamed on the peer", () => {
      for (const decode of [decodeClientMessage, decodeServerMessage]) {
        expect(() => decode(validText, value as boolean)).toThrow(expect.objectContaining({ code: "internal-error", path: "isBinary" }));
      }
    });
  }

  it("as encodeMessage input", () => expectRefusedAsInput(value, () => encodeMessage(value as never)));
  it("as encodeClientMessage input", () => expectRefusedAsInput(value, () => encodeClientMessage(value as never)));
  it("as encodeServerMessage input", () => expectRefusedAsInput(value, () => encodeServerMessage(value as never)));

  it("as a member of an otherwise valid message to encode", () => {
    // Two entries of the table are right for one member: 42 is a channel, 1n a sequence.
    const fits = (member: string) => (member === "channel" && value === 42) || (member === "sequence" && value === 1n);
    for (const member of ["channel", "sequence", "type"].filter((m) => !fits(m))) {
      expectProtocolError(() => encodeMessage({ type: "inputStreamEnd", channel: 1, sequence: 1n, [member]: value } as never));
    }
    expectProtocolError(() => encodeMessage({ type: "input-u8", channel: 1, sequence: 0n, payload: value } as never));
  });

  it("as canonicalJson input (where it is not JSON)", () => {
    if (THROWS_WHEN_READ.has(value)) {
      expectCallerFault(() => canonicalJson(value as never));
      return;
    }
    if (Array.isArray(value) || value === null || (typeof value === "number" && Number.isFinite(value)) || typeof value === "boolean") {
      expect(typeof canonicalJson(value as never)).toBe("string");
      return;
    }
    const proto: unknown = typeof value === "object" ? Object.getPrototypeOf(value) : undefined;
    if ((proto === Object.prototype || proto === null) && value !== null && value !== cyclic) {
      expect(canonicalJson(value as never)).toBe("{}");
      return;
    }
    expectProtocolError(() => canonicalJson(value as never));
  });

  // Strings come from a header split by the server, or from the client's own token: anything else is the caller's bug.
  if (typeof value !== "string") {
    it("as encodeBearerSubprotocol / decodeBearerSubprotocol input: internal-error", () => {
      for (const run of [() => encodeBearerSubprotocol(value as string), () => decodeBearerSubprotocol(value as string)]) {
        let caught: unknown;
        try {
          run();
        } catch (error) {
          caught = error;
        }
        expect(caught).toMatchObject({ name: "ProtocolError", code: "internal-error" });
      }
    });
  }

  it("as a string argument of the UTF-8 helpers: internal-error", () => {
    for (const run of [
      () => utf8ByteLength(value as string),
      () => isWellFormedText(value as string),
      () => encodeUtf8(value as string),
      () => compareCodePoints(value as string, "a"),
      () => compareCodePoints("a", value as string),
    ]) {
      expectWrongArgument(run);
    }
    // decodeUtf8 reads data, as the message decoders do: what is not bytes is not UTF-8.
    expectProtocolError(() => decodeUtf8(value as Uint8Array));
    if (value !== undefined) expectWrongArgument(() => decodeUtf8(new Uint8Array([0x7b]), value as string));
  });

  it("as getMember's object or name: internal-error; what the object throws passes through", () => {
    expectWrongArgument(() => getMember({ a: 1 }, value as string));
    if (typeof value !== "object" || value === null) expectWrongArgument(() => getMember(value as never, "a"));
    else if (THROWS_WHEN_READ.has(value)) expect(() => getMember(value as never, "a")).toThrow(thrownByCaller);
    else expect(getMember(value as never, "a")).toBe(value === throwingGetters ? undefined : (value as { a?: never }).a);
  });

  it("as an EnvelopePool bound, length or envelope: internal-error", () => {
    const pool = new EnvelopePool(1024 * 1024);
    // 0 and 42 are counts: a pool that keeps nothing idle, an envelope of 42 bytes.
    if (value !== 0 && value !== 42) {
      expectWrongArgument(() => new EnvelopePool(value as number));
      expectWrongArgument(() => pool.allocate(value as number));
    }
    expectWrongArgument(() => pool.release(value as Uint8Array));
    expectWrongArgument(() => pool.owns(value as Uint8Array));
    expectWrongArgument(() => pool.whenWritten(value as Uint8Array));
  });

  it("as a ProtocolError message: internal-error; as its options, null and undefined are the defaults", () => {
    expectWrongArgument(() => new ProtocolError("invalid-message", value as string));
    if (value === null || value === undefined) expect(new ProtocolError("overloaded", "m", value).retryable).toBe(true);
    expect(isProtocolError(value)).toBe(false);
  });

  it("as recoverAttemptId input", () => {
    expect(recoverAttemptId(value as string)).toBeUndefined();
    expect(recoverAttemptId(validText, value as boolean)).toBeUndefined();
  });
});
