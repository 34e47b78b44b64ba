/**
 * Loads the language-neutral conformance vectors of
 * fixtures/stream-session-v1/ and turns their cases into frames.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const fixtureDir = fileURLToPath(new URL("../../../../fixtures/stream-session-v1/", import.meta.url));

export type Direction = "client" | "server";

export interface JsonMessageCase {
  readonly name: string;
  readonly description: string;
  readonly direction: Direction;
  readonly text: string;
  readonly decoded: unknown;
}

export interface BinaryMessageCase {
  readonly name: string;
  readonly description: string;
  readonly direction: Direction;
  readonly metadata: Record<string, unknown>;
  readonly metadataText: string;
  readonly payloadHex: string;
  readonly envelopeHex: string;
}

export type GeneratorPart =
  | { readonly text: string }
  | { readonly hex: string }
  | { readonly repeat: string; readonly count: number }
  | { readonly repeatHex: string; readonly count: number }
  | { readonly numbered: string; readonly count: number; readonly start: number; readonly separator: string };

export interface MalformedCase {
  readonly name: string;
  readonly description: string;
  readonly direction: Direction;
  readonly binary: boolean;
  readonly text?: string;
  readonly textHex?: string;
  readonly envelopeHex?: string;
  readonly generate?: { readonly kind: "concat"; readonly parts: readonly GeneratorPart[] };
  readonly expectedCode: "invalid-message" | "limit-exceeded";
}

interface VectorFile<C> {
  readonly description: string;
  readonly cases: readonly C[];
}

function load<C>(name: string): VectorFile<C> {
  return JSON.parse(readFileSync(fixtureDir + name, "utf8")) as VectorFile<C>;
}

export const jsonMessages = load<JsonMessageCase>("json-messages.json");
export const binaryMessages = load<BinaryMessageCase>("binary-messages.json");
export const malformed = load<MalformedCase>("malformed.json");

export function fromHex(hex: string): Uint8Array {
  return new Uint8Array(Buffer.from(hex, "hex"));
}

export function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
}

/** Runs a `generate` description (documented in malformed.json). */
export function generate(parts: readonly GeneratorPart[]): Uint8Array {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    if ("text" in part) chunks.push(Buffer.from(part.text, "utf8"));
    else if ("hex" in part) chunks.push(Buffer.from(part.hex, "hex"));
    else if ("repeat" in part) chunks.push(Buffer.from(part.repeat.repeat(part.count), "utf8"));
    else if ("repeatHex" in part) chunks.push(Buffer.alloc(part.count * (part.repeatHex.length / 2), part.repeatHex, "hex"));
    else {
      const items = Array.from({ length: part.count }, (_, i) => part.numbered.replaceAll("{n}", String(part.start + i)));
      chunks.push(Buffer.from(items.join(part.separator), "utf8"));
    }
  }
  return new Uint8Array(Buffer.concat(chunks));
}

/** The frame a malformed case describes: text, bytes of a text frame, or a binary envelope. */
export function frameOf(testCase: MalformedCase): string | Uint8Array {
  if (testCase.generate !== undefined) return generate(testCase.generate.parts);
  if (testCase.text !== undefined) return testCase.text;
  if (testCase.textHex !== undefined) return fromHex(testCase.textHex);
  if (testCase.envelopeHex !== undefined) return fromHex(testCase.envelopeHex);
  throw new Error(`case ${testCase.name} describes no frame`);
}

/**
 * A decoded message as language-neutral JSON, the `decoded` form of the
 * vectors: bigints become canonical decimal strings, payloads lower-case hex.
 */
export function neutral(value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (value instanceof Uint8Array) return toHex(value);
  if (Array.isArray(value)) return value.map(neutral);
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [name, member] of Object.entries(value)) {
      Object.defineProperty(out, name, { value: neutral(member), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  return value;
}
