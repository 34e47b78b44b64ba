/**
 * `startEmbeddedServer({ agents, demo })` over loopback: it serves the
 * catalogue and runs its methods, serves the demo beside it only when asked,
 * and refuses a bad catalogue before creating anything.
 */
import { existsSync } from "node:fs";
import type { ServerMessage } from "@golem-stream/wire";
import { afterEach, describe, expect, it } from "vitest";
import {
  CatalogueError,
  DISCOVERY_PATH,
  defineAgentType,
  defineCatalogue,
  implement,
  t,
  type AgentTypeDefinition,
  type Catalogue,
} from "../src/index.js";
import { RawClient, TOKEN, emptyStart, startTestServer, type TestServer } from "./helpers.js";

const greeter = defineAgentType({
  name: "greeter",
  constructor: t.record({}),
  methods: { hello: { params: t.record({}), result: t.string() } },
});
const typed = implement(greeter, { hello: () => "hello" });

/** An untyped agent type whose one method `answer` returns 42. */
const untyped: AgentTypeDefinition = {
  name: "answers",
  constructorParameters: t.graph(t.record({})),
  config: [],
  methods: [{ name: "answer", parameters: t.graph(t.record({})), result: t.graph(t.u32()) }],
  implementations: { answer: async () => ({ kind: "u32", value: 42 }) as never },
};

describe("startEmbeddedServer({ agents })", () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.dispose();
    server = undefined;
  });

  async function typesOf(application: string): Promise<{ status: number; names: string[] }> {
    const response = await fetch(`${server?.httpUrl}${DISCOVERY_PATH}?application=${application}&environment=default`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    if (response.status !== 200) return { status: response.status, names: [] };
    const body = (await response.json()) as { agentTypes: { name: string }[] };
    return { status: 200, names: body.agentTypes.map((type) => type.name) };
  }

  it("serves the catalogue, runs its methods, and serves no demo unless asked", async () => {
    server = await startTestServer({ agents: defineCatalogue({ applications: { test: { default: [typed, untyped] } } }) });
    expect(await typesOf("test")).toEqual({ status: 200, names: ["greeter", "answers"] });
    expect((await typesOf("demo")).status).toBe(404);
    const client = await RawClient.connect(server.url);
    client.send(emptyStart("answers", "answer"));
    const { messages } = await client.all();
    const result = messages.find((m): m is Extract<ServerMessage, { type: "invocationResult" }> => m.type === "invocationResult");
    expect(result?.result).toMatchObject({ kind: "value", value: { kind: "u32", value: 42 } });
    expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
  });

  it("with demo: true serves the demo beside it", async () => {
    server = await startTestServer({ agents: { applications: { test: { default: [untyped] } } }, demo: true });
    expect(await typesOf("test")).toEqual({ status: 200, names: ["answers"] });
    expect(await typesOf("demo")).toEqual({ status: 200, names: ["echo"] });
  });

  it("refuses a bad catalogue before creating the data directory", async () => {
    const dataDir = `/tmp/golem-stream-never-${process.pid}-${Date.now()}`;
    await expect(startTestServer({ dataDir, agents: { applications: { test: { default: [] } } } as Catalogue })).rejects.toThrow(
      CatalogueError,
    );
    expect(existsSync(dataDir)).toBe(false);
  });
});
