/** Calling the demo catalogue (decisions §7) with the real client. */
import {
  createClient,
  type Client,
  type Invocation,
  type InvokeOptions,
  type OutputStream,
  type ParamNode,
  type ReconnectPolicy,
} from "@golem-stream/client";
import { TOKEN } from "./cluster.js";

// The demo helpers that hold no client type are the client's own test support's (ParamNode,
// Invocation and OutputStream hold classes: the client's sources and this package's built client
// would be two different types).
export { collect as collectAll, fieldsOf, randomChunks, sha256, u32 } from "@golem-stream/test-support";

/** A native SchemaValue (`@golem-stream/wire`'s, which this package does not depend on). */
export type SchemaValueJson = InvokeOptions["constructorParameters"];

export const record = (...fields: ParamNode[]): ParamNode => ({ kind: "record", value: { fields } });

export const demo = {
  application: "demo",
  environment: "default",
  agentType: "echo",
  constructorParameters: { kind: "record", value: { fields: [{ kind: "string", value: "cluster-e2e" }] } } as SchemaValueJson,
};

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Short waits, many tries: a cut (or a draining node) costs milliseconds, not seconds. */
export const FAST_RECONNECT: ReconnectPolicy = { initialDelayMs: 5, maxDelayMs: 100, maxAttempts: 40 };

export function clientFor(
  url: string,
  options: { reconnect?: ReconnectPolicy; maxQueuedBytes?: number; maxQueuedEntriesPerStream?: number } = {},
): Client {
  return createClient({ url, token: TOKEN, reconnect: options.reconnect ?? FAST_RECONNECT, ...options });
}

export async function firstStream(call: Invocation): Promise<OutputStream> {
  const result = await call.result;
  if (result.kind !== "value" || result.streams[0] === undefined) throw new Error("the result has no stream");
  return result.streams[0];
}

/** The values of a `stream<u32>` item list. */
export const valuesOf = (items: readonly SchemaValueJson[]): unknown[] => items.map((item) => item.value);

export const range = (n: number, from = 0): number[] => Array.from({ length: n }, (_, i) => from + i);
