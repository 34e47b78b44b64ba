/**
 * A takeover while the connection it replaces still has input messages under way. A message of
 * the replaced connection acts on nothing, even when it was read before the takeover and only
 * waited (for the session's byte permits) until after it: the new owner was told the input is
 * open at its high-water, and goes on from there. And the acceptance reports an input's terminal
 * only once it is durable: one whose write is still on its way is waited for, and one whose write
 * fails is no terminal.
 */
import { randomUUID } from "node:crypto";
import { afterEach, expect, it } from "vitest";
import type { JsonObject, SchemaValueJson, ServerMessage } from "@golem-stream/wire";
import { MemorySessionStore, type AgentTypeDefinition, type SessionServer } from "../src/index.js";
import { Pauses, RawClient, agentStart, resumeAttach, serveTestAgents, v } from "./helpers.js";

const BUDGET = 64 * 1024;
const U8_STREAM: JsonObject = { kind: "stream", value: { inner: { kind: "u8", value: {} } } };

/** Agent type `reader`: method `count` hands its one `stream<u8>` parameter's bytes to `read`. */
function readerAgent(read: (input: AsyncIterable<Uint8Array>) => Promise<void>): AgentTypeDefinition {
  return {
    name: "reader",
    constructorParameters: { root: { kind: "record", value: { fields: [] } } },
    config: [],
    methods: [{ name: "count", parameters: { root: { kind: "record", value: { fields: [{ name: "data", body: U8_STREAM }] } } } }],
    implementations: {
      count: async (ctx) => {
        await read(ctx.inputBytes((ctx.parameters as unknown as { value: { fields: JsonObject[] } }).value.fields[0]));
        return undefined;
      },
    },
  };
}

let server: SessionServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

it("an inputStreamEnd that waited for permits across a takeover is dropped: the new owner's bytes and end are the input's", async () => {
  let openGate!: () => void;
  const gate = new Promise<void>((resolve) => (openGate = resolve));
  let readAll!: () => void;
  const drained = new Promise<void>((resolve) => (readAll = resolve));
  const first = BUDGET - 100; // leaves less than an inputStreamEnd's charge (twice its size)
  let read = 0;
  const reader = readerAgent(async (input) => {
    await gate;
    for await (const bytes of input) {
      read += bytes.length;
      if (read === first) readAll();
    }
  });
  const pauses = new Pauses();
  let url: string;
  ({ server, url } = await serveTestAgents(new MemorySessionStore(), [reader], {
    limits: { maxQueuedBytesPerSession: BUDGET },
    observers: [pauses.observer],
  }));
  const a = await RawClient.connect(url);
  a.send(agentStart("test", "reader", "count", v.record(v.stream(randomUUID())) as SchemaValueJson));
  const accepted = (await a.nextOf("invocationAccepted")) as Extract<ServerMessage, { type: "invocationAccepted" }>;
  const channel = accepted.mappings[0]!.channel;
  a.send({ type: "input-u8", channel, sequence: 0n, payload: new Uint8Array(first).fill(7) });
  await a.waitFor((m) => m.type === "inputStreamAck" && m.highestContiguousSequence === BigInt(first));
  pauses.reset();
  a.send({ type: "inputStreamEnd", channel, sequence: BigInt(first) });
  await pauses.reached("session-budget"); // A's end waits for permits
  a.socket.pause(); // and A reads nothing more (it never answers the close)

  const b = await RawClient.connect(url);
  b.send(resumeAttach("takeover", accepted.sessionToken));
  const taken = (await b.nextOf("invocationAccepted")) as Extract<ServerMessage, { type: "invocationAccepted" }>;
  expect(taken.mappings[0]).toMatchObject({ inputHighWater: { sequence: BigInt(first), terminal: false } });
  openGate(); // the agent reads: permits come free, and A's end gets its turn
  await drained;
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
  const channelB = taken.mappings[0]!.channel;
  b.send({ type: "input-u8", channel: channelB, sequence: BigInt(first), payload: new Uint8Array(10).fill(9) });
  b.send({ type: "inputStreamEnd", channel: channelB, sequence: BigInt(first + 10) });
  const { messages } = await b.all();
  expect(messages.filter((m) => m.type === "inputStreamAck").at(-1)).toMatchObject({
    highestContiguousSequence: BigInt(first + 10),
    terminal: true,
  });
  expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
  expect(read).toBe(first + 10);
  a.terminate();
});

it("a takeover's acceptance waits for an input terminal still on its way to the store; one that fails is reported open, and the new owner ends the input", async () => {
  let holdEnds = false;
  const held: { fail: (error: Error) => void }[] = [];
  let attached!: () => void;
  const attachCommitted = new Promise<void>((resolve) => (attached = resolve));
  class HoldingStore extends MemorySessionStore {
    override endInput(...args: Parameters<MemorySessionStore["endInput"]>): Promise<void> {
      if (!holdEnds) return super.endInput(...args);
      return new Promise<void>((_resolve, reject) => held.push({ fail: reject }));
    }
    override async attach(...args: Parameters<MemorySessionStore["attach"]>): ReturnType<MemorySessionStore["attach"]> {
      const result = await super.attach(...args);
      attached();
      return result;
    }
  }
  let read = -1;
  const reader = readerAgent(async (input) => {
    let n = 0;
    for await (const bytes of input) n += bytes.length;
    read = n;
  });
  let url: string;
  ({ server, url } = await serveTestAgents(new HoldingStore(), [reader]));
  const a = await RawClient.connect(url);
  a.send(agentStart("test", "reader", "count", v.record(v.stream(randomUUID())) as SchemaValueJson));
  const accepted = (await a.nextOf("invocationAccepted")) as Extract<ServerMessage, { type: "invocationAccepted" }>;
  const channel = accepted.mappings[0]!.channel;
  a.send({ type: "input-u8", channel, sequence: 0n, payload: new Uint8Array(10) });
  await a.waitFor((m) => m.type === "inputStreamAck" && m.highestContiguousSequence === 10n);
  holdEnds = true;
  a.send({ type: "inputStreamEnd", channel, sequence: 10n });
  while (held.length === 0) await new Promise((resolve) => setImmediate(resolve));
  const b = await RawClient.connect(url);
  b.send(resumeAttach("takeover", accepted.sessionToken));
  await attachCommitted; // B's takeover is committed: its acceptance is being made
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
  holdEnds = false;
  held[0]!.fail(new Error("the store failed"));
  const taken = (await b.nextOf("invocationAccepted")) as Extract<ServerMessage, { type: "invocationAccepted" }>;
  expect(taken.mappings[0]).toMatchObject({ inputHighWater: { sequence: 10n, terminal: false } });
  const channelB = taken.mappings[0]!.channel;
  b.send({ type: "inputStreamEnd", channel: channelB, sequence: 10n });
  const { messages } = await b.all();
  expect(messages.filter((m) => m.type === "inputStreamAck").at(-1)).toMatchObject({ highestContiguousSequence: 10n, terminal: true });
  expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
  expect(read).toBe(10);
  a.terminate();
});
