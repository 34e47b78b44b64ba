/**
 * Fencing with real processes on real PostgreSQL: the owner's process is
 * stopped (SIGSTOP) mid-output for longer than its lease, another node (B)
 * claims its invocation, then the former owner is continued (SIGCONT) and
 * its write lands in the one window fencing closes: after the claim, before
 * B's terminal. Two holds make that window wide and certain: the owner's
 * database traffic goes through a proxy that holds it from just before the
 * stop (so an output write it issued before the stop reaches PostgreSQL
 * only once released), and a trigger of the test's schema makes any write
 * that ends an output stream wait for an advisory lock the test holds (so
 * B's terminal waits, without holding the stream's row, until the former
 * owner's write has been refused). The client sees one consistent stream:
 * every item once, in order, then B's terminal and one outcome; nothing the
 * former owner wrote after the claim is stored; the former owner stops at
 * once, retrying nothing.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type pg from "pg";
import type { ResumeState } from "@golem-stream/client";
import { admin, cleanUp, pgUrl } from "../support/stores.js";
import { stallProxy, type StallProxy } from "../support/stall-proxy.js";
import { TestCluster, type NodeProcess } from "./support/cluster.js";
import { clientFor, demo, firstStream, range, record, sleep, u32 } from "./support/demo.js";

/** The advisory lock key output terminals wait for while the test holds it. */
const TERMINALS = 0x66656e63; // "fenc"

// Re-runs off: B fails what it claims, so its first write after the claim is the output's
// terminal, which the trigger holds: the failure path. With re-runs, `count` runs again at B:
// stalled-owner-rerun.e2e.test.ts.
// A lease of 2 s: on a loaded machine a node's lease of 1 s can lapse while it runs (a late
// heartbeat), and B would claim before the stop.
const cluster = new TestCluster({ leaseTtlMs: 2000, maxReplays: 0 });
let owner: NodeProcess;
let b: NodeProcess;
let proxy: StallProxy;
let db: pg.Client;

beforeAll(async () => {
  await cluster.prepare();
  db = await admin();
  const s = cluster.schema;
  await db.query(`CREATE FUNCTION ${s}.hold_terminals() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.output_terminal AND NOT OLD.output_terminal THEN PERFORM pg_advisory_xact_lock_shared(${TERMINALS}); END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER hold_terminals BEFORE UPDATE ON ${s}.streams FOR EACH ROW EXECUTE FUNCTION ${s}.hold_terminals()`);
  proxy = await stallProxy(pgUrl());
  [owner, b] = await Promise.all([cluster.start("node-owner", proxy.url), cluster.start("node-b")]);
});

afterAll(async () => {
  // A stopped node must go on to die of SIGKILL's wait; what the proxy or the lock holds is let go.
  if (owner.exit === undefined) cluster.resume(owner);
  proxy.resume();
  await db.end();
  await cluster.stopAll();
  await proxy.close();
  await cleanUp();
});

/** Reads `stream<u32>` items until the stream ends; the error that ended it, if any. */
async function readAll(
  call: ReturnType<ReturnType<typeof clientFor>["takeover"]>,
  onItem: (seen: number) => void,
): Promise<{ items: number[]; error: unknown }> {
  const items: number[] = [];
  try {
    for await (const item of (await firstStream(call)).values()) {
      items.push(item.value as number);
      onItem(items.length);
    }
  } catch (error) {
    return { items, error };
  }
  return { items, error: undefined };
}

/**
 * Waits until a backend of the cluster's schema waits for the terminals' advisory lock (B's
 * terminal, held by the trigger); fails at once when the invocation finished without it (B
 * claimed before the hold: the owner's lease lapsed while it ran).
 */
async function terminalHeld(key: string): Promise<void> {
  for (;;) {
    const { rows } = await db.query<{ n: string }>(
      "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory' AND strpos(query, $1) > 0",
      [cluster.schema],
    );
    if (Number(rows[0]!.n) > 0) return;
    const finished = await db.query(`SELECT 1 FROM ${cluster.schema}.sessions WHERE idempotency_key = $1 AND state = 'finished'`, [key]);
    if (finished.rowCount !== 0) throw new Error("the invocation finished before the owner was stopped (its lease lapsed while it ran)");
    await sleep(10);
  }
}

