/**
 * @golem-stream/server/testing — the `SessionStore` contract as reusable
 * tests, for the stores in this package and for stores elsewhere (such as
 * @golem-stream/store-postgres). Written for vitest and fast-check, which
 * the caller passes in: this module refers only to their types.
 *
 * The testing folder also holds the helpers for tests of a running server:
 * `RawClient` (a protocol client that sends what it is told, bad input
 * included), `ManualTimers`, `Pauses`, the cluster scenarios and the demo's
 * messages. The shipped runtime never imports this folder.
 */
export { storeContract, type TestApi } from "./store-contract.js";
export { checkAgainstModel, type ModelCheckOptions } from "./store-model.js";
export { session, stream, startAttempt, bytes } from "./store-records.js";
export { burstStreams, burstItemText, expectSameBurstReads, writeBurst, type BurstStreams } from "./store-bursts.js";
export { clusterFencingContract, type OpenNodePair } from "./fencing-contract.js";
export { clusterScenarios, type ClusterTestApi, type OpenClusterStores } from "./cluster-scenarios.js";
export { RawClient, TEST_TOKEN, type Closed } from "./raw-client.js";
export { ManualTimers } from "./manual-timers.js";
export { Pauses } from "./pauses.js";
export { v, demoStart, outputValues, resumeAttach } from "./demo-messages.js";
// The protocol messages RawClient sends and receives.
export type * from "@golem-stream/wire";
