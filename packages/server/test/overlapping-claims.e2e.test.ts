/**
 * A claimed session whose first handling failed (a store failure) is handled again at the next
 * claim round, and runs again once. A slow store makes that handling last longer than the time
 * between claim rounds: a round does not start while the one before it goes on, and a session
 * that already runs here at the claim's epoch is left alone. Before, the next round queued the
 * session again while it was being handled, superseded the run just launched and launched
 * another at the same epoch (the stopped run's writes not fenced, its steps run twice, a re-run
 * of `limits.maxReplays` used up each time).
 */
import { afterEach, expect, it } from "vitest";
import { MemoryCluster } from "../src/store/index.js";
import type { ClusterSessionStore } from "../src/store/cluster-store.js";
import type { Logger } from "../src/options.js";
import { clusterHarness, intercepting, sleep } from "../src/testing/cluster-harness.js";
import { demoStart, v } from "../src/testing/demo-messages.js";
import { RawClient } from "../src/testing/raw-client.js";
import { CallCount } from "../src/testing/conditions.js";

const harness = clusterHarness(afterEach, async (count) => {
  const cluster = new MemoryCluster();
  return Array.from({ length: count }, (_, i) => cluster.node(`node-${String.fromCharCode(97 + i)}`));
});

it("a claimed session whose first handling failed runs again once, even when handling it again outlasts a claim round", async () => {
  const state = { failLoad: false, slowRuns: false };
  const rounds = new CallCount();
  const replays: number[] = [];
  const wrap = (index: number, store: ClusterSessionStore): ClusterSessionStore =>
    index !== 1
      ? store
      : intercepting(store, {
          claimOrphans: async () => {
            rounds.made();
            return store.claimOrphans();
          },
          listStreams: (id) => {
            if (!state.failLoad) return store.listStreams(id);
            state.failLoad = false;
            state.slowRuns = true;
            return Promise.reject(new Error("the store failed once"));
          },
          // The store is slow for a while (a loaded database): recording a run takes 400 ms, over two claim rounds.
          recordRun: async (id, epoch) => {
            if (state.slowRuns) await sleep(400);
            return store.recordRun!(id, epoch);
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
    nodes: [a],
  } = await harness.startCluster(2, { leaseTtlMs: 300, wrap, logger });
  const atA = await RawClient.connect(a!.url);
  atA.send(demoStart("count", v.record(v.u32(1), v.u32(60_000))));
  await atA.nextOf("invocationAccepted");
  atA.terminate();
  state.failLoad = true;
  await a!.server.close();
  harness.closedByScenario(a);

  // A's lease lapses, B claims the session and fails to load it, then handles it again slowly.
  await rounds.after(8);
  state.slowRuns = false;
  await rounds.after(3);

  expect(replays).toEqual([2]);
}, 15_000);
