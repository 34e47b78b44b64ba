/**
 * Cluster mode with real processes on real PostgreSQL: a reader at node B that
 * stops reading a `blobs(64, 1 MiB)` output owned by node A. The producer
 * at A is held back by the window B reports, B stops reading the store
 * when its socket is full; neither process's memory grows with the output.
 * VmRSS of both processes is sampled over the stall (and the read-out), and
 * printed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, cleanUp } from "../support/stores.js";
import { TestCluster, rssKiB, type NodeProcess } from "./support/cluster.js";
import { clientFor, demo, firstStream, range, record, sleep, u32 } from "./support/demo.js";

const cluster = new TestCluster();
let a: NodeProcess;
let b: NodeProcess;

beforeAll(async () => {
  await cluster.prepare();
  [a, b] = (await Promise.all(["node-a", "node-b"].map((id) => cluster.start(id)))) as [NodeProcess, NodeProcess];
});

afterAll(async () => {
  await cluster.stopAll();
  await cleanUp();
});

const MiB = 1024;
const BLOBS = 64;
const SIZE = 1024 * 1024;

describe("a stalled reader at another node than the owner", () => {
  it("blobs(64, 1 MiB) owned by A, read at B that stops reading: RSS of both nodes stays bounded; reading again delivers every blob", async () => {
    const baseline = { a: rssKiB(a.pid), b: rssKiB(b.pid) };
    const key = `stall-${Date.now()}`;
    // Started at A (A owns it), detached at once, taken over at B by a client that reads nothing:
    // its own queue (1 MiB, 1 entry) fills and it stops reading its socket.
    const started = clientFor(a.url).invoke({
      ...demo,
      method: "blobs",
      methodParameters: record(u32(BLOBS), u32(SIZE)),
      idempotencyKey: key,
    });
    await started.accepted;
    const state = started.detach()!;
    const reader = clientFor(b.url, { maxQueuedBytes: SIZE, maxQueuedEntriesPerStream: 1 }).takeover(state);
    const stream = await firstStream(reader);

    const peak = { a: baseline.a, b: baseline.b };
    const sample = () => {
      peak.a = Math.max(peak.a, rssKiB(a.pid));
      peak.b = Math.max(peak.b, rssKiB(b.pid));
    };
    // The stall: two seconds with nothing read.
    const db = await admin();
    const produced = async () =>
      Number(
        (
          await db.query<{ count: string }>(
            `SELECT st.count FROM ${cluster.schema}.sessions se JOIN ${cluster.schema}.streams st USING (session_id) WHERE se.idempotency_key = $1 AND st.direction = 'output'`,
            [key],
          )
        ).rows[0]?.count ?? 0,
      );
    for (let t = 0; t < 20; t++) {
      sample();
      await sleep(100);
    }
    const producedDuringStall = await produced();
    const stall = { ...peak };

    // Reading again delivers every blob, in order, byte for byte.
    const blobs: number[] = [];
    const sampler = setInterval(sample, 50);
    try {
      for await (const blob of stream.blobs()) {
        expect(blob.bytes.length).toBe(SIZE);
        const i = blobs.length;
        expect(blob.bytes[0]).toBe(i & 0xff);
        expect(blob.bytes[SIZE - 1]).toBe((i + SIZE - 1) & 0xff);
        blobs.push(i);
      }
      await reader.finished;
    } finally {
      clearInterval(sampler);
      await db.end();
    }
    expect(blobs).toEqual(range(BLOBS));
    const figures = {
      baselineMiB: { a: baseline.a / MiB, b: baseline.b / MiB },
      stallPeakMiB: { a: stall.a / MiB, b: stall.b / MiB },
      overallPeakMiB: { a: peak.a / MiB, b: peak.b / MiB },
      producedDuringStall,
    };
    console.log(
      `stalled reader RSS (MiB): ${JSON.stringify(figures, (_, v: unknown) => (typeof v === "number" ? Math.round(v * 10) / 10 : v))}`,
    );
    expect(stall.a - baseline.a).toBeLessThan(200 * MiB);
    expect(stall.b - baseline.b).toBeLessThan(200 * MiB);
    expect(peak.a - baseline.a).toBeLessThan(200 * MiB);
    expect(peak.b - baseline.b).toBeLessThan(200 * MiB);
  }, 60_000);
});