it("SIGSTOP of the owner past its lease, a claim at B, SIGCONT: the former owner's write after the claim is refused; the client at B sees every item once then B's outcome; the former owner stops without retrying", async () => {
  const key = `stalled-${Date.now()}`;
  const outputRow = async () =>
    (
      await db.query<{ count: string; stream_id: string; owner_node: string; owner_epoch: string; outcome: string | null }>(
        `SELECT st.count, st.stream_id, se.owner_node, se.owner_epoch, se.outcome FROM ${cluster.schema}.sessions se JOIN ${cluster.schema}.streams st USING (session_id)
         WHERE se.idempotency_key = $1 AND st.direction = 'output'`,
        [key],
      )
    ).rows;
  const start = clientFor(owner.url).invoke({
    ...demo,
    method: "count",
    methodParameters: record(u32(100_000), u32(10)),
    idempotencyKey: key,
  });
  const startStream = (await firstStream(start)).values()[Symbol.asyncIterator]();
  for (let seen = 0; seen < 2; seen++) expect((await startStream.next()).value?.value).toBe(seen);
  const state: ResumeState | undefined = start.detach();
  expect(state).toBeDefined();

  const atB = clientFor(b.url).takeover(state!);
  let paused!: () => void;
  const ownerPaused = new Promise<void>((resolve) => (paused = resolve));
  const reading = readAll(atB, (seen) => {
    if (seen !== 20) return;
    // B's terminal will wait; the owner's next query (its next output write, every 10 ms) is held, then the owner stops.
    void db.query("SELECT pg_advisory_lock($1)", [TERMINALS]).then(() => {
      proxy.stall();
      void proxy.clientBytesHeld().then(() => {
        cluster.pause(owner);
        paused();
      });
    });
  });
  await ownerPaused;

  // B claims once the owner's lease has lapsed, then its terminal waits in the trigger.
  await terminalHeld(key);
  const [atClaim] = await outputRow();
  expect({ owner: atClaim?.owner_node, epoch: atClaim?.owner_epoch }).toEqual({ owner: "node-b", epoch: "2" });

  // The former owner goes on; its held write reaches PostgreSQL now, after the claim: refused for its epoch.
  cluster.resume(owner);
  proxy.resume();
  const lost = await owner.logged((entry) => entry["event"] === "session.ownership-lost");
  expect(lost["epoch"]).toBe("1");
  expect((await outputRow())[0]?.count).toBe(atClaim!.count);

  // B's terminal goes on.
  await db.query("SELECT pg_advisory_unlock($1)", [TERMINALS]);
  const read = await reading;
  const finished = await atB.finished.then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(read.error).toMatchObject({ kind: "stream-cancelled", message: expect.stringContaining("invocation-failed") });
  expect(finished).toMatchObject({ kind: "invocation-failed", code: "invocation-failed" });
  // Every item once, in order, from the one after the starting client's last delivered one: what
  // the store held at the claim (the starting client's one undelivered item included), no more.
  expect(read.items).toEqual(range(read.items.length, 1));
  expect(String(read.items.length + 1)).toBe(atClaim!.count);

  const [row] = await outputRow();
  expect(JSON.parse(row!.outcome!)).toMatchObject({ kind: "failure", code: "invocation-failed" });
  const events = await db.query<{ event: string; sequence: string; item_count: string }>(
    `SELECT event, sequence, item_count FROM ${cluster.schema}.output_events WHERE stream_id = $1 ORDER BY sequence, event DESC`,
    [row!.stream_id],
  );
  expect(events.rows.at(-1)).toMatchObject({ event: "terminal", sequence: atClaim!.count });
  expect(events.rows.filter((e) => e.event === "item").reduce((sum, e) => sum + Number(e.item_count), 0)).toBe(read.items.length + 1);

  // A client resuming at the former owner's node reads the same stream and the same outcome.
  const again = clientFor(owner.url).takeover(state!);
  const replay = await readAll(again, () => undefined);
  expect(replay.items).toEqual(read.items);
  expect(replay.error).toMatchObject({ kind: "stream-cancelled", message: expect.stringContaining("invocation-failed") });
  await expect(again.finished).rejects.toMatchObject({ kind: "invocation-failed" });
  // The former owner recorded nothing and retried nothing.
  expect(owner.log.filter((line) => line.includes("invocation.record-failed"))).toEqual([]);
});
