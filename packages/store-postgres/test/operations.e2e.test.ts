/**
 * Operations in cluster mode on PostgreSQL: `/readyz` asks
 * PostgreSQL, the lease and drain gauges follow the node, and the store's
 * group commits feed the commit latency and group size histograms.
 */
import { afterAll, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { agentsFingerprint, startEmbeddedServer } from "@golem-stream/server";
import { RawClient, TEST_TOKEN, demoStart, v } from "@golem-stream/server/testing";
import { cleanUp, connect } from "./support/stores.js";

afterAll(cleanUp);

function sample(text: string, name: string): number {
  const match = new RegExp(`^${name} (\\S+)$`, "m").exec(text);
  return match === null ? 0 : Number(match[1]);
}

async function get(url: string): Promise<{ status: number; body: string }> {
  const response = await fetch(url);
  return { status: response.status, body: await response.text() };
}

it("readiness asks PostgreSQL; lease, drain and commit metrics follow the node", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-pg-ops-"));
  const store = await connect({ nodeId: "ops-node" });
  const server = await startEmbeddedServer({
    dataDir,
    tokens: [TEST_TOKEN],
    store,
    cluster: { leaseTtlMs: 2000 },
    metrics: true,
    healthEndpoints: true,
  });
  try {
    expect(JSON.parse((await get(`${server.httpUrl}/readyz`)).body)).toEqual({
      status: "ready",
      checks: { store: true, started: true, accepting: true },
      // The demo's catalogue, which no other live node contradicts.
      details: { catalogue: { fingerprint: agentsFingerprint({}), differing: [] } },
    });
    let text = (await get(`${server.httpUrl}/metrics`)).body;
    expect(sample(text, "golem_stream_cluster_lease_held")).toBe(1);
    expect(sample(text, "golem_stream_cluster_node_id_shared")).toBe(0);
    expect(sample(text, "golem_stream_draining")).toBe(0);

    const client = await RawClient.connect(server.url);
    client.send(demoStart("digest", v.record(v.stream(randomUUID()))));
    const channel = (await client.nextOf("invocationAccepted")).mappings[0]!.channel;
    client.send({ type: "input-u8", channel, sequence: 0n, payload: new Uint8Array(100) });
    client.send({ type: "inputStreamEnd", channel, sequence: 100n });
    expect((await client.all()).messages.at(-1)?.type).toBe("invocationFinished");
    text = (await get(`${server.httpUrl}/metrics`)).body;
    expect(sample(text, "golem_stream_store_commit_seconds_count")).toBeGreaterThan(0);
    expect(sample(text, "golem_stream_store_commit_group_size_sum")).toBeGreaterThanOrEqual(
      sample(text, "golem_stream_store_commit_group_size_count"),
    );

    // A running invocation keeps the drain going while the endpoints are asked.
    const running = await RawClient.connect(server.url);
    running.send(demoStart("count", v.record(v.u32(20), v.u32(25))));
    await running.nextOf("invocationAccepted");
    const drained = server.drain(30_000);
    const during = await get(`${server.httpUrl}/readyz`);
    expect(during.status).toBe(503);
    expect(JSON.parse(during.body)).toMatchObject({ checks: { accepting: false, store: true } });
    expect(sample((await get(`${server.httpUrl}/metrics`)).body, "golem_stream_draining")).toBe(1);
    expect(await drained).toEqual({ failed: 0, handedOver: 0 });
    await expect(store.ping()).rejects.toThrow(/closed/);
  } finally {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
