/**
 * A stalled owner with re-runs on, with real processes on real PostgreSQL:
 * the owner of a replayable invocation (demo `journal` with the client
 * attached at node B, `count` with the client attached at the owner) is
 * stopped (SIGSTOP) mid-output for longer than its lease; B claims it and
 * runs it again (docs/durable-execution.md); then the former
 * owner is continued (SIGCONT) with a write of its own on its way to
 * PostgreSQL. Two holds put that write in the one window fencing closes:
 * after the claim, before the re-run reads what is stored. The owner's
 * database traffic goes through a proxy that holds it from just before the
 * stop, and a trigger of the test's schema makes B's first write of the
 * re-run (its run count) wait, holding no row of the session, for an
 * advisory lock the test holds until the former owner's write has been
 * refused. Every committed output event is logged with the node that wrote
 * it (each node's connections carry its id as `application_name`).
 *
 * The client, attached at B or at the former owner (which closes its
 * connection when its write is refused; the client resumes there and reads
 * B's re-run), sees one consistent stream: every item once, in order, after
 * its cursor, then one result and `success`; the store holds the former
 * owner's items up to the claim and only B's from there, and `journal`'s
 * items all carry the values the former owner journaled (B's re-run read
 * them back instead of taking new ones). Mid-upload (demo
 * `digest`), B's re-run reads the stored input again and the upload goes
 * on: the digest is of every byte once. With the client attached at B, the
 * continued former owner, which goes on reading the input too, records
 * nothing; with the client attached at the former owner, the input it
 * accepts after the claim is refused and the client resends it.
 * (The same stall with re-runs off, where B fails the invocation:
 * stalled-owner-fencing.e2e.test.ts.)
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it, onTestFailed, onTestFinished } from "vitest";
import type pg from "pg";
import { inputStream, type Invocation, type ResumeState } from "@golem-stream/client";
import { startTcpProxy } from "@golem-stream/test-support";
import { admin, cleanUp, pgUrl } from "../support/stores.js";
import { stallProxy, type StallProxy } from "../support/stall-proxy.js";
import { TestCluster, type NodeProcess } from "./support/cluster.js";
import {
  clientFor,
  demo,
  fieldsOf,
  firstStream,
  randomChunks,
  range,
  record,
  sha256,
  sleep,
  u32,
  type SchemaValueJson,
} from "./support/demo.js";

/** The advisory lock key B's run count waits for while the test holds it. */
const HOLD = 0x7265726e; // "rern"
/** `count(TO, DELAY_MS)`: long enough that the owner is still producing when it is stopped. */
const TO = 200;
const DELAY_MS = 10;

// Re-runs on (the server's default bound). A lease of 2 s: on a loaded machine a node's lease of
// 1 s can lapse while it runs (a late heartbeat), and B would claim before the stop.
const cluster = new TestCluster({ leaseTtlMs: 2000 });
let b: NodeProcess;
let db: pg.Client;

beforeAll(async () => {
  await cluster.prepare();
  db = await admin();
  const s = cluster.schema;
  await db.query(`CREATE TABLE ${s}.written (stream_id text, sequence bigint, event text, item_count bigint, writer text);
    CREATE FUNCTION ${s}.log_writer() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO ${s}.written VALUES (NEW.stream_id, NEW.sequence, NEW.event, NEW.item_count, current_setting('application_name'));
      RETURN NEW;
    END $$;
    CREATE TRIGGER log_writer AFTER INSERT ON ${s}.output_events FOR EACH ROW EXECUTE FUNCTION ${s}.log_writer();
    CREATE FUNCTION ${s}.hold_b() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF current_setting('application_name') = 'node-b' THEN PERFORM pg_advisory_xact_lock_shared(${HOLD}); END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER hold_b BEFORE INSERT ON ${s}.session_runs FOR EACH ROW EXECUTE FUNCTION ${s}.hold_b()`);
  b = await cluster.start("node-b");
});

// What each node logged, to tell a failure's cause.
beforeEach(() => onTestFailed(() => console.error(cluster.logs())));

afterAll(async () => {
  await db.end();
  await cluster.stopAll();
  await cleanUp();
});

