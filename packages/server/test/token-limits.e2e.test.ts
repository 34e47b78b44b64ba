/**
 * A token has at most 8192 characters (decisions-v1 §4, §6), and what goes
 * into one can come from the host's catalogue (selector names), the
 * deployment (issuer, audience) and the value a stream lies in (its
 * coordinate). A session whose token cannot fit is refused with
 * `limit-exceeded` (not retryable) before anything is committed; a stream an
 * agent creates later whose token cannot fit fails its producer with
 * `producer-error` (docs/protocol/server.md, *Tokens that would be too
 * long*). Before, the mint threw and the client saw a retryable
 * `internal-error`, forever.
 *
 * A server checks its issuer and audience, and a StaticAgentHost its names,
 * so that its session tokens and shallow streams' tokens always fit
 * (token-budget.e2e.test.ts). What is left to reach these paths: a host of one's
 * own that serves longer names, and streams deeper than the budget's
 * guarantee; the stream tests below lift the issuer check (the module mock)
 * to get there with today's JSON depth limit.
 */
import { randomUUID } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Keyring } from "@golem-stream/tokens";
import type { JsonObject, SchemaGraphJson, SchemaValueJson, ServerMessage } from "@golem-stream/wire";
import { MemorySessionStore, createSessionServer, type AgentHost, type AgentTypeDefinition, type SessionServer } from "../src/index.js";
import { createDemoHost } from "../src/demo/index.js";
import type * as TokenBudget from "../src/admission/token-budget.js";
import { STREAM_TOO_DEEP } from "../src/invocation/output-producers.js";
import { RawClient, TOKEN, demoStart, v, resumeAttach } from "./helpers.js";

/** While set, createSessionServer takes any issuer: a deployment whose tokens are near the limit before any stream. */
const issuerCheck = vi.hoisted(() => ({ lifted: false }));
vi.mock("../src/admission/token-budget.js", async (importOriginal) => {
  const actual = await importOriginal<typeof TokenBudget>();
  const checkIssuerAndAudience: typeof actual.checkIssuerAndAudience = (...args) =>
    issuerCheck.lifted ? undefined : actual.checkIssuerAndAudience(...args);
  return { ...actual, checkIssuerAndAudience };
});

const servers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

const EMPTY_RECORD: JsonObject = { kind: "record", value: { fields: [] } };
const graph = (root: JsonObject): SchemaGraphJson => ({ root });
/** `list<list<... inner>>`, `depth` lists deep (a list nests least in the JSON of schemas and values). */
const nestedType = (depth: number, inner: JsonObject): JsonObject =>
  depth === 0 ? inner : { kind: "list", value: { element: nestedType(depth - 1, inner) } };
/** One element in each of `depth` nested lists: the leaf's coordinate grows by `/value/elements/0` per list. */
const nestedValue = (depth: number, inner: SchemaValueJson): SchemaValueJson =>
  depth === 0 ? inner : ({ kind: "list", value: { elements: [nestedValue(depth - 1, inner)] } } as unknown as SchemaValueJson);
const streamOf = (inner: JsonObject): JsonObject => ({ kind: "stream", value: { inner } });
const U32: JsonObject = { kind: "u32", value: {} };

/** Each stream 35 lists deep: a coordinate of about 600 characters. */
const DEPTH = 35;

function definition(
  name: string,
  methods: AgentTypeDefinition["methods"],
  implementations: AgentTypeDefinition["implementations"],
): AgentTypeDefinition {
  return { name, constructorParameters: graph(EMPTY_RECORD), config: [], methods, implementations };
}

const DEEP = definition(
  "deep",
  [
    {
      name: "deepInput",
      parameters: graph({ kind: "record", value: { fields: [{ name: "a", body: nestedType(DEPTH, streamOf(U32)) }] } }),
    },
    { name: "deepOutput", parameters: graph(EMPTY_RECORD), result: graph(streamOf(nestedType(DEPTH, streamOf(U32)))) },
    {
      name: "deepItems",
      parameters: graph({ kind: "record", value: { fields: [{ name: "a", body: streamOf(nestedType(DEPTH, streamOf(U32))) }] } }),
    },
  ],
  {
    deepInput: async () => undefined,
    deepItems: async (ctx) => {
      for await (const _ of ctx.inputValues((ctx.parameters.value as { fields: JsonObject[] }).fields[0]));
      return undefined;
    },
    deepOutput: async (ctx) => {
      const inner = ctx.output((async function* () {})());
      return ctx.output(
        (async function* () {
          yield nestedValue(DEPTH, inner) as never;
        })(),
      );
    },
  },
);

