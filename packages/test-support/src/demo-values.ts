/** Values and collectors the tests of several packages use around demo calls (decisions §7). */
import { createHash, randomBytes } from "node:crypto";
import type { SchemaValueJson } from "@golem-stream/wire";

export const u32 = (value: number): SchemaValueJson => ({ kind: "u32", value });

export const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex");

/** `size` random bytes delivered in random chunk sizes up to `maxChunk`. */
export function randomChunks(size: number, maxChunk: number): { chunks: Uint8Array[]; all: Uint8Array } {
  const all = randomBytes(size);
  const chunks: Uint8Array[] = [];
  for (let at = 0; at < size;) {
    const length = Math.min(size - at, 1 + Math.floor(Math.random() * maxChunk));
    chunks.push(all.subarray(at, at + length));
    at += length;
  }
  return { chunks, all };
}

/** Every item of `source`, in order. */
export async function collect<T>(source: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of source) out.push(item);
  return out;
}

/** The fields of a record value. */
export function fieldsOf(value: SchemaValueJson): SchemaValueJson[] {
  const payload = value.value as unknown as { fields: SchemaValueJson[] };
  return payload.fields;
}
