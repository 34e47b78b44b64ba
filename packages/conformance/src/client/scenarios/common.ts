/** What several scenarios share: the demo methods they start, and a gate a script waits at until the scenario opens it. */
import { echoContract } from "@golem-stream/contract/demo";
import type { SchemaGraphJson } from "@golem-stream/wire";
import { ensureEqual } from "../../check.js";
import type { AdapterProcess } from "../adapter-process.js";
import type { ClientContext } from "../context.js";

/** `count(to, delayMs)`: one output `stream<u32>` (the scripts decide what it carries). */
export const COUNT = { method: "count", methodParameters: { kind: "record", value: { fields: [{ kind: "u32", value: 15 }, { kind: "u32", value: 0 }] } } } as const;

/** `split(data: stream<u8>)`: result `record{upper: stream<u8>, lines: stream<string>}`. */
export const SPLIT = { method: "split", methodParameters: { kind: "record", value: { fields: [{ kind: "stream", value: { input: "data", element: "u8" } }] } } } as const;

/** `reverse(input: stream<string>)`: one input stream, fed by the scenario, and one output. */
export const REVERSE = { method: "reverse", methodParameters: { kind: "record", value: { fields: [{ kind: "stream", value: { input: "in", element: "value" } }] } } } as const;

export const str = (value: string) => ({ kind: "string", value }) as const;

export interface Gate {
  readonly opened: Promise<void>;
  open(): void;
}

export function gate(): Gate {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/** Asks the adapter for `count` items of stream 0 and waits until they were delivered. */
export async function deliver(ctx: ClientContext, count: number): Promise<void> {
  const before = ctx.adapter.events.filter((e) => e.type === "readDone").length;
  ctx.adapter.send({ type: "read", stream: 0, count });
  await ctx.adapter.waitFor(() => ctx.adapter.events.filter((e) => e.type === "readDone").length > before, `delivery of ${count} item(s)`);
}

/** Waits until `adapter` reported the end of output stream 0 (its items are all reported by then). */
export async function endOfStream(adapter: AdapterProcess): Promise<void> {
  await adapter.waitFor((e) => e.type === "streamEnd" && e.stream === 0, "the end of output stream 0");
}

/** Reads stream 0 to its end and fails unless the application saw 0, 1, …, n-1 exactly once, in order. */
export async function expectAllOnce(ctx: ClientContext, n: number): Promise<void> {
  ctx.adapter.send({ type: "read", stream: 0 });
  await ctx.finishedOk();
  await ctx.adapter.waitFor((e) => e.type === "streamEnd" && e.stream === 0, "the end of output stream 0");
  ensureEqual(ctx.numbers(0), Array.from({ length: n }, (_, i) => i), "items the application received");
}

/** The result graph the demo catalogue gives `method`. */
export function resultGraphOf(method: string): SchemaGraphJson {
  const graph = echoContract.graphs.methods.find((m) => m.name === method)?.result;
  if (graph === undefined) throw new Error(`the demo catalogue has no result graph for ${method}`);
  return graph;
}

/** Bytes `from`, `from + 1`, … `to - 1`, and their hex. */
export const bytes = (from: number, to: number): Uint8Array => Uint8Array.from({ length: to - from }, (_, i) => from + i);
export const hex = (from: number, to: number): string => Buffer.from(bytes(from, to)).toString("hex");

/** Bytes the application received on output stream `stream`, as one hex string. */
export function receivedHex(ctx: ClientContext, stream: number): string {
  return ctx.adapter.events.flatMap((e) => (e.type === "item" && e.stream === stream && e.bytesHex !== undefined ? [e.bytesHex] : [])).join("");
}
