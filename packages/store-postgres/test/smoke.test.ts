import { expect, inject, it } from "vitest";
import { randomUUID } from "node:crypto";
import { PostgresSessionStore } from "../src/index.js";

it("opens, writes and reads", async () => {
  const store = await PostgresSessionStore.connect({ connectionString: inject("pgUrl"), schema: "smoke" });
  const sid = randomUUID();
  const session = { sessionId: sid, account: "a", principal: "p", application: "ap", environment: "e", agentType: "t", agentIdentity: "i", method: "m", idempotencyKey: "k" + sid, selector: "{}", config: "[]", parameters: "{}", generation: 1n, sessionToken: "tok", streamKeyId: "k1", state: "running" as const, result: undefined, outcome: undefined, createdAt: 1000, finishedAt: undefined };
  const attempt = { attemptId: randomUUID(), operation: "start" as const, descriptorDigest: "d", sessionId: sid, generation: 1n };
  expect(await store.createSession(session, [], attempt)).toEqual({ kind: "created" });
  expect(await store.getSession(sid)).toEqual(session);
  expect(await store.ownerOf(sid)).toBe(store.nodeId);
  await store.close();
});