async function serve(
  test: AgentTypeDefinition,
  issuer?: string,
  keyring = Keyring.generate("k1"),
): Promise<{ url: string; store: MemorySessionStore; server: SessionServer }> {
  const store = new MemorySessionStore();
  const demo = createDemoHost();
  // A host of its own, not a StaticAgentHost: it may serve names longer than 128 bytes.
  const host: AgentHost = {
    agentTypes: (application, environment) =>
      application === "test" ? (environment === "default" ? [test] : undefined) : demo.agentTypes(application, environment),
    invoke: (ctx) => (ctx.application === "test" ? test.implementations[ctx.method]!(ctx) : demo.invoke(ctx)),
  };
  const server = createSessionServer({
    store,
    host,
    keyring,
    authenticator: (token) => (token === TOKEN ? { account: "acme", principal: "alice" } : undefined),
    ...(issuer === undefined ? {} : { issuer }),
  });
  servers.push(server);
  return { url: (await server.listen(0, "127.0.0.1")).url, store, server };
}

const testStart = (agentType: string, method: string, methodParameters: SchemaValueJson) =>
  demoStart(method, methodParameters, {
    selector: { application: "test", environment: "default", agentType, method, constructorParameters: v.record() },
  });

/** The one rejection of a first message, and the close that follows it. */
async function rejection(client: RawClient): Promise<{ rejected: ServerMessage; code: number }> {
  const { messages, closed } = await client.all();
  expect(messages.map((m) => m.type)).toEqual(["invocationRejected"]);
  return { rejected: messages[0]!, code: closed.code };
}

describe("a session token that would be longer than 8192 characters", () => {
  it("an agent type of a host of its own whose names are too long together: the start is refused limit-exceeded, not retryable, close 1002, nothing stored", async () => {
    const longName = "agent-".repeat(1000);
    const { url, store } = await serve(
      definition(longName, [{ name: "run", parameters: graph(EMPTY_RECORD) }], { run: async () => undefined }),
    );
    const client = await RawClient.connect(url);
    const start = testStart(longName, "run", v.record());
    client.send(start);
    const { rejected, code } = await rejection(client);
    expect(rejected).toEqual({
      type: "invocationRejected",
      attemptId: start.attemptId,
      code: "limit-exceeded",
      retryable: false,
      message: expect.stringMatching(
        /^the session token would be \d{4,5} characters long, over the limit of 8192: the application, environment, agent type and method names, the idempotency key and the caller's identity are too long together$/,
      ),
    });
    expect(code).toBe(1002);
    expect(await store.getAttempt(start.attemptId)).toBeUndefined();
  });
});

