/**
 * A nested input the agent stops reading (consumer-drop) before the ACK that announces it to the
 * client has left: its server cancel is recorded while its channel is still reserved, and is sent
 * right after that ACK (decisions §8: every input terminal and acknowledged before
 * `invocationFinished`). Before, the ACK announced the input open and nothing followed.
 */
import { randomUUID } from "node:crypto";
import { afterEach, expect, it } from "vitest";
import type { JsonObject, SchemaValueJson, ServerMessage } from "@golem-stream/wire";
import { MemorySessionStore, type AgentTypeDefinition, type SessionServer } from "../src/index.js";
import { RawClient, agentStart, serveTestAgents, v } from "./helpers.js";

const STRING: JsonObject = { kind: "string", value: {} };
const stream = (inner: JsonObject): JsonObject => ({ kind: "stream", value: { inner } });
const record = (...fields: [string, JsonObject][]): JsonObject => ({
  kind: "record",
  value: { fields: fields.map(([name, body]) => ({ name, body })) },
});

let server: SessionServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

it("a nested input dropped by the agent before the ACK announcing it is cancelled right after that ACK, before invocationFinished", async () => {
  let gate: Promise<void> | undefined;
  let release!: () => void;
  /** Holds every write while `gate` is set: the item's commit, and the nested input's cancel. */
  class GatedStore extends MemorySessionStore {
    override acceptInput(...args: Parameters<MemorySessionStore["acceptInput"]>): Promise<void> {
      const held = gate;
      return held === undefined ? super.acceptInput(...args) : held.then(() => super.acceptInput(...args));
    }
    override endInput(...args: Parameters<MemorySessionStore["endInput"]>): Promise<void> {
      const held = gate;
      return held === undefined ? super.endInput(...args) : held.then(() => super.endInput(...args));
    }
  }
  let dropped!: () => void;
  const droppedByAgent = new Promise<void>((resolve) => (dropped = resolve));
  const dropper: AgentTypeDefinition = {
    name: "dropper",
    constructorParameters: { root: record() },
    config: [],
    methods: [{ name: "drop", parameters: { root: record(["outer", stream(record(["name", STRING], ["inner", stream(STRING)]))]) } }],
    implementations: {
      drop: async (ctx) => {
        const fields = (ctx.parameters as unknown as { value: { fields: JsonObject[] } }).value.fields;
        for await (const item of ctx.inputValues(fields[0])) {
          const inner = ctx.inputValues((item as unknown as { value: { fields: JsonObject[] } }).value.fields[1])[Symbol.asyncIterator]();
          void inner.next().catch(() => undefined); // reading it opens its queue...
          await inner.return?.(); // ...and the agent does not want it after all
          dropped();
        }
        return undefined;
      },
    },
  };
  let url: string;
  ({ server, url } = await serveTestAgents(new GatedStore(), [dropper]));
  const client = await RawClient.connect(url);
  client.send(agentStart("test", "dropper", "drop", v.record(v.stream(randomUUID())) as SchemaValueJson));
  const accepted = (await client.nextOf("invocationAccepted")) as Extract<ServerMessage, { type: "invocationAccepted" }>;
  const outer = accepted.mappings[0]!.channel;
  gate = new Promise<void>((resolve) => (release = resolve));
  client.send({
    type: "inputStreamItem",
    channel: outer,
    sequence: 0n,
    value: v.record(v.str("n"), v.stream(randomUUID())) as SchemaValueJson,
  });
  await droppedByAgent; // the item is not committed yet, so its ACK (announcing the nested input) is not sent
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
  gate = undefined;
  release();
  const announcing = (await client.waitFor((m) => m.type === "inputStreamAck" && m.mappings.length > 0)) as Extract<
    ServerMessage,
    { type: "inputStreamAck" }
  >;
  const inner = announcing.mappings[0]!.channel;
  client.send({ type: "inputStreamEnd", channel: outer, sequence: 1n });
  const { messages } = await client.all();
  const onInner = messages.filter((m) => "channel" in m && m.channel === inner);
  expect(onInner).toEqual([
    expect.objectContaining({ type: "streamCancel", reason: "consumer-drop" }),
    expect.objectContaining({ type: "inputStreamAck", terminal: true }),
  ]);
  const finishedAt = messages.findIndex((m) => m.type === "invocationFinished");
  expect(messages.indexOf(onInner[1]!)).toBeLessThan(finishedAt);
});
