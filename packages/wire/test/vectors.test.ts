/**
 * The normative vectors of fixtures/stream-session-v1/ (written by
 * scripts/write-vectors.mjs, independently of this package): every valid
 * message decodes to its `decoded` form and re-encodes byte for byte; every
 * malformed one is rejected with its expected code.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  CLIENT_CANCEL_REASONS,
  type ClientMessage,
  ProtocolError,
  type ServerMessage,
  canonicalJson,
  decodeClientMessage,
  decodeServerMessage,
  encodeClientMessage,
  encodeMessage,
  encodeServerMessage,
  encodeUtf8,
  recoverAttemptId,
} from "../src/index.js";
import type { JsonValue } from "../src/index.js";
import { type Direction, binaryMessages, frameOf, fromHex, jsonMessages, malformed, neutral, toHex } from "./support/vectors.js";

function decode(direction: Direction, data: string | Uint8Array, isBinary: boolean): ClientMessage | ServerMessage {
  return direction === "client" ? decodeClientMessage(data, isBinary) : decodeServerMessage(data, isBinary);
}

function decodeAs(direction: Direction, data: string | Uint8Array, isBinary: boolean): ClientMessage | ServerMessage {
  return decode(direction === "client" ? "server" : "client", data, isBinary);
}

/** The encoder of the side that sends `direction`'s messages, or of the other side. */
function encodeBy(side: Direction, message: ClientMessage | ServerMessage): string | Uint8Array {
  return side === "client" ? encodeClientMessage(message as ClientMessage) : encodeServerMessage(message as ServerMessage);
}
const otherSide = (direction: Direction): Direction => (direction === "client" ? "server" : "client");

function rejection(run: () => unknown): ProtocolError {
  try {
    run();
  } catch (error) {
    if (error instanceof ProtocolError) return error;
    throw error;
  }
  throw new Error("expected a ProtocolError, but decoding succeeded");
}

describe("json-messages.json", () => {
  it("covers all fourteen text variants in both directions", () => {
    const variants = new Set(jsonMessages.cases.map((c) => `${c.direction}:${JSON.parse(c.text).type as string}`));
    expect([...variants].sort()).toEqual(
      [
        "client:invocationStart",
        "client:resumeAttach",
        "client:inputStreamItem",
        "client:inputStreamEnd",
        "client:streamCancel",
        "server:invocationAccepted",
        "server:invocationRejected",
        "server:invocationResult",
        "server:outputStreamItem",
        "server:outputStreamEnd",
        "server:inputStreamAck",
        "server:streamCancel",
        "server:attachmentRevoked",
        "server:invocationFinished",
      ].sort(),
    );
  });

  it.each(jsonMessages.cases.map((c) => [c.name, c] as const))("%s", (_name, testCase) => {
    const fromText = decode(testCase.direction, testCase.text, false);
    expect(neutral(fromText)).toStrictEqual(testCase.decoded);
    // ws hands text frames over as bytes: the same message either way.
    expect(decode(testCase.direction, encodeUtf8(testCase.text), false)).toStrictEqual(fromText);
    expect(encodeMessage(fromText)).toBe(testCase.text);
    expect(encodeBy(testCase.direction, fromText)).toBe(testCase.text);
    // The vector text itself is canonical.
    expect(canonicalJson(JSON.parse(testCase.text) as JsonValue)).toBe(testCase.text);
  });

  it.each(jsonMessages.cases.map((c) => [c.name, c] as const))("%s is rejected from the other side", (_name, testCase) => {
    const message = JSON.parse(testCase.text) as { type: string; reason?: string };
    // streamCancel exists in both directions; only reasons of the server alone are one-sided.
    const oneSided = message.type !== "streamCancel" || !CLIENT_CANCEL_REASONS.some((reason) => reason === message.reason);
    const decoded = decode(testCase.direction, testCase.text, false);
    if (oneSided) {
      expect(rejection(() => decodeAs(testCase.direction, testCase.text, false)).code).toBe("invalid-message");
      // The other side's encoder refuses to send it in the first place.
      expect(rejection(() => encodeBy(otherSide(testCase.direction), decoded)).code).toBe("invalid-message");
    } else {
      expect(decodeAs(testCase.direction, testCase.text, false).type).toBe("streamCancel");
      expect(encodeBy(otherSide(testCase.direction), decoded)).toBe(testCase.text);
    }
  });
});

