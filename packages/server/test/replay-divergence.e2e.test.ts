/**
 * Non-determinism across a real restart (docs/durable-execution.md, *Output: compared, not
 * committed again*): the embedded server on SQLite is closed while a replayable method waits
 * after two items and started again on the same data directory, which re-runs it. A method whose
 * output depends on state outside the journal (a call counter) produces other items and fails
 * with the documented message, counted by `golem_stream_replay_divergences_total`, while the
 * client keeps what it received (a resume from the start gets it unchanged); one whose items differ between runs only in journaled values
 * (`ctx.step`, `ctx.random`) continues to success with the values of the first run.
 */
import { afterEach, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ServerMessage } from "@golem-stream/wire";
import { defineAgentType, t } from "@golem-stream/contract";
import { defineCatalogue, implement } from "../src/index.js";
import { RawClient, agentStart, outputValues, startTestServer, v, type TestServer, resumeAttach } from "./helpers.js";

const DIVERGED = "the method produced different output when it was re-run (non-deterministic)";

/** Calls of the methods' sources of variation in this process: a re-run sees the count go on. */
let calls = 0;

const dice = defineAgentType({
  name: "dice",
  constructor: t.record({}),
  durability: "replay",
  methods: {
    unjournaled: { params: t.record({}), result: t.stream(t.string()) },
    journaled: { params: t.record({}), result: t.stream(t.string()) },
  },
});

/** Items `i:label` for i in 0..3; the first run waits after two until its server shuts down. */
function fourItems(attempt: number, signal: AbortSignal, label: string): AsyncIterable<string> {
  return (async function* () {
    for (let i = 0; i < 4; i++) {
      if (i === 2 && attempt === 1)
        await new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
      yield `${i}:${label}`;
    }
  })();
}

const agents = defineCatalogue({
  applications: {
    test: {
      default: [
        implement(dice, {
          async unjournaled(ctx) {
            calls += 1;
            return fourItems(ctx.attempt, ctx.signal, String(calls));
          },
          async journaled(ctx) {
            const roll = await ctx.step("roll", () => (calls += 1));
            const random = await ctx.random();
            return fourItems(ctx.attempt, ctx.signal, `${roll}:${random}`);
          },
        }),
      ],
    },
  },
});

const dataDirs: string[] = [];
const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
  for (const dir of dataDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function serve(dataDir: string): Promise<TestServer> {
  const server = await startTestServer({ dataDir, agents, metrics: true });
  servers.push(server);
  return server;
}

/**
 * Starts `method`, reads its first two items, closes the server and starts it again on the same
 * data directory; resumes after the second item and resolves with what the client received before
 * and after the restart, and the restarted server.
 */
async function interrupted(
  method: string,
): Promise<{ before: string[]; after: ServerMessage[]; server: TestServer; sessionToken: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-divergence-"));
  dataDirs.push(dataDir);
  const first = await serve(dataDir);
  const client = await RawClient.connect(first.url);
  client.send(agentStart("test", "dice", method, v.record()));
  const accepted = await client.nextOf("invocationAccepted");
  const channel = (await client.nextOf("invocationResult")).mappings[0]!.channel;
  const items = [await client.nextOf("outputStreamItem"), await client.nextOf("outputStreamItem")];
  await first.close();
  servers.splice(servers.indexOf(first), 1);

  const second = await serve(dataDir);
  const resumed = await RawClient.connect(second.url);
  resumed.send(resumeAttach("resume", accepted.sessionToken, [items[1]!.cursorToken]));
  const { messages } = await resumed.all();
  const refreshed = messages.find((m) => m.type === "invocationAccepted");
  if (refreshed?.type !== "invocationAccepted")
    throw new Error(`the resume after the restart was not accepted: ${JSON.stringify(messages[0])}`);
  expect(items.map((item) => item.channel)).toEqual([channel, channel]);
  return { before: items.map((item) => item.value.value as string), after: messages, server: second, sessionToken: refreshed.sessionToken };
}

async function divergences(server: TestServer): Promise<number> {
  const counter = server.server.metrics?.getSingleMetric("golem_stream_replay_divergences_total");
  if (counter === undefined) throw new Error("no golem_stream_replay_divergences_total metric");
  return (await counter.get()).values.reduce((sum, value) => sum + value.value, 0);
}

describe("a re-run after a restart on the same data directory", () => {
  it("whose output differs (state outside the journal) fails with the documented message; the client keeps what it received", async () => {
    const { before, after, server, sessionToken } = await interrupted("unjournaled");
    expect(before).toEqual([`0:${calls - 1}`, `1:${calls - 1}`]);
    // Nothing after the cursor: the re-run's first item already differed from the stored one.
    expect(after.filter((m) => m.type === "outputStreamItem")).toEqual([]);
    expect(after.find((m) => m.type === "outputStreamEnd")).toMatchObject({
      sequence: 2n,
      outcome: { kind: "cancelled", reason: "invocation-failed" },
    });
    expect(after.at(-1)).toEqual({
      type: "invocationFinished",
      outcome: { kind: "failure", code: "invocation-failed", message: DIVERGED },
    });
    expect(await divergences(server)).toBe(1);
    // What was delivered stays: a resume from the start gets the first run's items, unchanged.
    const again = await RawClient.connect(server.url);
    again.send(resumeAttach("resume", sessionToken));
    const { messages } = await again.all();
    const result = messages.find((m) => m.type === "invocationResult");
    if (result?.type !== "invocationResult") throw new Error("no invocationResult on the second resume");
    expect(outputValues(messages, result.mappings[0]!.channel).map((value) => value.value)).toEqual(before);
  });

  it("whose output differs only in journaled values (ctx.step, ctx.random) continues to success with the first run's values", async () => {
    const { before, after, server } = await interrupted("journaled");
    const label = before[0]!.slice("0:".length);
    expect(before).toEqual([`0:${label}`, `1:${label}`]);
    // The step ran once: the re-run got its result from the journal, not another call.
    expect(label.split(":")[0]).toBe(String(calls));
    const result = after.find((m) => m.type === "invocationResult");
    if (result?.type !== "invocationResult") throw new Error("no invocationResult after the restart");
    expect(outputValues(after, result.mappings[0]!.channel).map((value) => value.value)).toEqual([`2:${label}`, `3:${label}`]);
    expect(after.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
    expect(await divergences(server)).toBe(0);
  });
});
