/**
 * The protocol's vector files. They ship in the package's `vectors/`
 * directory (copied at build); inside the repository, before a build, they
 * are read from `fixtures/stream-session-v1/`.
 */
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const VECTOR_FILES = [
  "json-messages.json",
  "schema-values.json",
  "binary-messages.json",
  "tokens.json",
  "malformed.json",
  "demo-sessions.json",
] as const;
export type VectorFile = (typeof VECTOR_FILES)[number];

/** The directory holding the vector files. */
export function vectorsDir(): string {
  const packaged = fileURLToPath(new URL("../vectors/", import.meta.url));
  if (existsSync(`${packaged}malformed.json`)) return packaged;
  const repository = fileURLToPath(new URL("../../../fixtures/stream-session-v1/", import.meta.url));
  if (existsSync(`${repository}malformed.json`)) return repository;
  throw new Error(`vector files not found in ${packaged} or ${repository}`);
}

export function loadVectors<T>(file: VectorFile): T {
  return JSON.parse(readFileSync(`${vectorsDir()}${file}`, "utf8")) as T;
}

export type Part =
  | { readonly text: string }
  | { readonly hex: string }
  | { readonly repeat: string; readonly count: number }
  | { readonly repeatHex: string; readonly count: number }
  | { readonly numbered: string; readonly count: number; readonly start: number; readonly separator: string };

export interface MalformedCase {
  readonly name: string;
  readonly description: string;
  readonly direction: "client" | "server";
  readonly binary: boolean;
  readonly text?: string;
  readonly textHex?: string;
  readonly envelopeHex?: string;
  readonly generate?: { readonly kind: "concat"; readonly parts: readonly Part[] };
  readonly expectedCode: string;
}

/** The frame bytes of a malformed case (malformed.json's description defines `generate`). */
export function malformedBytes(c: MalformedCase): Uint8Array {
  if (c.text !== undefined) return Buffer.from(c.text, "utf8");
  if (c.textHex !== undefined) return Buffer.from(c.textHex, "hex");
  if (c.envelopeHex !== undefined) return Buffer.from(c.envelopeHex, "hex");
  const parts = (c.generate?.parts ?? []).map((part): Buffer => {
    if ("text" in part) return Buffer.from(part.text, "utf8");
    if ("hex" in part) return Buffer.from(part.hex, "hex");
    if ("repeat" in part) return Buffer.from(part.repeat.repeat(part.count), "utf8");
    if ("repeatHex" in part) return Buffer.from(part.repeatHex.repeat(part.count), "hex");
    const items = Array.from({ length: part.count }, (_, i) => part.numbered.replaceAll("{n}", String(part.start + i)));
    return Buffer.from(items.join(part.separator), "utf8");
  });
  return Buffer.concat(parts);
}
