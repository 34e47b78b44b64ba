/**
 * The input window an attachment's node keeps in a cluster (cluster-peer.ts):
 * it accepts chunks beyond what the owner's agent has taken up to
 * INPUT_WINDOW_CHUNKS chunks or INPUT_WINDOW_BYTES bytes, whichever comes
 * first, always one chunk into an empty window, and opens again when the
 * owner reports what it took (`consumed`).
 */
import { describe, expect, it } from "vitest";
import { ClusterPeer, INPUT_WINDOW_BYTES, INPUT_WINDOW_CHUNKS } from "../src/cluster/cluster-peer.js";
import { MemoryCluster } from "../src/store/memory-cluster.js";

const MiB = 1024 * 1024;

function peerOn(cluster: MemoryCluster): ClusterPeer {
  return new ClusterPeer(cluster.node("attachment"), {
    sessionId: "s",
    syncFromStore: async () => undefined,
    attachedElsewhere: async () => undefined,
    cancelOutputById: async () => undefined,
    deliveredRemotely: () => undefined,
    attachedRemotely: () => undefined,
    deliveryLost: () => undefined,
    logger: { warn: () => undefined },
  });
}

/** "room" if the window has room now (or within a few turns), else "waiting". */
async function roomFor(peer: ClusterPeer, waited: Promise<void> = peer.waitForInputRoom("in")): Promise<"room" | "waiting"> {
  return Promise.race([waited.then(() => "room" as const), new Promise<"waiting">((resolve) => setTimeout(() => resolve("waiting"), 30))]);
}

/** Hands over `count` chunks of `bytes` each, after `from` items, one item per chunk. */
function handOver(peer: ClusterPeer, count: number, bytes: number, from = 0): number {
  for (let i = 0; i < count; i++) peer.inputHandedOver("in", BigInt(from + i + 1), bytes);
  return from + count;
}

/** The window is full now, and the owner's taking the first chunk makes room. */
async function expectFullUntilFirstTaken(cluster: MemoryCluster, peer: ClusterPeer): Promise<void> {
  const waited = peer.waitForInputRoom("in");
  expect(await roomFor(peer, waited)).toBe("waiting");
  cluster.publish("s", { kind: "consumed", streamId: "in", sequence: "1" });
  expect(await roomFor(peer, waited)).toBe("room");
  peer.close();
}

describe("the cluster input window at the attachment's node", () => {
  it("holds small chunks at the chunk count", async () => {
    const cluster = new MemoryCluster();
    const peer = peerOn(cluster);
    const sent = handOver(peer, INPUT_WINDOW_CHUNKS - 1, 64);
    expect(await roomFor(peer)).toBe("room");
    handOver(peer, 1, 64, sent);
    await expectFullUntilFirstTaken(cluster, peer);
  });

  it("holds large chunks at the byte bound, well before the count", async () => {
    const cluster = new MemoryCluster();
    const peer = peerOn(cluster);
    const sent = handOver(peer, INPUT_WINDOW_BYTES / MiB - 1, MiB);
    expect(await roomFor(peer)).toBe("room");
    handOver(peer, 1, MiB, sent);
    await expectFullUntilFirstTaken(cluster, peer);
  });

  it("takes one chunk larger than the byte bound into an empty window, then waits", async () => {
    const cluster = new MemoryCluster();
    const peer = peerOn(cluster);
    expect(await roomFor(peer)).toBe("room");
    handOver(peer, 1, INPUT_WINDOW_BYTES + 1);
    await expectFullUntilFirstTaken(cluster, peer);
  });

  it("counts each stream on its own", async () => {
    const cluster = new MemoryCluster();
    const peer = peerOn(cluster);
    handOver(peer, INPUT_WINDOW_CHUNKS, 1);
    expect(await roomFor(peer)).toBe("waiting");
    expect(await roomFor(peer, peer.waitForInputRoom("other"))).toBe("room");
    peer.close();
  });
});
