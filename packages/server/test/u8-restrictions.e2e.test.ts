/**
 * A `stream<u8>` whose element has `min` and `max` restrictions: its items
 * travel as raw bytes (decisions-v1 section 3), never through the SchemaValue
 * decoder, yet every stream item is validated against the element schema
 * pinned to its channel (protocol sections 3.1 and 3.3). A byte outside the
 * range is refused on input, before anything of its batch is acknowledged
 * or handed to the agent, and an agent's output byte outside it fails the
 * output stream instead of reaching the client.
 */
import { randomUUID } from "node:crypto";
import { afterEach, expect, it } from "vitest";
import type { JsonObject, SchemaValueJson, ServerMessage } from "@golem-stream/wire";
import { MemorySessionStore, t, type AgentTypeDefinition, type SessionServer } from "../src/index.js";
import { RawClient, agentStart, serveTestAgents, v } from "./helpers.js";

const RANGED_U8 = t.u8({ min: { kind: "unsigned", value: "10" }, max: { kind: "unsigned", value: "20" } });
const EMPTY = t.graph(t.record({}));

let server: SessionServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** `take` hands back what it was given; `emit` produces 15 then 0 (outside the range). */
function rangedBytes(received: number[]): AgentTypeDefinition {
  return {
    name: "ranged",
    constructorParameters: EMPTY,
    config: [],
    methods: [
      { name: "take", parameters: t.graph(t.record({ input: t.stream(RANGED_U8) })) },
      { name: "emit", parameters: EMPTY, result: t.graph(t.stream(RANGED_U8)) },
    ],
    implementations: {
      take: async (ctx) => {
        const fields = (ctx.parameters as unknown as { value: { fields: JsonObject[] } }).value.fields;
        for await (const bytes of ctx.inputBytes(fields[0])) received.push(...bytes);
        return undefined;
      },
      emit: async (ctx) => ctx.output([Uint8Array.of(15, 0)]),
    },
  };
}

it("an input byte outside the element's range is refused with validation-error; nothing of its batch is acknowledged or reaches the agent", async () => {
  const received: number[] = [];
  let url: string;
  ({ server, url } = await serveTestAgents(new MemorySessionStore(), [rangedBytes(received)]));
  const client = await RawClient.connect(url);
  client.send(agentStart("test", "ranged", "take", v.record(v.stream(randomUUID())) as SchemaValueJson));
  const accepted = (await client.nextOf("invocationAccepted")) as Extract<ServerMessage, { type: "invocationAccepted" }>;
  const channel = accepted.mappings[0]!.channel;
  client.send({ type: "input-u8", channel, sequence: 0n, payload: Uint8Array.of(10, 15, 20) });
  expect(await client.nextOf("inputStreamAck")).toMatchObject({ highestContiguousSequence: 3n });
  client.send({ type: "input-u8", channel, sequence: 3n, payload: Uint8Array.of(12, 255, 13) });
  const { messages, closed } = await client.all();
  // Every message of the connection: the first batch's acknowledgement is the only one.
  expect(messages.filter((m) => m.type === "inputStreamAck").map((m) => m.highestContiguousSequence)).toEqual([3n]);
  expect(messages.at(-1)).toMatchObject({
    type: "invocationRejected",
    code: "validation-error",
    message: expect.stringMatching(/item 1 of the batch is 255/),
  });
  expect(closed.code).toBe(1002);
  expect(received).toEqual([10, 15, 20]);
});

it("an agent's output byte outside the element's range is never sent: the output stream fails", async () => {
  let url: string;
  ({ server, url } = await serveTestAgents(new MemorySessionStore(), [rangedBytes([])]));
  const client = await RawClient.connect(url);
  client.send(agentStart("test", "ranged", "emit", v.record() as SchemaValueJson));
  const { messages } = await client.all();
  expect(messages.filter((m) => m.type === "output-u8")).toEqual([]);
  expect(messages).toContainEqual(
    expect.objectContaining({ type: "outputStreamEnd", outcome: expect.objectContaining({ kind: "error" }) }),
  );
});
