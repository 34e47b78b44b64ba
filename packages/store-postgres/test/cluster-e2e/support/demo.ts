/** Calling the demo catalogue (decisions §7) with the real client. */
import { createHash, randomBytes } from "node:crypto";
import { createClient, type Client, type Invocation, type InvokeOptions, type OutputStream, type ParamNode, type ReconnectPolicy } from "@golem-stream/client";
import { TOKEN } from "./cluster.js";

/** A native SchemaValue (`@golem-stream/wire`'s, which this package does not depend on). */
type SchemaValueJson = InvokeOptions["constructorParameters"];

export const demo = {
  application: "demo",
  environment: "default",
  agentType: "echo",
  constructorParameters: { kind: "record", value: { fields: [{ kind: "string", value: "cluster-e2e" }] } } as SchemaValueJson,
};

export const record = (...fields: ParamNode[]): ParamNode => ({ kind: "record", value: { fields } });
export const u32 = (value: number): SchemaValueJson => ({ kind: "u32", value });
export const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex");
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Short waits, many tries: a cut (or a draining node) costs milliseconds, not seconds. */
export const FAST_RECONNECT: ReconnectPolicy = { initialDelayMs: 5, maxDelayMs: 100, maxAttempts: 40 };

export function clientFor(url: string, options: { reconnect?: ReconnectPolicy; maxQueuedBytes?: number; maxQueuedEntriesPerStream?: number } = {}): Client {
  return createClient({ url, token: TOKEN, reconnect: options.reconnect ?? FAST_RECONNECT, ...options });
}

/** `size` random bytes in random chunk sizes up to `maxChunk`. */
export function randomChunks(size: number, maxChunk: number): { chunks: Uint8Array[]; all: Uint8Array } {
  const all = randomBytes(size);
  const chunks: Uint8Array[] = [];
  for (let at = 0; at < size; ) {
    const length = Math.min(size - at, 1 + Math.floor(Math.random() * maxChunk));
    chunks.push(all.subarray(at, at + length));
    at += length;
  }
  return { chunks, all };
}

export async function firstStream(call: Invocation): Promise<OutputStream> {
  const result = await call.result;
  if (result.kind !== "value" || result.streams[0] === undefined) throw new Error("the result has no stream");
  return result.streams[0];
}

export function fieldsOf(value: SchemaValueJson): SchemaValueJson[] {
  return (value.value as unknown as { fields: SchemaValueJson[] }).fields;
}

/** The values of a `stream<u32>` item list. */
export const valuesOf = (items: readonly SchemaValueJson[]): unknown[] => items.map((item) => item.value);

export const range = (n: number, from = 0): number[] => Array.from({ length: n }, (_, i) => from + i);

export async function collectAll<T>(source: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of source) out.push(item);
  return out;
}