describe("binary-messages.json", () => {
  it("covers all four kinds", () => {
    expect(new Set(binaryMessages.cases.map((c) => c.metadata["kind"]))).toEqual(
      new Set(["input-u8", "input-binary", "output-u8", "output-binary"]),
    );
  });

  it.each(binaryMessages.cases.map((c) => [c.name, c] as const))("%s", (_name, testCase) => {
    const envelope = fromHex(testCase.envelopeHex);
    const message = decode(testCase.direction, envelope, true);
    const { kind, itemCount, version, ...members } = testCase.metadata;
    expect(version).toBe(1);
    expect(neutral(message)).toStrictEqual({ type: kind, ...members, payload: testCase.payloadHex });
    if (!("payload" in message)) throw new Error("not a binary message");
    // itemCount is derived: the payload length for packed u8, 1 for binary.
    expect(String(kind).endsWith("-u8") ? String(message.payload.length) : "1").toBe(itemCount);
    // The payload is a view of the input, not a copy.
    expect(message.payload.buffer).toBe(envelope.buffer);
    expect(canonicalJson(testCase.metadata as JsonValue)).toBe(testCase.metadataText);
    const metadataLength = new DataView(envelope.buffer).getUint32(0);
    expect(Buffer.from(envelope.subarray(4, 4 + metadataLength)).toString("utf8")).toBe(testCase.metadataText);
    expect(toHex(encodeMessage(message) as Uint8Array)).toBe(testCase.envelopeHex);
    expect(toHex(encodeBy(testCase.direction, message) as Uint8Array)).toBe(testCase.envelopeHex);
    expect(rejection(() => encodeBy(otherSide(testCase.direction), message)).code).toBe("invalid-message");
    expect(rejection(() => decodeAs(testCase.direction, envelope, true)).code).toBe("invalid-message");
  });
});

describe("malformed.json", () => {
  it("has unique names and a description for every case", () => {
    const names = malformed.cases.map((c) => c.name);
    expect(new Set(names).size).toBe(names.length);
    for (const testCase of malformed.cases) expect(testCase.description.length).toBeGreaterThan(5);
  });

  it.each(malformed.cases.map((c) => [c.name, c] as const))("%s", (_name, testCase) => {
    const frame = frameOf(testCase);
    const error = rejection(() => decode(testCase.direction, frame, testCase.binary));
    expect(error.code).toBe(testCase.expectedCode);
    expect(error.closeCode).toBe(testCase.expectedCode === "limit-exceeded" ? 1009 : 1002);
    // The attempt recovery helper never throws, whatever the frame.
    expect(() => recoverAttemptId(frame, testCase.binary)).not.toThrow();
  });
});

describe("the vector files", () => {
  it("are exactly what the independent writer produces", () => {
    const out = mkdtempSync(join(tmpdir(), "wire-vectors-"));
    try {
      const writer = fileURLToPath(new URL("../scripts/write-vectors.mjs", import.meta.url));
      execFileSync(process.execPath, [writer, out], { stdio: "pipe" });
      const fixtures = fileURLToPath(new URL("../../../fixtures/stream-session-v1/", import.meta.url));
      for (const name of ["json-messages.json", "binary-messages.json", "malformed.json"]) {
        expect(readFileSync(join(out, name), "utf8"), name).toBe(readFileSync(join(fixtures, name), "utf8"));
      }
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
