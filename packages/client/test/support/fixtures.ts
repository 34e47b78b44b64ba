import type { SchemaValueJson, InvocationStart, ResumeAttach, ClientMessage, StreamMapping } from "@golem-stream/wire";
import { createClient, type Client, type ClientOptions } from "../../src/index.js";
import { MemoryTransport } from "./memory-transport.js";

export const echo: { application: string; environment: string; agentType: string; constructorParameters: SchemaValueJson } = {
  application: "demo",
  environment: "default",
  agentType: "echo",
  constructorParameters: { kind: "record", value: { fields: [{ kind: "string", value: "test" }] } },
};

/** Tokens only need to be opaque strings for the in-memory server. */
export const SESSION = "session-token-1";
export const STREAM_OUT = "stream-token-out";
export const STREAM_IN = "stream-token-in";
export const cursor = (stream: string, n: number | string): string => `cursor-${stream}-${n}`;

export function memoryClient(options: Partial<ClientOptions> = {}): { client: Client; transport: MemoryTransport } {
  const transport = new MemoryTransport();
  const client = createClient({
    url: "ws://memory.invalid",
    token: "t",
    transport,
    reconnect: { random: () => 0, maxAttempts: 5 },
    ...options,
  });
  return { client, transport };
}

export const isStart = (m: ClientMessage): m is InvocationStart => m.type === "invocationStart";
export const isResume = (m: ClientMessage): m is ResumeAttach => m.type === "resumeAttach";

export function outputMapping(channel: number, streamToken = STREAM_OUT): StreamMapping {
  return { channel, direction: "output", streamToken };
}

export function inputMapping(channel: number, provisionalRef: string | undefined, sequence = 0n, terminal = false, streamToken = STREAM_IN): StreamMapping {
  return {
    channel,
    direction: "input",
    streamToken,
    ...(provisionalRef === undefined ? {} : { provisionalRef }),
    inputHighWater: { sequence, terminal },
  };
}

/** The provisional reference of the first stream leaf of a start's parameters. */
export function provisionalRefOf(start: InvocationStart): string {
  const match = /"provisionalRef":"([0-9a-f-]{36})"/.exec(JSON.stringify(start.methodParameters));
  if (match === null) throw new Error("no provisional reference in the start");
  return match[1]!;
}

/** A result that is one `stream<inner>` (default `stream<u32>`). */
export const streamResult = (token = STREAM_OUT, inner: string = "u32") => ({
  kind: "value" as const,
  graph: { root: { kind: "stream", value: { inner: { kind: inner, value: {} } } } },
  value: { kind: "stream", value: { streamToken: token } },
});

export const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
