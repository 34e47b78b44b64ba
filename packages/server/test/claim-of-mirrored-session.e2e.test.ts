/**
 * A node claims a session it already holds as a mirror (a client is attached there while another
 * node runs it), and the copy has not yet heard of the last output the old owner committed (its
 * change feed lags). The re-run starts from what the store holds: it replays the committed items
 * and continues after them, and the client gets every item once and the success. Switched to owner
 * before it was brought up to date, the copy re-ran from the counts it last heard of; the store
 * refused its output after them, then the failure's ends at the same counts, at every attempt, and
 * the session stayed running for good with the client silent.
 */
import { afterEach, expect, it } from "vitest";
import type { ServerMessage } from "@golem-stream/wire";
import { MemoryCluster } from "../src/store/index.js";
import type { ClusterSessionStore } from "../src/store/cluster-store.js";
import { clusterHarness, intercepting } from "../src/testing/cluster-harness.js";
import { demoStart, outputValues, v } from "../src/testing/demo-messages.js";

const harness = clusterHarness(afterEach, async (count) => {
  const cluster = new MemoryCluster();
  return Array.from({ length: count }, (_, i) => cluster.node(`node-${String.fromCharCode(97 + i)}`));
});

it("a node claiming a session it mirrors re-runs it from what the store holds: every item once, then the success", async () => {
  let stalled = false;
  let claimed = false;
  const wrap = (index: number, store: ClusterSessionStore): ClusterSessionStore =>
    index === 0
      ? // The owner's heartbeats stop while it goes on writing: its lease lapses and B claims the session.
        intercepting(store, { heartbeat: (ttlMs) => (stalled ? Promise.resolve() : store.heartbeat(ttlMs)) })
      : intercepting(store, {
          // B's change feed lags: it hears nothing of what A commits from the stall until its claim.
          subscribe: (sessionId, listener) => store.subscribe(sessionId, (change) => (stalled && !claimed ? undefined : listener(change))),
          claimOrphans: async () => {
            const orphans = await store.claimOrphans();
            if (orphans.length > 0) claimed = true;
            return orphans;
          },
        });
  const {
    stores,
    nodes: [a, b],
  } = await harness.startCluster(2, { leaseTtlMs: 300, wrap });
  const items = 1500;
  // Started at A, resumed at B: B serves the client as a mirror while A runs the invocation.
  const { client } = await harness.startThenResume(a!, b!, demoStart("count", v.record(v.u32(items), v.u32(1))));
  const result = (await client.nextOf("invocationResult")) as Extract<ServerMessage, { type: "invocationResult" }>;
  await client.waitFor((m) => m.type === "outputStreamItem");
  stalled = true;

  const { messages } = await client.all({ idleMs: 5000 });

  const values = outputValues(messages, result.mappings[0]!.channel).map((item) => item.value);
  expect(values).toEqual(Array.from({ length: items }, (_, i) => i));
  expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
  expect(await stores[1]!.listRunningSessions()).toEqual([]);
}, 20_000);
