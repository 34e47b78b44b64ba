/**
 * A `resync` from the store (its feed lost its connection, so changes may have been lost): the
 * peer tells its session that delivery progress may be missing, and re-reads the store.
 */
import { describe, expect, it } from "vitest";
import { ClusterPeer } from "../src/cluster/cluster-peer.js";
import { MemoryCluster } from "../src/store/memory-cluster.js";

describe("ClusterPeer on resync", () => {
  it("reports the lost delivery progress and syncs from the store", async () => {
    const cluster = new MemoryCluster();
    const store = cluster.node("owner");
    let lost = 0;
    let synced!: () => void;
    const sync = new Promise<void>((resolve) => (synced = resolve));
    const peer = new ClusterPeer(store, {
      sessionId: "s",
      syncFromStore: async () => synced(),
      attachedElsewhere: async () => undefined,
      cancelOutputById: async () => undefined,
      deliveredRemotely: () => undefined,
      attachedRemotely: () => undefined,
      deliveryLost: () => void lost++,
      logger: { warn: () => undefined },
    });
    await store.publish("s", { kind: "resync" });
    await sync;
    expect(lost).toBe(1);
    peer.close();
  });
});
