/**
 * What the log says when an agent of the operator's own fails at run time
 * (`invocation.failed`, `producer.failed`): enough to find the line that
 * failed (the error's stack, its causes' too), while the client learns
 * nothing of it but the public reason.
 */
import { afterEach, expect, it } from "vitest";
import type { SchemaValueJson, ServerMessage } from "@golem-stream/wire";
import { MemorySessionStore, PublicProducerError, defineAgentType, implement, t, type SessionServer } from "../src/index.js";
import { RawClient, agentStart, serveTestAgents, v } from "./helpers.js";
import { recordingLogger } from "./support/recording-logger.js";

let server: SessionServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** What the agent believes it has: `empty().inner.deeper` reads a member of `undefined`, an agent's usual slip. */
interface Nested {
  readonly inner: { readonly deeper: number };
}
const empty = (): Nested => ({}) as Nested;

const faulty = defineAgentType({
  name: "faulty",
  constructor: t.record({}),
  methods: {
    dig: { params: t.record({}), result: t.u32() },
    numbers: { params: t.record({}), result: t.stream(t.u32()) },
    letters: { params: t.record({}), result: t.record({ first: t.stream(t.u32()), second: t.stream(t.u32()) }) },
    secret: { params: t.record({}), result: t.stream(t.u32()) },
    told: { params: t.record({}), result: t.stream(t.u32()) },
  },
});

/** Both methods read a member of `undefined`, as an agent's slip does: `dig` in its body, `numbers` in its output's producer. */
const typed = implement(faulty, {
  dig: () => empty().inner.deeper,
  numbers: () =>
    (function* () {
      yield 1;
      yield empty().inner.deeper;
    })(),
  // A JavaScript caller (no type checker) yielding a string into its second stream<u32>.
  letters: () => ({ first: [1], second: ["a" as never] }),
  // Its producer ends the stream with a reason meant for the caller.
  told: () =>
    (function* () {
      yield 1;
      throw new PublicProducerError("the sensor went offline");
    })(),
  // Its source throws while the server asks what it is: the agent's own text, not the client's to read.
  secret: () =>
    new Proxy(
      {},
      {
        has() {
          throw new Error("db password is hunter2");
        },
      },
    ) as never,
});

/** Runs `method` of `faulty` to its end on a server logging to `log`: every message the client received. */
async function run(method: string, log: ReturnType<typeof recordingLogger>): Promise<ServerMessage[]> {
  let url: string;
  ({ server, url } = await serveTestAgents(new MemorySessionStore(), [typed], { logger: log.logger }));
  const client = await RawClient.connect(url);
  client.send(agentStart("test", "faulty", method, v.record() as SchemaValueJson));
  return (await client.all()).messages;
}

const text = (messages: readonly ServerMessage[]): string =>
  JSON.stringify(messages, (_key, value: unknown) => (typeof value === "bigint" ? String(value) : value));

it("invocation.failed carries the stack of the agent's error, which names the agent's own line; the client gets none of it", async () => {
  const log = recordingLogger();
  const messages = await run("dig", log);
  expect(messages.at(-1)).toEqual({
    type: "invocationFinished",
    outcome: { kind: "failure", code: "invocation-failed", message: "invocation failed" },
  });
  const line = log.lines.find((l) => l["event"] === "invocation.failed");
  expect(line).toMatchObject({ error: expect.stringMatching(/^TypeError: Cannot read properties of undefined \(reading 'deeper'\)$/) });
  expect(line?.["stack"]).toMatch(
    /^TypeError: Cannot read properties of undefined \(reading 'deeper'\)\n {4}at .*agent-failure-logs\.e2e\.test\.ts:\d+/,
  );
  expect(text(messages)).not.toMatch(/agent-failure-logs|deeper|\n {4}at /);
});

it("producer.failed carries the stack of the producer's error; the client's stream ends with the public producer-error only", async () => {
  const log = recordingLogger();
  const messages = await run("numbers", log);
  expect(messages).toContainEqual(
    expect.objectContaining({ type: "outputStreamEnd", outcome: { kind: "error", code: "producer-error", message: "producer failed" } }),
  );
  const line = log.lines.find((l) => l["event"] === "producer.failed");
  expect(line?.["stack"]).toMatch(
    /^TypeError: Cannot read properties of undefined \(reading 'deeper'\)\n {4}at .*agent-failure-logs\.e2e\.test\.ts:\d+/,
  );
  expect(text(messages)).not.toMatch(/agent-failure-logs|deeper|\n {4}at /);
});

it("producer.failed names the session, what was invoked and which output stream failed", async () => {
  const log = recordingLogger();
  const messages = await run("letters", log);
  expect(messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
  expect(log.lines.filter((l) => l["event"] === "producer.failed")).toEqual([
    {
      event: "producer.failed",
      session: expect.any(String),
      application: "test",
      environment: "default",
      agentType: "faulty",
      method: "letters",
      stream: "/result/value/value/fields/1",
      streamId: expect.any(String),
      error:
        "PublicProducerError: an output item does not match its declared schema: value: expected a number (caused by ProtocolError: value: expected a number)",
      stack: expect.stringMatching(/^PublicProducerError: an output item does not match its declared schema: value: expected a number\n/),
    },
  ]);
  // The caller is told which rule the item broke, as a refused result's caller is.
  expect(messages).toContainEqual(
    expect.objectContaining({
      type: "outputStreamEnd",
      outcome: {
        kind: "error",
        code: "producer-error",
        message: "an output item does not match its declared schema: value: expected a number",
      },
    }),
  );
  const session = log.lines.find((l) => l["event"] === "session.start")?.["session"];
  expect(log.lines.find((l) => l["event"] === "producer.failed")?.["session"]).toBe(session);
});

it("producer.failed is logged for a public reason too (the agent's own, or the server's check of an item): the agent's author reads the log, not the caller's screen", async () => {
  const log = recordingLogger();
  const messages = await run("told", log);
  expect(messages).toContainEqual(
    expect.objectContaining({
      type: "outputStreamEnd",
      outcome: { kind: "error", code: "producer-error", message: "the sensor went offline" },
    }),
  );
  expect(log.lines.find((l) => l["event"] === "producer.failed")).toMatchObject({
    method: "told",
    stream: "/result/value",
    error: expect.stringMatching(/the sensor went offline/),
  });
});

it("invocation.failed names what was invoked beside the session, as the other lines about a session do", async () => {
  const log = recordingLogger();
  await run("dig", log);
  expect(log.lines.find((l) => l["event"] === "invocation.failed")).toMatchObject({
    session: log.lines.find((l) => l["event"] === "session.start")?.["session"],
    application: "test",
    environment: "default",
    agentType: "faulty",
    method: "dig",
  });
});

it("an error the agent's own code throws while its result's stream source is read reaches the log, not the client", async () => {
  const log = recordingLogger();
  const messages = await run("secret", log);
  expect(messages.at(-1)).toMatchObject({
    type: "invocationFinished",
    outcome: { kind: "failure", code: "invocation-failed", message: expect.stringContaining("could not be read") },
  });
  expect(text(messages)).not.toContain("hunter2");
  expect(JSON.stringify(log.lines)).toContain("hunter2");
});
