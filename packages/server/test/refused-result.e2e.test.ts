/**
 * A method whose result cannot be committed fails the invocation, and the
 * failure's public message says why: the result does not match the declared
 * schema (with the rule it broke), is missing, or exists where none is
 * declared. Any other failure of an agent stays `invocation failed`, with
 * nothing of the error in it (it may hold the agent's secrets).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Keyring } from "@golem-stream/tokens";
import type { JsonObject, SchemaValueJson, ServerMessage } from "@golem-stream/wire";
import { createSessionServer, MemorySessionStore, StaticAgentHost, type AgentTypeDefinition, type SessionServer } from "../src/index.js";
import { RawClient, TOKEN, emptyStart } from "./helpers.js";

const EMPTY: JsonObject = { kind: "record", value: { fields: [] } };
const U8: JsonObject = { kind: "u8", value: {} };

/** Methods that return what their name says; `byte` declares a u8 result, `nothing` none. */
const refuser: AgentTypeDefinition = {
  name: "refuser",
  constructorParameters: { root: EMPTY },
  config: [],
  methods: [
    { name: "tooBig", parameters: { root: EMPTY }, result: { root: U8 } },
    { name: "missing", parameters: { root: EMPTY }, result: { root: U8 } },
    { name: "unexpected", parameters: { root: EMPTY } },
    { name: "throws", parameters: { root: EMPTY }, result: { root: U8 } },
  ],
  implementations: {
    tooBig: async () => ({ kind: "u8", value: 300 }) as SchemaValueJson,
    missing: async () => undefined,
    unexpected: async () => ({ kind: "u8", value: 1 }) as SchemaValueJson,
    throws: async () => {
      throw new Error("password=hunter2");
    },
  },
};

let server: SessionServer;
let url: string;
beforeAll(async () => {
  server = createSessionServer({
    store: new MemorySessionStore(),
    host: new StaticAgentHost({ test: { default: [refuser] } }),
    keyring: Keyring.generate("k1"),
    authenticator: (token) => (token === TOKEN ? { account: "acme", principal: "alice" } : undefined),
  });
  ({ url } = await server.listen());
});
afterAll(async () => server.close());

async function outcomeOf(method: string): Promise<unknown> {
  const client = await RawClient.connect(url);
  client.send(emptyStart("refuser", method));
  const { messages } = await client.all();
  const finished = messages.find((m): m is Extract<ServerMessage, { type: "invocationFinished" }> => m.type === "invocationFinished");
  return finished?.outcome;
}

describe("a result the server cannot commit", () => {
  it.each([
    ["tooBig", /^the method's result does not match its declared schema: .*255/],
    ["missing", /^the method returned no result$/],
    ["unexpected", /^the method has no result, yet returned a value$/],
  ])("%s: invocation-failed, and the message says why", async (method, message) => {
    expect(await outcomeOf(method)).toMatchObject({ kind: "failure", code: "invocation-failed", message: expect.stringMatching(message) });
  });

  it("an agent that throws: the message says nothing of its error", async () => {
    expect(await outcomeOf("throws")).toEqual({ kind: "failure", code: "invocation-failed", message: "invocation failed" });
  });
});
