/**
 * A `stream<binary>` input's restrictions, checked on every item the client sends (protocol
 * sections 3.1 and 7, decisions section 3): the MIME type, when present, must be in the element
 * schema's `mimeTypes` (matched exactly, docs/protocol/schema-value.md), and the payload's length
 * within `minBytes`..`maxBytes`, an empty payload only where the schema allows it. An item that
 * breaks one is `validation-error` and closes 1002 (the session keeps running); one that keeps
 * them is acknowledged.
 */
import { afterEach, expect, it } from "vitest";
import type { JsonValue } from "@golem-stream/wire";
import { MemorySessionStore, t, type AgentTypeDefinition, type SessionServer } from "../src/index.js";
import { RawClient, agentStart, serveTestAgents, v } from "./helpers.js";

let server: SessionServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const EMPTY = t.graph(t.record({}));
const PICTURE = t.binary({ mimeTypes: ["image/png"], minBytes: 1, maxBytes: 4 });

/** `take` reads its pictures to the end. */
const pictures: AgentTypeDefinition = {
  name: "pictures",
  constructorParameters: EMPTY,
  config: [],
  methods: [{ name: "take", parameters: t.graph(t.record({ input: t.stream(PICTURE) })) }],
  implementations: {
    take: async (ctx) => {
      const input = (ctx.parameters as unknown as { value: { fields: JsonValue[] } }).value.fields[0];
      for await (const picture of ctx.inputBlobs(input)) void picture;
      return undefined;
    },
  },
};

/** Starts `take` and sends one item; the first message the server answers it with, and the close. */
async function send(url: string, payload: number[], mimeType?: string) {
  const client = await RawClient.connect(url);
  client.send(agentStart("test", "pictures", "take", v.record(v.stream(crypto.randomUUID()))));
  const accepted = await client.nextOf("invocationAccepted");
  const channel = accepted.mappings[0]!.channel;
  client.send({
    type: "input-binary",
    channel,
    sequence: 0n,
    payload: new Uint8Array(payload),
    ...(mimeType === undefined ? {} : { mimeType }),
  });
  const answer = await client.next();
  if (answer.type === "inputStreamAck") {
    client.terminate();
    return { answer, closed: undefined };
  }
  return { answer, closed: (await client.all()).closed.code };
}

it.each([
  ["a PNG of 2 bytes", [1, 2], "image/png"],
  ["2 bytes with no MIME type", [1, 2], undefined],
  ["4 bytes, the most allowed", [1, 2, 3, 4], "image/png"],
])("keeps %s: acknowledged", async (_what, payload, mimeType) => {
  let url: string;
  ({ server, url } = await serveTestAgents(new MemorySessionStore(), [pictures]));
  const { answer } = await send(url, payload, mimeType);
  expect(answer).toMatchObject({ type: "inputStreamAck", highestContiguousSequence: 1n });
});

it.each([
  ["a MIME type outside the list", [1, 2], "text/plain"],
  ["the list's type in other case", [1, 2], "IMAGE/PNG"],
  ["an empty payload where at least 1 byte is required", [], "image/png"],
  ["5 bytes where at most 4 are allowed", [1, 2, 3, 4, 5], "image/png"],
])("refuses %s: validation-error, close 1002", async (_what, payload, mimeType) => {
  let url: string;
  ({ server, url } = await serveTestAgents(new MemorySessionStore(), [pictures]));
  const { answer, closed } = await send(url, payload, mimeType);
  expect(answer).toMatchObject({ type: "invocationRejected", code: "validation-error" });
  expect(closed).toBe(1002);
});
