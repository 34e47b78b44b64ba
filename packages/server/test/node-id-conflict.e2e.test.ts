/**
 * Two processes started with one node id (two `createSessionServer`s on one
 * `MemoryCluster` node id, as two processes on one database would be): each
 * heartbeat of either finds the other's renewal since its own last, and
 * both log `cluster.node-id-conflict` (error) and set the gauge
 * `cluster_node_id_shared` to 1. A node alone never does, however many
 * heartbeats it makes: its gauge stays 0.
 */
import { Keyring } from "@golem-stream/tokens";
import { afterEach, expect, it } from "vitest";
import { createSessionServer, type Logger, type SessionServer } from "../src/index.js";
import { MemoryCluster, type HeartbeatReport } from "../src/store/index.js";
import { intercepting } from "../src/testing/cluster-harness.js";
import { createDemoHost } from "../src/demo/index.js";
import { PrometheusMetrics } from "../src/observability/prometheus-metrics.js";

const servers: SessionServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

const keyring = Keyring.generate("k1");

/** A node whose store counts its heartbeats, and whose logger resolves `conflict` at the first `cluster.node-id-conflict`. */
function node(cluster: MemoryCluster, id: string, onHeartbeat: () => void = () => undefined) {
  let conflicted: (fields: Readonly<Record<string, unknown>>) => void = () => undefined;
  const conflict = new Promise<Readonly<Record<string, unknown>>>((resolve) => (conflicted = resolve));
  const errors: string[] = [];
  const logger: Logger = {
    info: () => undefined,
    warn: () => undefined,
    error: (message, fields) => {
      errors.push(String(fields?.["event"]));
      if (fields?.["event"] === "cluster.node-id-conflict") conflicted({ message, ...fields });
    },
  };
  const metrics = new PrometheusMetrics({ processMetrics: false });
  /** What each heartbeat after the first told the observer. */
  const shared: boolean[] = [];
  const gauge = async () => (await metrics.registry.getSingleMetric("golem_stream_cluster_node_id_shared")?.get())?.values[0]?.value;
  const store = cluster.node(id);
  const counted = intercepting(store, {
    heartbeat: async (ttlMs: number): Promise<HeartbeatReport | void> => {
      const report = await store.heartbeat(ttlMs);
      onHeartbeat();
      return report;
    },
  });
  // Short leases: a heartbeat every 100 ms.
  const server = createSessionServer({
    store: counted,
    host: createDemoHost(),
    keyring,
    authenticator: () => undefined,
    logger,
    observers: [metrics.observer, { nodeIdShared: (each) => shared.push(each) }],
    cluster: { leaseTtlMs: 300 },
  });
  servers.push(server);
  return { server, conflict, errors, shared, gauge };
}

it("two processes with one node id both say so at their heartbeats", async () => {
  const cluster = new MemoryCluster();
  const first = node(cluster, "node-a");
  const second = node(cluster, "node-a");
  await first.server.listen();
  await second.server.listen();
  const expected = {
    message: expect.stringMatching(/another process runs with this node's id: give every node process its own --node-id/),
    node: "node-a",
  };
  await expect(first.conflict).resolves.toMatchObject(expected);
  await expect(second.conflict).resolves.toMatchObject(expected);
  // The observer hears it before the log says it (lease-keeper.ts), so the gauge is set by now.
  expect(first.shared).toContain(true);
  expect(await first.gauge()).toBe(1);
  expect(await second.gauge()).toBe(1);
});

it("a node alone never does, nor a node beside a node of another id", async () => {
  const cluster = new MemoryCluster();
  let beats = 0;
  let tenBeats: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (tenBeats = resolve));
  const alone = node(cluster, "node-a", () => {
    if (++beats === 10) tenBeats();
  });
  const other = node(cluster, "node-b");
  await alone.server.listen();
  await other.server.listen();
  await done;
  expect(alone.errors).toEqual([]);
  expect(other.errors).toEqual([]);
  // Every heartbeat between the first (which joins) and the tenth (counted before its report) reported, unshared.
  expect(alone.shared.length).toBeGreaterThanOrEqual(8);
  expect(new Set(alone.shared)).toEqual(new Set([false]));
  expect(await alone.gauge()).toBe(0);
});

it("once the other process has left, the one left finds no other renewal at its next heartbeat, as on PostgreSQL (its leave deletes the node's row)", async () => {
  const cluster = new MemoryCluster();
  const [first, second] = [cluster.node("node-a"), cluster.node("node-a")];
  await first.heartbeat(60_000);
  await second.heartbeat(60_000);
  expect(await first.heartbeat(60_000)).toEqual({ otherProcess: true });
  expect(await second.heartbeat(60_000)).toEqual({ otherProcess: true });
  await second.leave();
  expect(await first.heartbeat(60_000)).toEqual({ otherProcess: false });
});