/**
 * Waits until a backend of the cluster's schema waits for the advisory lock `HOLD` (B's run count,
 * held by the trigger); fails at once when B counted its run before the hold (it claimed before
 * the stop: the owner's lease lapsed while it ran).
 */
async function bHeld(key: string): Promise<void> {
  for (;;) {
    const { rows } = await db.query<{ n: string }>(
      "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'node-b' AND wait_event_type = 'Lock' AND wait_event = 'advisory'",
    );
    if (Number(rows[0]!.n) > 0) return;
    const runs = (await sessionOf(key))?.runs;
    if (runs !== null && runs !== undefined)
      throw new Error("B re-ran the invocation before the owner was stopped (its lease lapsed while it ran)");
    await sleep(10);
  }
}

/** The session of idempotency key `key` with its `direction` stream and run count. */
async function sessionOf(key: string, direction: "input" | "output" = "output") {
  return (
    await db.query<{
      count: string;
      stream_id: string;
      owner_node: string;
      owner_epoch: string;
      outcome: string | null;
      runs: number | null;
    }>(
      `SELECT st.count, st.stream_id, se.owner_node, se.owner_epoch, se.outcome, r.runs
       FROM ${cluster.schema}.sessions se JOIN ${cluster.schema}.streams st USING (session_id) LEFT JOIN ${cluster.schema}.session_runs r USING (session_id)
       WHERE se.idempotency_key = $1 AND st.direction = $2`,
      [key, direction],
    )
  ).rows[0];
}

