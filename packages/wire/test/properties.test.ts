/**
 * Properties of the message codecs over generated input: encode then decode
 * is the identity for every variant, and no input, however broken, makes a
 * decoder throw anything but a ProtocolError.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type ClientMessage,
  ProtocolError,
  type ServerMessage,
  decodeClientMessage,
  decodeServerMessage,
  encodeMessage,
  encodeUtf8,
  recoverAttemptId,
} from "../src/index.js";
import { clientMessage, serverMessage } from "./support/arbitraries.js";

type Decoder = (data: string | Uint8Array, isBinary: boolean) => ClientMessage | ServerMessage;
const decoders: readonly (readonly [string, Decoder])[] = [
  ["decodeClientMessage", decodeClientMessage],
  ["decodeServerMessage", decodeServerMessage],
];

function isBinaryFrame(frame: string | Uint8Array): frame is Uint8Array {
  return typeof frame !== "string";
}

/** Runs `decode`; returns the message, or the ProtocolError. Anything else fails the test. */
function attempt(decode: Decoder, data: string | Uint8Array, isBinary: boolean): unknown {
  try {
    return decode(data, isBinary);
  } catch (error) {
    // The verdict on every refusal: a foreign error (a TypeError, a RangeError) fails the property.
    expect(error).toBeInstanceOf(ProtocolError);
    return error;
  }
}

describe("round trip", () => {
  it("decodes what it encodes, for every client variant", () => {
    fc.assert(
      fc.property(clientMessage, (message) => {
        const frame = encodeMessage(message);
        const binary = isBinaryFrame(frame);
        const decoded = decodeClientMessage(frame, binary);
        expect(decoded).toEqual(message);
        expect(encodeMessage(decoded)).toEqual(frame);
        if (!binary) expect(decodeClientMessage(encodeUtf8(frame), false)).toEqual(message);
      }),
      { numRuns: 400 },
    );
  });

  it("decodes what it encodes, for every server variant", () => {
    fc.assert(
      fc.property(serverMessage, (message) => {
        const frame = encodeMessage(message);
        const binary = isBinaryFrame(frame);
        const decoded = decodeServerMessage(frame, binary);
        expect(decoded).toEqual(message);
        expect(encodeMessage(decoded)).toEqual(frame);
      }),
      { numRuns: 400 },
    );
  });

  it("rejects every generated message in the other direction, except shared cancels", () => {
    fc.assert(
      fc.property(fc.oneof(clientMessage, serverMessage), (message) => {
        const frame = encodeMessage(message);
        const isClient = ["invocationStart", "resumeAttach", "inputStreamItem", "inputStreamEnd", "input-u8", "input-binary"].includes(
          message.type,
        );
        if (message.type === "streamCancel") return;
        const other = isClient ? decodeServerMessage : decodeClientMessage;
        const outcome = attempt(other, frame, isBinaryFrame(frame));
        expect(outcome).toBeInstanceOf(ProtocolError);
        expect((outcome as ProtocolError).code).toBe("invalid-message");
      }),
      { numRuns: 200 },
    );
  });
});

describe("strictness over generated messages", () => {
  const textMessages = fc.oneof(clientMessage, serverMessage).filter((m) => !m.type.includes("-"));

  /** The only top-level members a text variant may omit. */
  const isOptional = (type: string, member: string) =>
    (type === "invocationRejected" && member === "attemptId") || (type === "outputStreamEnd" && member === "cursorToken");

  it("rejects a message that lost any one of its required members", () => {
    fc.assert(
      fc.property(textMessages, fc.nat(), (message, pick) => {
        const wire = JSON.parse(encodeMessage(message) as string) as Record<string, unknown>;
        const names = Object.keys(wire);
        const member = names[pick % names.length] as string;
        fc.pre(!isOptional(message.type, member));
        delete wire[member];
        for (const [, decoder] of decoders) {
          expect((attempt(decoder, JSON.stringify(wire), false) as ProtocolError).code).toBe("invalid-message");
        }
      }),
      { numRuns: 300 },
    );
  });

  it("rejects a message with any member it does not define", () => {
    const stranger = fc.string({ minLength: 1, maxLength: 12 });
    fc.assert(
      fc.property(textMessages, stranger, fc.jsonValue({ maxDepth: 1 }), (message, member, value) => {
        const wire = JSON.parse(encodeMessage(message) as string) as Record<string, unknown>;
        fc.pre(!(member in wire) && !["attemptId", "cursorToken", "phantomId"].includes(member));
        Object.defineProperty(wire, member, { value, enumerable: true });
        for (const [, decoder] of decoders) {
          expect((attempt(decoder, JSON.stringify(wire), false) as ProtocolError).code).toBe("invalid-message");
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe("hostile input never escapes as a foreign error", () => {
  const frameTypes = [false, true] as const;

  it("arbitrary bytes", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        for (const [, decode] of decoders) for (const isBinary of frameTypes) attempt(decode, bytes, isBinary);
        expect(() => recoverAttemptId(bytes)).not.toThrow();
      }),
      { numRuns: 500 },
    );
  });

  it("arbitrary strings, including lone surrogates", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 200 }), (text) => {
        for (const [, decode] of decoders) for (const isBinary of frameTypes) attempt(decode, text, isBinary);
        expect(() => recoverAttemptId(text)).not.toThrow();
      }),
      { numRuns: 500 },
    );
  });

  it("arbitrary JSON objects carrying a real variant name", () => {
    const types = fc.constantFrom(
      "invocationStart",
      "resumeAttach",
      "inputStreamItem",
      "inputStreamEnd",
      "streamCancel",
      "invocationAccepted",
      "invocationRejected",
      "invocationResult",
      "outputStreamItem",
      "outputStreamEnd",
      "inputStreamAck",
      "attachmentRevoked",
      "invocationFinished",
    );
    const members = fc.dictionary(
      fc.constantFrom(
        "attemptId",
        "config",
        "channel",
        "sequence",
        "value",
        "mappings",
        "outcome",
        "result",
        "selector",
        "reason",
        "code",
        "terminal",
        "outputCursors",
        "__proto__",
      ),
      fc.jsonValue({ maxDepth: 3 }),
    );
    fc.assert(
      fc.property(types, members, (type, body) => {
        const text = JSON.stringify({ ...body, type, version: 1 });
        for (const [, decode] of decoders) attempt(decode, text, false);
      }),
      { numRuns: 500 },
    );
  });

  it("valid frames with one byte changed, cut short or grown", () => {
    const edit = fc.record({ at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }), kind: fc.constantFrom("flip", "cut", "insert") });
    fc.assert(
      fc.property(fc.oneof(clientMessage, serverMessage), edit, (message, change) => {
        const frame = encodeMessage(message);
        const bytes = isBinaryFrame(frame) ? frame : encodeUtf8(frame);
        const at = bytes.length === 0 ? 0 : change.at % bytes.length;
        let edited: Uint8Array;
        if (change.kind === "flip") {
          edited = bytes.slice();
          edited[at] = change.byte;
        } else if (change.kind === "cut") {
          edited = bytes.slice(0, at);
        } else {
          edited = new Uint8Array([...bytes.subarray(0, at), change.byte, ...bytes.subarray(at)]);
        }
        for (const [, decode] of decoders) attempt(decode, edited, isBinaryFrame(frame));
      }),
      { numRuns: 500 },
    );
  });
});
