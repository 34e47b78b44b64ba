/**
 * A binary item's `mimeType` as an agent produces it: its parameters are left
 * out (`text/html; charset=utf-8` is sent as `text/html`), and one that is no
 * MIME type ends its stream with a producer error where it was produced.
 * Stored unchecked, it was refused only when the item was sent, at every
 * resume: the invocation could never be delivered again.
 */
import { afterEach, expect, it } from "vitest";
import type { SchemaValueJson, ServerMessage } from "@golem-stream/wire";
import { MemorySessionStore, defineAgentType, implement, t, type SessionServer } from "../src/index.js";
import { RawClient, agentStart, serveTestAgents, v } from "./helpers.js";

let server: SessionServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const files = defineAgentType({
  name: "files",
  constructor: t.record({}),
  methods: {
    page: { params: t.record({}), result: t.stream(t.binary()) },
    odd: { params: t.record({}), result: t.stream(t.binary()) },
  },
});

const bytes = new TextEncoder().encode("<p>hi</p>");
const agents = implement(files, {
  // As an agent passing an upstream Content-Type on would.
  page: () => [{ bytes, mimeType: "text/html; charset=utf-8" }],
  odd: () => [
    { bytes, mimeType: "text/html" },
    { bytes, mimeType: "not a type" },
  ],
});

async function run(method: string): Promise<ServerMessage[]> {
  let url: string;
  ({ server, url } = await serveTestAgents(new MemorySessionStore(), [agents]));
  const client = await RawClient.connect(url);
  client.send(agentStart("test", "files", method, v.record() as SchemaValueJson));
  return (await client.all()).messages;
}

it("a produced binary item's MIME type is sent without its parameters, and the invocation succeeds", async () => {
  const messages = await run("page");
  expect(messages).toContainEqual(expect.objectContaining({ type: "output-binary", mimeType: "text/html" }));
  expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
});

it("a produced binary item whose mimeType is no MIME type ends its stream with a producer error, after the items before it", async () => {
  const messages = await run("odd");
  const items = messages.filter((m) => m.type === "output-binary");
  expect(items).toHaveLength(1);
  expect(messages).toContainEqual(
    expect.objectContaining({
      type: "outputStreamEnd",
      outcome: { kind: "error", code: "producer-error", message: "a binary item's mimeType must be a MIME type such as text/plain" },
    }),
  );
  expect(messages.at(-1)).toMatchObject({ type: "invocationFinished" });
});