describe("a stream token that would be longer than 8192 characters (a long issuer leaves room for shallow streams only)", () => {
  // With this issuer a session token and a shallow stream's token fit, a stream 35 records deep does not.
  const ISSUER = "i".repeat(5600);
  beforeEach(() => {
    issuerCheck.lifted = true;
  });
  afterEach(() => {
    issuerCheck.lifted = false;
  });

  it("an input stream of the start too deep in the parameters: refused limit-exceeded, not retryable, close 1002, nothing stored; a shallow one starts", async () => {
    const { url, store } = await serve(DEEP, ISSUER);
    const deep = await RawClient.connect(url);
    const start = testStart("deep", "deepInput", v.record(nestedValue(DEPTH, v.stream(randomUUID()))));
    deep.send(start);
    const { rejected, code } = await rejection(deep);
    expect(rejected).toMatchObject({ type: "invocationRejected", attemptId: start.attemptId, code: "limit-exceeded", retryable: false });
    expect((rejected as { message: string }).message).toMatch(
      /^the token of an input stream would be \d{4} characters long, over the limit of 8192: the stream lies too deep in its value \(a coordinate of \d{3} characters\) for the caller's identity$/,
    );
    expect(code).toBe(1002);
    expect(await store.getAttempt(start.attemptId)).toBeUndefined();

    const shallow = await RawClient.connect(url);
    shallow.send(demoStart("reverse", v.record(v.stream(randomUUID()))));
    const accepted = await shallow.nextOf("invocationAccepted");
    expect(accepted.mappings).toHaveLength(1);
    shallow.close();
  });

  it("an input item that introduces a stream too deep in it: refused limit-exceeded after acceptance, close 1002, the item not accepted", async () => {
    const { url, store } = await serve(DEEP, ISSUER);
    const client = await RawClient.connect(url);
    client.send(testStart("deep", "deepItems", v.record(v.stream(randomUUID()))));
    const accepted = await client.nextOf("invocationAccepted");
    const channel = accepted.mappings[0]!.channel;
    client.send({ type: "inputStreamItem", channel, sequence: 0n, value: nestedValue(DEPTH, v.stream(randomUUID())) });
    const { messages, closed } = await client.all();
    expect(messages.map((m) => m.type)).toEqual(["invocationAccepted", "invocationRejected"]);
    expect(messages[1]).toMatchObject({
      code: "limit-exceeded",
      retryable: false,
      message: expect.stringMatching(/^the token of an input stream would be \d{4} characters long/),
    });
    expect(closed.code).toBe(1002);
    const streamId = (await store.listStreams((await store.getAttempt(accepted.attemptId))!.sessionId)).find(
      (s) => s.direction === "input",
    )!.streamId;
    expect(await store.readInput(streamId, 0n, 1n)).toEqual([]);
  });

  it("an output stream an agent nests too deep in an item: that item's stream ends producer-error, the invocation finishes; shallow nested streams work", async () => {
    const { url } = await serve(DEEP, ISSUER);
    const client = await RawClient.connect(url);
    client.send(testStart("deep", "deepOutput", v.record()));
    const { messages, closed } = await client.all();
    expect(messages.map((m) => m.type)).not.toContain("invocationRejected");
    expect(messages.filter((m) => m.type === "outputStreamItem")).toEqual([]);
    expect(messages.find((m) => m.type === "outputStreamEnd")).toMatchObject({
      sequence: 0n,
      outcome: { kind: "error", code: "producer-error", message: STREAM_TOO_DEEP },
    });
    expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
    expect(closed.code).toBe(1000);

    const groups = await RawClient.connect(url);
    groups.send(demoStart("groups", v.record(v.u32(2), v.u32(2))));
    const finished = await groups.all();
    expect(finished.messages.filter((m) => m.type === "outputStreamItem")).toHaveLength(2 + 2 * 2);
    expect(finished.messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
  });
});

describe("a refreshed session token that would be longer than 8192 characters", () => {
  it("after a rotation to a longer key id, a takeover of a session whose token was near the limit is refused limit-exceeded and attaches nothing", async () => {
    // The agent type name's length that puts the session's token just under the limit, measured on a first server.
    const typeNamed = (name: string) =>
      definition(name, [{ name: "run", parameters: graph(EMPTY_RECORD) }], { run: async () => undefined });
    const probe = await serve(typeNamed("t"));
    const measuring = await RawClient.connect(probe.url);
    measuring.send(testStart("t", "run", v.record()));
    const measured = (await measuring.nextOf("invocationAccepted")).sessionToken.length;
    const bytesLeft = Math.floor(((8192 - measured) * 3) / 4);
    const keyring = Keyring.generate("k1");
    const longName = "t".repeat(1 + bytesLeft - 20);
    const { url, store, server } = await serve(typeNamed(longName), undefined, keyring);

    const client = await RawClient.connect(url);
    client.send(testStart(longName, "run", v.record()));
    const { sessionToken } = await client.nextOf("invocationAccepted");
    await client.all();
    expect(sessionToken.length).toBeLessThanOrEqual(8192);
    expect(sessionToken.length).toBeGreaterThan(8192 - 40);

    server.rotateKeyring(keyring.rotate("k".repeat(64)));
    const takeover = resumeAttach("takeover", sessionToken);
    const again = await RawClient.connect(url);
    again.send(takeover);
    const { rejected, code } = await rejection(again);
    expect(rejected).toMatchObject({ type: "invocationRejected", attemptId: takeover.attemptId, code: "limit-exceeded", retryable: false });
    expect((rejected as { message: string }).message).toMatch(
      /^the session token would be \d{4} characters long, over the limit of 8192: /,
    );
    expect(code).toBe(1002);
    expect(await store.getAttempt(takeover.attemptId)).toBeUndefined();
  });
});