describe.each([
  { attachedAt: "B" as const, first: 1, method: "journal" as const },
  { attachedAt: "the former owner" as const, first: 0, method: "count" as const },
])("$method, the client attached at $attachedAt", ({ attachedAt, first, method }) => {
  it("SIGSTOP of a replayable invocation's owner past its lease: B claims and re-runs it, the former owner's write after the claim is refused; the client sees every item once, one result, success", async () => {
    // Each test its own owner, its database traffic through its own proxy.
    const proxy: StallProxy = await stallProxy(pgUrl());
    const owner = await cluster.start(attachedAt === "B" ? "node-owner-1" : "node-owner-2", proxy.url);
    onTestFinished(async () => {
      // A stopped node must go on to die of SIGKILL's wait; what the proxy or the lock holds is let go.
      if (owner.exit === undefined) cluster.resume(owner);
      proxy.resume();
      await db.query("SELECT pg_advisory_unlock_all()");
      await cluster.kill(owner);
      await proxy.close();
    });
    const key = `stalled-rerun-${attachedAt}-${Date.now()}`;
    // `count`'s items are their index; `journal`'s records carry the index and three values the
    // method journaled once before its first item, which the re-run must get back from the journal.
    const indexOf = (item: SchemaValueJson): number => (method === "count" ? item.value : fieldsOf(item)[0]!.value) as number;
    const journaledOf = (item: SchemaValueJson): string => (method === "count" ? "" : JSON.stringify(fieldsOf(item).slice(1)));
    const journaled = new Set<string>();

    const start = clientFor(owner.url).invoke({ ...demo, method, methodParameters: record(u32(TO), u32(DELAY_MS)), idempotencyKey: key });
    let call: Invocation = start;
    if (attachedAt === "B") {
      const startStream = (await firstStream(start)).values()[Symbol.asyncIterator]();
      for (let seen = 0; seen < 2; seen++) {
        const item = (await startStream.next()).value!;
        expect(indexOf(item)).toBe(seen);
        journaled.add(journaledOf(item));
      }
      const state = start.detach();
      expect(state).toBeDefined();
      call = clientFor(b.url).takeover(state!);
    }
    let results = 0;
    let reconnects = 0;
    call.on("reconnecting", () => reconnects++);
    call.result.then(
      () => results++,
      () => undefined,
    );
    let paused!: () => void;
    let early: ResumeState | undefined;
    const ownerPaused = new Promise<void>((resolve) => (paused = resolve));
    const reading = (async () => {
      const items: number[] = [];
      for await (const item of (await firstStream(call)).values()) {
        items.push(indexOf(item));
        journaled.add(journaledOf(item));
        if (items.length !== 20) continue;
        early = call.state;
        await db.query("SELECT pg_advisory_lock($1)", [HOLD]);
        // The owner's next query (its next output write, every 10 ms) is held, then the owner stops.
        proxy.stall();
        void proxy.clientBytesHeld().then(() => {
          cluster.pause(owner);
          paused();
        });
      }
      return items;
    })();
    await ownerPaused;

    // B claims once the owner's lease has lapsed; the re-run's first write, its run count, waits in the trigger.
    await bHeld(key);
    const atClaim = await sessionOf(key);
    expect({ owner: atClaim?.owner_node, epoch: atClaim?.owner_epoch, runs: atClaim?.runs }).toEqual({
      owner: "node-b",
      epoch: "2",
      runs: null,
    });

    // The former owner goes on; its held write reaches PostgreSQL now, after the claim: refused for its epoch.
    cluster.resume(owner);
    proxy.resume();
    const lost = await owner.logged((entry) => entry["event"] === "session.ownership-lost");
    expect(lost["epoch"]).toBe("1");
    expect((await sessionOf(key))?.count).toBe(atClaim!.count);

    // B re-runs count: compares what the former owner committed, then goes on.
    await db.query("SELECT pg_advisory_unlock($1)", [HOLD]);
    const items = await reading;
    await expect(call.finished).resolves.toEqual({ kind: "success" });
    // Every item once, in order, from the client's cursor (at B: the one after the starting
    // client's last delivered one, it held item 1 undelivered when it detached) to the end; one result.
    expect(items).toEqual(range(TO - first, first));
    expect(results).toBe(1);
    // At the former owner, its connection was closed once its write was refused: the client resumed.
    if (attachedAt === "the former owner") expect(reconnects).toBeGreaterThan(0);

    const after = await sessionOf(key);
    expect({
      count: after?.count,
      owner: after?.owner_node,
      epoch: after?.owner_epoch,
      runs: after?.runs,
      outcome: JSON.parse(after!.outcome!) as unknown,
    }).toEqual({
      count: String(TO),
      runs: 2,
      owner: "node-b",
      epoch: "2",
      outcome: { kind: "success" },
    });
    // Fencing: the former owner's committed items all lie before the claim; from there on, every item is B's.
    const written = (
      await db.query<{ sequence: string; event: string; item_count: string; writer: string }>(
        `SELECT sequence, event, item_count, writer FROM ${cluster.schema}.written WHERE stream_id = $1 ORDER BY sequence, event DESC`,
        [after!.stream_id],
      )
    ).rows;
    const claimedAt = Number(atClaim!.count);
    const byOwner = written.filter((row) => row.writer === owner.id);
    expect(byOwner.length).toBeGreaterThan(0);
    expect(byOwner.every((row) => row.event === "item" && Number(row.sequence) + Number(row.item_count) <= claimedAt)).toBe(true);
    expect(written.filter((row) => Number(row.sequence) >= claimedAt).every((row) => row.writer === "node-b")).toBe(true);
    expect(new Set(written.map((row) => row.writer))).toEqual(new Set([owner.id, "node-b"]));
    const itemsWritten = written.filter((row) => row.event === "item").reduce((sum, row) => sum + Number(row.item_count), 0);
    expect(itemsWritten).toBe(TO);

    // A client resuming at the other node from a state of before the stall reads the same stream and the same outcome.
    expect(early).toBeDefined();
    const again = clientFor(attachedAt === "B" ? owner.url : b.url).takeover(early!);
    const replay: number[] = [];
    for await (const item of (await firstStream(again)).values()) {
      replay.push(indexOf(item));
      journaled.add(journaledOf(item));
    }
    expect(replay.length).toBeGreaterThan(TO - 30);
    expect(replay).toEqual(items.slice(items.length - replay.length));
    await expect(again.finished).resolves.toEqual({ kind: "success" });
    // One set of journaled values in every item, written by the former owner and read back by B's re-run.
    expect(journaled.size).toBe(1);
    // The former owner recorded nothing and retried nothing.
    expect(owner.log.filter((line) => line.includes("invocation.record-failed"))).toEqual([]);
  });
});

