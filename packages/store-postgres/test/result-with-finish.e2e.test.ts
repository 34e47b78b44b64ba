/**
 * The PostgreSQL store: a method whose result is the last thing it writes has its result recorded
 * with the success in one write (`finishWithResult`, one transaction instead of two), and the
 * client still hears `invocationResult` before `invocationFinished`. (A PostgreSQL store always
 * runs the server in cluster mode, here a cluster of one node.)
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { afterAll, expect, it } from "vitest";
import { inspectToken } from "@golem-stream/tokens";
import { startEmbeddedServer } from "@golem-stream/server";
import { RawClient, TEST_TOKEN, demoStart, v } from "@golem-stream/server/testing";
import type { PostgresSessionStore } from "../src/index.js";
import { cleanUp, connect, freshSchema } from "./support/stores.js";

afterAll(cleanUp);

/** Counts the store's writes of a result with the success. */
function countingResultsWithSuccess(store: PostgresSessionStore): { count: () => number } {
  let count = 0;
  const write = store.finishWithResult.bind(store);
  store.finishWithResult = (...args) => {
    count++;
    return write(...args);
  };
  return { count: () => count };
}

it("a tally on one node: the result and the success in one write, the result sent first", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-pg-one-node-"));
  const store = await connect({ schema: freshSchema(), nodeId: "one" });
  const writes = countingResultsWithSuccess(store);
  const server = await startEmbeddedServer({ dataDir, tokens: [TEST_TOKEN], store });
  try {
    const client = await RawClient.connect(server.url, TEST_TOKEN);
    client.send(demoStart("tally", v.record(v.stream(randomUUID()))));
    const accepted = await client.nextOf("invocationAccepted");
    const channel = accepted.mappings[0]!.channel;
    client.send({ type: "inputStreamItem", channel, sequence: 0n, value: v.str("one") });
    client.send({ type: "inputStreamItem", channel, sequence: 1n, value: v.str("two") });
    client.send({ type: "inputStreamEnd", channel, sequence: 2n });
    const { messages, closed } = await client.all();
    expect(closed.code).toBe(1000);
    const types = messages.map((m) => m.type);
    expect(types.slice(-2)).toEqual(["invocationResult", "invocationFinished"]);
    expect(messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
    expect(writes.count()).toBe(1);
    const sessionId = (inspectToken(accepted.sessionToken).fields as { sessionId: string }).sessionId;
    const stored = await store.getSession(sessionId);
    expect(stored).toMatchObject({ state: "finished", outcome: '{"kind":"success"}' });
    expect(JSON.parse(stored?.result ?? "null")).toMatchObject({ kind: "value" });
  } finally {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
