/**
 * The lease keeper's claim rounds as a drain meets them: `stopClaims` ends the rounds and
 * resolves only once the round under way has handled what it claimed, so the drain runs or hands
 * over those sessions as its own.
 */
import { afterEach, expect, it } from "vitest";
import { LeaseKeeper } from "../src/cluster/lease-keeper.js";
import { NOOP_OBSERVER } from "../src/observability/server-observer.js";
import { silentLogger } from "../src/options.js";
import type { ClusterSessionStore } from "../src/store/cluster-store.js";

const cluster = { nodeId: "node-a", heartbeat: () => Promise.resolve({ otherProcess: false }) } as unknown as ClusterSessionStore;
const options = { leaseTtlMs: 60, catalogue: undefined, allowCatalogueDrift: false };
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

let keeper: LeaseKeeper | undefined;
afterEach(() => keeper?.stop());

it("stopClaims resolves once the claim round under way has handled its sessions, and no round starts after it", async () => {
  let rounds = 0;
  let entered!: () => void;
  const inRound = new Promise<void>((resolve) => (entered = resolve));
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  keeper = new LeaseKeeper(cluster, options, silentLogger, NOOP_OBSERVER, async () => {
    rounds++;
    entered();
    await held;
    return 1;
  });
  await inRound;
  let stopped = false;
  const stopping = keeper.stopClaims().then(() => (stopped = true));
  await turn();
  expect(stopped).toBe(false);
  release();
  await stopping;
  // Rounds come every half lease (30 ms here) while claims run: a heartbeat a third of a lease
  // apart is the event that shows time passing, and three of them span two rounds.
  await heartbeats(3);
  expect(rounds).toBe(1);
});

it("stopClaims resolves at once when no round is under way", async () => {
  keeper = new LeaseKeeper(cluster, options, silentLogger, NOOP_OBSERVER, () => Promise.resolve(0));
  let stopped = false;
  const stopping = keeper.stopClaims().then(() => (stopped = true));
  await turn();
  expect(stopped).toBe(true);
  await stopping;
});

/** Resolves after `count` more heartbeats of `cluster`. */
function heartbeats(count: number): Promise<void> {
  const beat = cluster.heartbeat.bind(cluster);
  return new Promise((resolve) => {
    let left = count;
    (cluster as { heartbeat: ClusterSessionStore["heartbeat"] }).heartbeat = (ttlMs) => {
      if (--left === 0) {
        (cluster as { heartbeat: ClusterSessionStore["heartbeat"] }).heartbeat = beat;
        resolve();
      }
      return beat(ttlMs);
    };
  });
}
