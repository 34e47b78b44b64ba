/** The cluster scenarios (`@golem-stream/server/testing`) on `MemoryCluster`: nodes in one process. */
import { afterEach, describe, expect, it } from "vitest";
import { MemoryCluster } from "../src/store/index.js";
import { clusterScenarios } from "../src/testing/index.js";

clusterScenarios({ describe, it, expect, afterEach }, "cluster mode (in memory)", async (count) => {
  const cluster = new MemoryCluster();
  return Array.from({ length: count }, (_, i) => cluster.node(`node-${String.fromCharCode(97 + i)}`));
});