/** `digest`'s parameters: about 600 kB of random chunks, the second half held until `release()`. */
function heldBackUpload() {
  const { chunks, all } = randomChunks(600_000, 40_000);
  const half = Math.floor(chunks.length / 2);
  const firstHalf = chunks.slice(0, half).reduce((sum, chunk) => sum + chunk.length, 0);
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  async function* upload(): AsyncGenerator<Uint8Array> {
    for (const [index, chunk] of chunks.entries()) {
      if (index === half) await released;
      yield chunk;
    }
  }
  return { all, firstHalf, release: () => release(), parameters: record(inputStream.bytes(upload())) };
}

/** Once the first half of `upload` is committed: stops `owner` until B has claimed the session of `key`, continues it, and lets the upload go on. */
async function stallOwnerMidUpload(owner: NodeProcess, key: string, upload: ReturnType<typeof heldBackUpload>): Promise<void> {
  while (Number((await sessionOf(key, "input"))?.count ?? 0) < upload.firstHalf) await sleep(10);
  cluster.pause(owner);
  while ((await sessionOf(key, "input"))?.owner_node !== "node-b") await sleep(10);
  cluster.resume(owner);
  upload.release();
}

/** The digest of every byte of `all` once and success, the session at B after its one re-run, and nothing the former owner failed to record. */
async function expectDigestOfEveryByteOnce(call: Invocation, key: string, all: Uint8Array, owner: NodeProcess): Promise<void> {
  const result = await call.result;
  expect(result.kind === "value" ? fieldsOf(result.value) : undefined).toEqual([
    { kind: "u64", value: String(all.length) },
    { kind: "string", value: sha256(all) },
  ]);
  await expect(call.finished).resolves.toEqual({ kind: "success" });
  expect(await sessionOf(key, "input")).toMatchObject({
    count: String(all.length),
    owner_node: "node-b",
    owner_epoch: "2",
    runs: 2,
    outcome: JSON.stringify({ kind: "success" }),
  });
  expect(owner.log.filter((line) => line.includes("invocation.record-failed"))).toEqual([]);
}

it("mid-upload: SIGSTOP of digest's owner past its lease, the client attached at B; B claims and re-runs it over the stored input, the upload goes on, SIGCONT: the digest is of every byte once, success, and the former owner records nothing", async () => {
  const owner = await cluster.start("node-owner-3");
  // The start reaches the owner; every later connection goes to B.
  const balancer = await startTcpProxy({ upstream: [owner] });
  onTestFinished(async () => {
    if (owner.exit === undefined) cluster.resume(owner);
    await cluster.kill(owner);
    await balancer.close();
  });
  const key = `stalled-digest-${Date.now()}`;
  const upload = heldBackUpload();
  const call = clientFor(balancer.url).invoke({ ...demo, method: "digest", methodParameters: upload.parameters, idempotencyKey: key });
  await call.accepted;
  balancer.setUpstreams([b]);
  balancer.cutOpen();
  await balancer.until(() => balancer.connections.some((routed) => routed.upstreamId === b.id && !routed.closed));
  // B commits the first half for the owner's agent.
  await stallOwnerMidUpload(owner, key, upload);
  await expectDigestOfEveryByteOnce(call, key, upload.all, owner);
});

it("mid-upload with the client attached at the owner: SIGSTOP past its lease, B claims and re-runs digest, SIGCONT: the input the former owner accepts after the claim is refused, the client resumes there and resends; the digest is of every byte once, success", async () => {
  const owner = await cluster.start("node-owner-4");
  onTestFinished(async () => {
    if (owner.exit === undefined) cluster.resume(owner);
    await cluster.kill(owner);
  });
  const key = `stalled-digest-at-owner-${Date.now()}`;
  const upload = heldBackUpload();
  const call = clientFor(owner.url).invoke({ ...demo, method: "digest", methodParameters: upload.parameters, idempotencyKey: key });
  let reconnects = 0;
  call.on("reconnecting", () => reconnects++);
  await stallOwnerMidUpload(owner, key, upload);
  await expectDigestOfEveryByteOnce(call, key, upload.all, owner);
  // The former owner's first write after the claim (input its client sent) was refused; the client resumed.
  expect((await owner.logged((entry) => entry["event"] === "session.ownership-lost"))["epoch"]).toBe("1");
  expect(reconnects).toBeGreaterThan(0);
});
