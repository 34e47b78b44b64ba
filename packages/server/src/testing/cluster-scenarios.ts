/**
 * Cluster mode as a test suite any `ClusterSessionStore` can run: nodes are
 * `createSessionServer`s, each on its own port, over stores of one shared
 * backend (the caller's `openStores`); a client attaches, resumes and takes
 * over at any node while the node that accepted the start runs the agent.
 * This package runs it on `MemoryCluster`, @golem-stream/store-postgres on
 * PostgreSQL. The caller passes in vitest's `describe`/`it`/`expect`.
 *
 *   clusterScenarios({ describe, it, expect, afterEach }, "my cluster", (count) => openMyStores(count));
 *
 * The scenarios live in one file per group, in this order: resuming at
 * another node, input across nodes, serving what another node runs, owner
 * loss, fencing and drain. Their harness is cluster-harness.ts.
 */
import type { afterEach as AfterEach } from "vitest";
import { clusterHarness, type OpenClusterStores } from "./cluster-harness.js";
import { fencingScenarios } from "./cluster-fencing-scenarios.js";
import { inputScenarios } from "./cluster-input-scenarios.js";
import { ownerLossScenarios } from "./cluster-owner-loss-scenarios.js";
import { resumeScenarios } from "./cluster-resume-scenarios.js";
import { servingScenarios } from "./cluster-serving-scenarios.js";
import type { TestApi } from "./store-contract.js";

export type { OpenClusterStores } from "./cluster-harness.js";

export interface ClusterTestApi extends TestApi {
  readonly afterEach: typeof AfterEach;
}

export function clusterScenarios(api: ClusterTestApi, name: string, openStores: OpenClusterStores): void {
  const cluster = clusterHarness(api.afterEach, openStores);
  api.describe(name, () => {
    resumeScenarios(api, cluster);
    inputScenarios(api, cluster);
    servingScenarios(api, cluster);
    ownerLossScenarios(api, cluster);
    fencingScenarios(api, cluster);
  });
}
