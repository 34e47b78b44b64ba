/**
 * The server's cluster scenarios (`@golem-stream/server/testing`) with every
 * node's store a PostgresSessionStore on one schema: nodes are servers in
 * this process, changes travel through LISTEN/NOTIFY. The same scenarios
 * run on MemoryCluster in the server package; real processes in cluster-e2e.
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { clusterScenarios } from "@golem-stream/server/testing";
import { cleanUp, connect, freshSchema } from "./support/stores.js";

afterAll(cleanUp);

clusterScenarios({ describe, it, expect, afterEach }, "cluster mode on PostgreSQL", async (count) => {
  const schema = freshSchema();
  const stores = [];
  // One after the other: the first creates the schema.
  for (let i = 0; i < count; i++) stores.push(await connect({ schema, nodeId: `node-${String.fromCharCode(97 + i)}` }));
  return stores;
});
