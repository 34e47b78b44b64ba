import type {
  SchemaValueJson,
  InvocationAccepted,
  InvocationStart,
  OutputStreamEnd,
  OutputStreamItem,
  ResumeAttach,
  ClientMessage,
  StreamMapping,
} from "@golem-stream/wire";
import { createClient, type Client, type ClientOptions, type Invocation, type ResumeState } from "../../src/index.js";
import { MemoryTransport, type ServerSide } from "./memory-transport.js";

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

/** A method's parameters with no fields. */
export const noParams = { kind: "record", value: { fields: [] } } as const;

/** The transport's next connection and the start the client sends on it. */
export async function nextStart(transport: MemoryTransport): Promise<{ server: ServerSide; start: InvocationStart }> {
  const server = await transport.nextConnection();
  const start = await server.waitUntil(isStart);
  return { server, start };
}

/**
 * A `count` invocation on a memory client that keeps every checkpoint in `states`, its start
 * taken and accepted by the scripted server (no mappings): where most delivery tests begin.
 */
export async function acceptedCount(): Promise<{
  client: Client;
  transport: MemoryTransport;
  states: ResumeState[];
  call: Invocation;
  server: ServerSide;
  start: InvocationStart;
}> {
  const { client, transport } = memoryClient();
  const states: ResumeState[] = [];
  const call = client.invoke({ ...echo, method: "count", methodParameters: noParams, onCheckpoint: (s) => void states.push(s) });
  const { server, start } = await nextStart(transport);
  server.send(acceptanceOf(start));
  return { client, transport, states, call, server, start };
}

/**
 * The server's acceptance of `start`: its attempt id and idempotency key, `mappings`, the session
 * token `SESSION`; `overrides` for a resume's attempt id or another token.
 */
export function acceptanceOf(
  start: InvocationStart,
  mappings: readonly StreamMapping[] = [],
  overrides: Partial<Pick<InvocationAccepted, "attemptId" | "sessionToken">> = {},
): InvocationAccepted {
  return {
    type: "invocationAccepted",
    attemptId: start.attemptId,
    idempotencyKey: start.idempotencyKey,
    mappings,
    sessionToken: SESSION,
    ...overrides,
  };
}

export function outputMapping(channel: number, streamToken = STREAM_OUT): StreamMapping {
  return { channel, direction: "output", streamToken };
}

export function inputMapping(
  channel: number,
  provisionalRef: string | undefined,
  sequence = 0n,
  terminal = false,
  streamToken = STREAM_IN,
): StreamMapping {
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

/** The output item at `position` of a `stream<u32>` whose items are their positions, with the cursor `cursor("o", position)`. */
export function u32Item(position: number, channel = 2): OutputStreamItem {
  return {
    type: "outputStreamItem",
    channel,
    cursorToken: cursor("o", position),
    mappings: [],
    sequence: BigInt(position),
    value: { kind: "u32", value: position },
  };
}

/** The `ok` end of an output stream after `count` items, with the cursor `cursor("o", "end")`. */
export function okEnd(count: number, channel = 2): OutputStreamEnd {
  return { type: "outputStreamEnd", channel, cursorToken: cursor("o", "end"), outcome: { kind: "ok" }, sequence: BigInt(count) };
}

export const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * A token with the decisions §4 layout (protocol 10.1) and a zero signature:
 * enough for the client, which reads stream identities and cursor events
 * from tokens but never verifies them.
 */
export function layoutToken(kind: 1 | 2 | 3, fields: readonly (readonly [number, Uint8Array])[]): string {
  const parts: Uint8Array[] = [Uint8Array.of(1, kind, 2), Buffer.from("k1")];
  for (const [id, bytes] of fields) {
    const header = Buffer.alloc(5);
    header.writeUInt8(id, 0);
    header.writeUInt32BE(bytes.length, 1);
    parts.push(header, bytes);
  }
  parts.push(new Uint8Array(32));
  return `gai1_${Buffer.concat(parts).toString("base64url")}`;
}

const u64 = (n: bigint): Uint8Array => {
  const bytes = Buffer.alloc(8);
  bytes.writeBigUInt64BE(n);
  return bytes;
};

/** A stream token and its cursor tokens that peek as the same stream (`streamByte` fills the stream id). */
export function layoutStream(streamByte: number): { token: string; cursor: (position: number, event: "item" | "terminal") => string } {
  const session = new Uint8Array(16).fill(1);
  const stream = new Uint8Array(16).fill(streamByte);
  return {
    token: layoutToken(2, [
      [1, Buffer.from("iss")],
      [16, session],
      [32, stream],
      [33, u64(2n)],
    ]),
    cursor: (position, event) =>
      layoutToken(3, [
        [1, Buffer.from("iss")],
        [16, session],
        [32, stream],
        [48, u64(BigInt(position))],
        [49, u64(event === "item" ? 1n : 2n)],
      ]),
  };
}
