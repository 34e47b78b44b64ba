/** The cluster fencing contract (`src/testing/fencing-contract.ts`) on `MemoryCluster`. */
import { describe, expect, it } from "vitest";
import { MemoryCluster } from "../src/store/index.js";
import { clusterFencingContract } from "../src/testing/index.js";

clusterFencingContract({ describe, it, expect }, "MemoryCluster fencing", async () => {
  const cluster = new MemoryCluster();
  return [cluster.node("node-a"), cluster.node("node-b")] as const;
});
