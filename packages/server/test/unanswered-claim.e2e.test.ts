/**
 * A claim whose COMMIT committed but whose answer was lost (a failover, a cut network, a COMMIT
 * slower than the query timeout): the claimed sessions are the claimer's at their next epoch, and
 * the claim told it nothing about them. No later claim returns them (they are the claimer's), so
 * before, nothing ran, failed or re-ran them until the claimer restarted with the same node id.
 * After a claim that failed, the claimer looks for running sessions it owns and does not hold, and
 * takes them as claimed ones.
 */
import { afterEach, expect, it } from "vitest";
import { MemoryCluster } from "../src/store/index.js";
import type { ClusterSessionStore } from "../src/store/cluster-store.js";
import type { Logger } from "../src/options.js";
import { clusterHarness, intercepting } from "../src/testing/cluster-harness.js";
import { demoStart, v } from "../src/testing/demo-messages.js";
import { RawClient } from "../src/testing/raw-client.js";
import { CallCount } from "../src/testing/conditions.js";

const harness = clusterHarness(afterEach, async (count) => {
  const cluster = new MemoryCluster();
  return Array.from({ length: count }, (_, i) => cluster.node(`node-${String.fromCharCode(97 + i)}`));
});

it("sessions a claim made this node's although its answer was lost are re-run at the next claim round", async () => {
  const rounds = new CallCount();
  const lost = new CallCount();
  const replays: number[] = [];
  const wrap = (index: number, store: ClusterSessionStore): ClusterSessionStore =>
    index !== 1
      ? store
      : intercepting(store, {
          claimOrphans: async () => {
            rounds.made();
            const claimed = await store.claimOrphans();
            if (claimed.length === 0 || lost.count > 0) return claimed;
            // Committed; the answer never arrives.
            lost.made();
            throw new Error("Connection terminated unexpectedly");
          },
        });
  const logger = (index: number): Logger => ({
    info: (_m, f) => {
      if (index === 1 && f?.["event"] === "invocation.replay") replays.push(Number(f["attempt"]));
    },
    warn: () => undefined,
    error: () => undefined,
  });
  const {
    stores,
    nodes: [a],
  } = await harness.startCluster(2, { leaseTtlMs: 300, wrap, logger });
  const atA = await RawClient.connect(a!.url);
  atA.send(demoStart("count", v.record(v.u32(1), v.u32(60_000))));
  await atA.nextOf("invocationAccepted");
  atA.terminate();
  await a!.server.close();
  harness.closedByScenario(a);

  // A's lease lapses; B's claim commits and fails; rounds go on after it.
  await lost.after(1);
  const sessionId = (await stores[1]!.listRunningSessions())[0]!.sessionId;
  expect(await stores[1]!.ownership(sessionId)).toEqual({ nodeId: "node-b", epoch: 2n });
  await rounds.after(3);

  expect(replays).toEqual([2]);
}, 15_000);
