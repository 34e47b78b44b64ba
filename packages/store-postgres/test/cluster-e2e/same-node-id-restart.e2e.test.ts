/**
 * A node killed with SIGKILL and started again with the same node id, with
 * real processes on real PostgreSQL, while a replayable invocation it owns
 * runs (docs/durable-execution.md): the restarted node finds the session
 * still its own and re-runs it at start (`recoverInterrupted`), at the
 * session's next epoch (`reclaim`), so that a former process of the id that
 * is not dead but frozen is fenced out of it when it goes on. The lease is long enough that no other node claims it
 * first (a claim after a kill: takeover-and-owner-loss.e2e.test.ts). With
 * a lease shorter than the restart, the other node may claim it first, or
 * both may move at once: whichever runs it, the client sees the same.
 * The client, attached at the other node or at the restarted node itself
 * (it reconnects to the same port), finishes with success: every item
 * once, the digest of every byte once.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { inputStream, type ResumeState } from "@golem-stream/client";
import { admin, cleanUp } from "../support/stores.js";
import { TestCluster, type NodeProcess } from "./support/cluster.js";
import { clientFor, demo, fieldsOf, firstStream, randomChunks, range, record, sha256, sleep, u32 } from "./support/demo.js";

// No claim can come before the restart: the lease outlives it by far (it is not waited for).
const cluster = new TestCluster({ leaseTtlMs: 60_000 });
/** Reconnects for up to ~30 s: the restart of a node process on a loaded machine. */
const PATIENT = { initialDelayMs: 20, maxDelayMs: 200, maxAttempts: 150 };
let a: NodeProcess;
let b: NodeProcess;
let db: pg.Client;

beforeAll(async () => {
  await cluster.prepare();
  db = await admin();
  [a, b] = (await Promise.all(["node-a", "node-b"].map((id) => cluster.start(id)))) as [NodeProcess, NodeProcess];
});

afterAll(async () => {
  await db.end();
  await cluster.stopAll();
  await cleanUp();
});

interface SessionRow {
  readonly owner_node: string;
  readonly owner_epoch: string;
  readonly outcome: string | null;
  readonly runs: number | null;
  readonly input_count: string | null;
}

async function sessionOf(key: string): Promise<SessionRow | undefined> {
  const s = cluster.schema;
  const { rows } = await db.query<SessionRow>(
    `SELECT se.owner_node, se.owner_epoch, se.outcome, r.runs,
       (SELECT st.count FROM ${s}.streams st WHERE st.session_id = se.session_id AND st.direction = 'input') AS input_count
     FROM ${s}.sessions se LEFT JOIN ${s}.session_runs r USING (session_id) WHERE se.idempotency_key = $1`,
    [key],
  );
  return rows[0];
}

/** Kills `node` (SIGKILL) and starts a node of the same id; on the same port when `samePort`. */
async function killAndRestart(node: NodeProcess, samePort: boolean): Promise<NodeProcess> {
  await cluster.kill(node);
  expect(node.exit?.signal).toBe("SIGKILL");
  return cluster.start(node.id, undefined, samePort ? node.port : undefined);
}

it("count owned by node A, the client attached at B: A killed and restarted as node-a re-runs it at start; the client gets every item once, then success", async () => {
  const key = `same-id-count-${Date.now()}`;
  const start = clientFor(a.url).invoke({ ...demo, method: "count", methodParameters: record(u32(80), u32(20)), idempotencyKey: key });
  const startItems = (await firstStream(start)).values()[Symbol.asyncIterator]();
  for (let seen = 0; seen < 2; seen++) expect((await startItems.next()).value?.value).toBe(seen);
  const state: ResumeState | undefined = start.detach();
  expect(state).toBeDefined();

  const atB = clientFor(b.url, { reconnect: PATIENT }).takeover(state!);
  const items: number[] = [];
  let restarted: Promise<NodeProcess> | undefined;
  for await (const item of (await firstStream(atB)).values()) {
    items.push(item.value as number);
    if (items.length === 20) restarted = killAndRestart(a, false);
  }
  await expect(atB.finished).resolves.toEqual({ kind: "success" });
  a = await restarted!;
  // From the item after the starting client's last delivered one (it held item 1 undelivered when it detached), each once.
  expect(items).toEqual(range(79, 1));
  // Re-run by the restarted node itself, at the next epoch (reclaimed at start): nobody else claimed it.
  expect(await sessionOf(key)).toMatchObject({
    owner_node: "node-a",
    owner_epoch: "2",
    runs: 2,
    outcome: JSON.stringify({ kind: "success" }),
  });
  expect(await a.logged((entry) => entry["event"] === "recovery.interrupted")).toMatchObject({ count: 1 });
});

