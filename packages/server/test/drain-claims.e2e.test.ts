/**
 * A draining node claims no orphans: what it claimed it would hand on again within its deadline,
 * each time a re-run more for the invocation. Its heartbeats go on until it leaves, so its own
 * sessions stay its own meanwhile.
 */
import { randomUUID } from "node:crypto";
import { afterEach, expect, it } from "vitest";
import { MemoryCluster } from "../src/store/index.js";
import type { ClusterSessionStore } from "../src/store/cluster-store.js";
import { clusterHarness, intercepting } from "../src/testing/cluster-harness.js";
import { CallCount } from "../src/testing/conditions.js";
import { demoStart, v } from "../src/testing/demo-messages.js";

const harness = clusterHarness(afterEach, async (count) => {
  const cluster = new MemoryCluster();
  return Array.from({ length: count }, (_, i) => cluster.node(`node-${String.fromCharCode(97 + i)}`));
});

it("a draining node makes no claim rounds while its heartbeats go on, and its own invocation runs to its end", async () => {
  const claims = new CallCount();
  const heartbeats = new CallCount();
  const wrap = (index: number, store: ClusterSessionStore): ClusterSessionStore =>
    index !== 0
      ? store
      : intercepting(store, {
          claimOrphans: () => {
            claims.made();
            return store.claimOrphans();
          },
          heartbeat: (ttlMs) => {
            heartbeats.made();
            return store.heartbeat(ttlMs);
          },
        });
  const {
    nodes: [a, b],
  } = await harness.startCluster(2, { leaseTtlMs: 300, wrap });
  // Claim rounds run at A (every half lease, once it has seen the store available for a full one).
  await claims.after(1);

  // A owns a tally; its client follows it at B.
  const { accepted, client } = await harness.startThenResume(a!, b!, demoStart("tally", v.record(v.stream(randomUUID()))));
  const channel = accepted.mappings[0]!.channel;
  await client.nextOf("invocationAccepted");

  const draining = a!.server.drain(120_000);
  const claimsAtDrain = claims.count;
  // A full lease of heartbeats (three a lease): two claim rounds' time.
  await heartbeats.after(4);
  expect(claims.count).toBe(claimsAtDrain);

  // The input's end, sent at B, reaches the owner: the tally finishes there, and the drain with it.
  client.send({ type: "inputStreamEnd", channel, sequence: 0n });
  expect(await client.nextOf("invocationFinished")).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
  expect(await draining).toEqual({ failed: 0, handedOver: 0 });
  harness.closedByScenario(a);
});
