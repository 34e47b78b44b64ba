/**
 * Fencing with real processes on real PostgreSQL: the owner's process is
 * stopped (SIGSTOP) mid-output for longer than its lease, another node
 * claims its invocation and fails it, then the former owner is continued
 * (SIGCONT) and finds its ownership gone. Its database traffic goes through
 * a proxy that holds it from just before the stop until after the claim, so
 * an output write it issued before the stop reaches PostgreSQL only then,
 * with its former epoch. The client sees one consistent stream: every item
 * once, in order, then the claimer's terminal and one outcome; the store
 * refuses the former owner's write and holds nothing of it; and the former
 * owner stops at once, retrying nothing.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { ResumeState } from "@golem-stream/client";
import { admin, cleanUp, pgUrl } from "../support/stores.js";
import { stallProxy, type StallProxy } from "../support/stall-proxy.js";
import { TestCluster, type NodeProcess } from "./support/cluster.js";
import { clientFor, demo, firstStream, range, record, u32 } from "./support/demo.js";

const cluster = new TestCluster({ leaseTtlMs: 1000 });
let owner: NodeProcess;
let b: NodeProcess;
let proxy: StallProxy;

beforeAll(async () => {
  await cluster.prepare();
  proxy = await stallProxy(pgUrl());
  [owner, b] = await Promise.all([cluster.start("node-owner", proxy.url), cluster.start("node-b")]);
});

afterAll(async () => {
  // A node still stopped would never exit on SIGKILL's wait otherwise: continue it first.
  if (owner.exit === undefined) cluster.resume(owner);
  proxy.resume();
  await cluster.stopAll();
  await proxy.close();
  await cleanUp();
});

/** Reads `stream<u32>` items until the stream ends; the error that ended it, if any. */
async function readAll(call: ReturnType<ReturnType<typeof clientFor>["takeover"]>, onItem: (value: number, seen: number) => void): Promise<{ items: number[]; error: unknown }> {
  const items: number[] = [];
  try {
    for await (const item of (await firstStream(call)).values()) {
      items.push(item.value as number);
      onItem(item.value as number, items.length);
    }
  } catch (error) {
    return { items, error };
  }
  return { items, error: undefined };
}

it("SIGSTOP of the owner past its lease, a claim at B, SIGCONT: the client at B sees every item once then B's outcome; nothing of the former owner's after the claim is stored; it stops without retrying", async () => {
  const key = `stalled-${Date.now()}`;
  const start = clientFor(owner.url).invoke({ ...demo, method: "count", methodParameters: record(u32(100_000), u32(10)), idempotencyKey: key });
  const startStream = (await firstStream(start)).values()[Symbol.asyncIterator]();
  for (let seen = 0; seen < 2; seen++) expect((await startStream.next()).value?.value).toBe(seen);
  const state: ResumeState | undefined = start.detach();
  expect(state).toBeDefined();

  const atB = clientFor(b.url).takeover(state!);
  let stoppedAt: number | undefined;
  let stopping: Promise<void> | undefined;
  const read = await readAll(atB, (_value, seen) => {
    if (seen === 20 && stoppedAt === undefined) {
      stoppedAt = seen;
      // The owner's next query (its next output write, every 10 ms) is held, then the owner stops.
      proxy.stall();
      stopping = proxy.clientBytesHeld().then(() => cluster.pause(owner));
    }
  });
  await stopping;
  const finished = await atB.finished.then(
    () => undefined,
    (error: unknown) => error,
  );
  // The stream ended with B's terminal and B's outcome, while the owner was still stopped.
  expect(stoppedAt).toBe(20);
  expect(read.error).toMatchObject({ kind: "stream-cancelled", message: expect.stringContaining("invocation-failed") });
  expect(finished).toMatchObject({ kind: "invocation-failed", code: "invocation-failed" });
  // Every item once, in order, from the one after the starting client's last delivered one.
  expect(read.items).toEqual(range(read.items.length, 1));

  // The former owner goes on, and its held write reaches PostgreSQL after the claim: refused for its epoch.
  cluster.resume(owner);
  proxy.resume();
  const lost = await owner.logged((entry) => entry["event"] === "session.ownership-lost");
  expect(lost["epoch"]).toBe("1");

  const db = await admin();
  try {
    const { rows } = await db.query<{ count: string; owner_node: string; owner_epoch: string; outcome: string; stream_id: string }>(
      `SELECT st.count, st.stream_id, se.owner_node, se.owner_epoch, se.outcome FROM ${cluster.schema}.sessions se JOIN ${cluster.schema}.streams st USING (session_id)
       WHERE se.idempotency_key = $1 AND st.direction = 'output'`,
      [key],
    );
    expect(rows).toHaveLength(1);
    const row = rows[0]!;
    expect({ owner: row.owner_node, epoch: row.owner_epoch }).toEqual({ owner: "node-b", epoch: "2" });
    expect(JSON.parse(row.outcome)).toMatchObject({ kind: "failure", code: "invocation-failed" });
    // The store holds exactly the items the client saw (and the one the starting client held), then the terminal.
    expect(row.count).toBe(String(read.items.length + 1));
    const events = await db.query<{ event: string; sequence: string; item_count: string }>(
      `SELECT event, sequence, item_count FROM ${cluster.schema}.output_events WHERE stream_id = $1 ORDER BY sequence, event DESC`,
      [row.stream_id],
    );
    const terminal = events.rows.at(-1)!;
    expect({ event: terminal.event, sequence: terminal.sequence }).toEqual({ event: "terminal", sequence: row.count });
    const items = events.rows.filter((e) => e.event === "item").reduce((sum, e) => sum + Number(e.item_count), 0);
    expect(items).toBe(read.items.length + 1);
  } finally {
    await db.end();
  }

  // A client resuming at the former owner's node reads the same stream and the same outcome.
  const again = clientFor(owner.url).takeover(state!);
  const replay = await readAll(again, () => undefined);
  expect(replay.items).toEqual(read.items);
  expect(replay.error).toMatchObject({ kind: "stream-cancelled", message: expect.stringContaining("invocation-failed") });
  await expect(again.finished).rejects.toMatchObject({ kind: "invocation-failed" });
  // The former owner recorded nothing and retried nothing.
  expect(owner.log.filter((line) => line.includes("invocation.record-failed"))).toEqual([]);
});