it("digest mid-upload, the client attached at A itself: A killed and restarted as node-a on its port; the client reconnects there, the upload goes on, the digest is of every byte once", async () => {
  const key = `same-id-digest-${Date.now()}`;
  const { chunks, all } = randomChunks(600_000, 40_000);
  const half = Math.floor(chunks.length / 2);
  let release: () => void = () => undefined;
  const afterRestart = new Promise<void>((resolve) => (release = resolve));
  async function* upload(): AsyncGenerator<Uint8Array> {
    for (const [index, chunk] of chunks.entries()) {
      if (index === half) await afterRestart;
      yield chunk;
    }
  }
  const call = clientFor(a.url, { reconnect: PATIENT }).invoke({
    ...demo,
    method: "digest",
    methodParameters: record(inputStream.bytes(upload())),
    idempotencyKey: key,
  });
  await call.accepted;
  // The first half is committed (the input's count in the store), so the re-run reads it back from there.
  const firstHalf = chunks.slice(0, half).reduce((sum, chunk) => sum + chunk.length, 0);
  while (Number((await sessionOf(key))?.input_count ?? 0) < firstHalf) await sleep(10);

  a = await killAndRestart(a, true);
  release();
  const result = await call.result;
  expect(result.kind === "value" ? fieldsOf(result.value) : undefined).toEqual([
    { kind: "u64", value: String(all.length) },
    { kind: "string", value: sha256(all) },
  ]);
  await expect(call.finished).resolves.toEqual({ kind: "success" });
  expect(await sessionOf(key)).toMatchObject({
    owner_node: "node-a",
    owner_epoch: "2",
    runs: 2,
    outcome: JSON.stringify({ kind: "success" }),
  });
});

it("count owned by node A, the client attached at B: A frozen (SIGSTOP), node-a started again beside it re-runs the session at its next epoch; A continued (SIGCONT) is refused its first write and stops; the client gets every item once, then success", async () => {
  const key = `same-id-frozen-${Date.now()}`;
  const start = clientFor(a.url).invoke({ ...demo, method: "count", methodParameters: record(u32(80), u32(20)), idempotencyKey: key });
  const startItems = (await firstStream(start)).values()[Symbol.asyncIterator]();
  for (let seen = 0; seen < 2; seen++) expect((await startItems.next()).value?.value).toBe(seen);
  const state = start.detach();
  expect(state).toBeDefined();

  const frozen = a;
  const atB = clientFor(b.url, { reconnect: PATIENT }).takeover(state!);
  const items: number[] = [];
  let restarted: Promise<NodeProcess> | undefined;
  let continued: Promise<Record<string, unknown>> | undefined;
  for await (const item of (await firstStream(atB)).values()) {
    items.push(item.value as number);
    if (items.length === 10) {
      cluster.pause(frozen);
      restarted = cluster.start("node-a");
    }
    // Items past the freeze come from the new process's run: the former one is continued while it runs.
    if (items.length === 40) {
      cluster.resume(frozen);
      continued = frozen.logged((entry) => entry["event"] === "session.ownership-lost");
    }
  }
  await expect(atB.finished).resolves.toEqual({ kind: "success" });
  a = await restarted!;
  expect(items).toEqual(range(79, 1));
  // The former process was refused (its epoch is the one before), and recorded nothing.
  await expect(continued).resolves.toMatchObject({ session: expect.any(String) });
  expect(await sessionOf(key)).toMatchObject({
    owner_node: "node-a",
    owner_epoch: "2",
    runs: 2,
    outcome: JSON.stringify({ kind: "success" }),
  });
});

describe("a lease shorter than the restart", () => {
  const short = new TestCluster({ leaseTtlMs: 1000 });
  let sa: NodeProcess;
  let sb: NodeProcess;
  beforeAll(async () => {
    await short.prepare();
    [sa, sb] = (await Promise.all(["node-a", "node-b"].map((id) => short.start(id)))) as [NodeProcess, NodeProcess];
  });
  afterAll(async () => {
    await short.stopAll();
  });

  it("count owned by node A, the client attached at B: A killed and restarted as node-a while its lease lapses; whichever node re-runs it, the client gets every item once, then success", async () => {
    const key = `same-id-short-${Date.now()}`;
    const start = clientFor(sa.url).invoke({ ...demo, method: "count", methodParameters: record(u32(80), u32(20)), idempotencyKey: key });
    const startItems = (await firstStream(start)).values()[Symbol.asyncIterator]();
    for (let seen = 0; seen < 2; seen++) expect((await startItems.next()).value?.value).toBe(seen);
    const state = start.detach();
    expect(state).toBeDefined();

    const atB = clientFor(sb.url, { reconnect: PATIENT }).takeover(state!);
    const items: number[] = [];
    let restarted: Promise<NodeProcess> | undefined;
    for await (const item of (await firstStream(atB)).values()) {
      items.push(item.value as number);
      if (items.length === 20) {
        restarted = short.kill(sa).then(() => short.start("node-a"));
      }
    }
    await expect(atB.finished).resolves.toEqual({ kind: "success" });
    sa = await restarted!;
    expect(items).toEqual(range(79, 1));
    const { rows } = await db.query<{ outcome: string; owner_node: string }>(
      `SELECT outcome, owner_node FROM ${short.schema}.sessions WHERE idempotency_key = $1`,
      [key],
    );
    expect(JSON.parse(rows[0]!.outcome)).toEqual({ kind: "success" });
    expect(["node-a", "node-b"]).toContain(rows[0]!.owner_node);
  });
});
