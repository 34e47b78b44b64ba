/**
 * Recovery at start takes each interrupted session on its own: a store failure on one is logged
 * and that session is tried again a little later, while the others are recovered and the node
 * starts. Stopped at the first failure, the node had left every session of its earlier process
 * running for good, unrun, its lease live so that no other node claimed them.
 */
import { expect, it } from "vitest";
import { Keyring } from "@golem-stream/tokens";
import { MemoryCluster } from "../src/store/index.js";
import { createDemoHost } from "../src/demo/host.js";
import { createSessionServer } from "../src/server.js";
import type { ClusterSessionStore } from "../src/store/cluster-store.js";
import { intercepting, sleep } from "../src/testing/cluster-harness.js";
import { demoStart, v } from "../src/testing/demo-messages.js";
import { RawClient, TEST_TOKEN } from "../src/testing/raw-client.js";

/** Resolves once `check` holds, checked every few ms; rejects after `ms`. */
async function eventually(check: () => Promise<boolean>, ms: number): Promise<void> {
  const deadline = performance.now() + ms;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`not so after ${ms} ms`);
    await sleep(20);
  }
}

it("a store failure on one interrupted session at start leaves it to a later attempt: every session is recovered", async () => {
  const cluster = new MemoryCluster();
  const keyring = Keyring.generate("k1");
  const events: string[] = [];
  const serve = (store: ClusterSessionStore) =>
    createSessionServer({
      store,
      host: createDemoHost(),
      keyring,
      authenticator: (token) => (token === TEST_TOKEN ? { account: "acme", principal: "alice" } : undefined),
      cluster: { leaseTtlMs: 300 },
      logger: { info: () => undefined, warn: () => undefined, error: (_m, f) => void events.push(String(f?.["event"])) },
      // Not replayable: recovery fails them (the same with re-runs).
      limits: { maxReplays: 0 },
    });
  const first = serve(cluster.node("node-a"));
  const { url } = await first.listen();
  for (let i = 0; i < 3; i++) {
    const client = await RawClient.connect(url);
    client.send(demoStart("count", v.record(v.u32(3), v.u32(60_000))));
    await client.nextOf("invocationAccepted");
    client.terminate();
  }
  // The process stops: its sessions stay running in the store.
  await first.close();
  const base = cluster.node("node-a");
  expect(await base.listRunningSessions()).toHaveLength(3);

  // Restarted with the same node id; the store fails once, on the first session recovery loads.
  let failed = false;
  const store = intercepting(base, {
    listStreams: (id) => {
      if (failed) return base.listStreams(id);
      failed = true;
      return Promise.reject(new Error("the store failed once"));
    },
  });
  const second = serve(store);
  try {
    await second.listen();
    await eventually(async () => (await base.listRunningSessions()).length === 0, 4_000);
    expect(events).toContain("session.recovery-failed");
  } finally {
    await second.close();
  }
}, 15_000);
