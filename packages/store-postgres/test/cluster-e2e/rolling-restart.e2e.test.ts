/**
 * Cluster mode with real processes on real PostgreSQL: a rolling restart of every
 * node, one at a time with drain (taken out of the balancer, SIGTERM, wait
 * for the exit, a replacement with a new node id joins), under 20
 * concurrent long invocations started through the balancer: counts with a
 * delay (some finish within a drain's deadline, some cannot), uploads
 * (digest, tally).
 *
 * Every method here is replayable, so none may fail: an invocation still
 * running at its owner's drain deadline is left to the other nodes, which
 * claim it once the drained node has left and run it again, while its
 * client resumes through the balancer. Checked per invocation: success, no
 * data lost or duplicated (count values 0..k-1 in order; digests and tallies
 * equal the local ones). A drained process exits 0 and reports what it left
 * to the others and failed nothing; the first drain leaves at least one.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { inputStream, type Invocation } from "@golem-stream/client";
import { admin, cleanUp } from "../support/stores.js";
import { startTcpProxy, type TcpProxy } from "@golem-stream/test-support";
import { TestCluster, type NodeProcess } from "./support/cluster.js";
import { clientFor, demo, fieldsOf, firstStream, randomChunks, range, record, sha256, sleep, u32 } from "./support/demo.js";

const DRAIN_MS = 2000;
// A short lease, so that the nodes claim what a drained node left soon after it leaves (every
// half lease, once a node has seen the store for a whole one). A lease lapsing under load (2
// cores, other suites running) moves an invocation too, fenced, and it runs again at its
// claimer: re-runs are not what is counted here, so they are not bounded.
const cluster = new TestCluster({ leaseTtlMs: 3000, drainMs: DRAIN_MS, maxReplays: 100 });
let balancer: TcpProxy;
const live: NodeProcess[] = [];

beforeAll(async () => {
  await cluster.prepare();
  live.push(...(await Promise.all(["node-a", "node-b", "node-c"].map((id) => cluster.start(id)))));
  balancer = await startTcpProxy({ upstream: live });
});

afterAll(async () => {
  await balancer?.close();
  await cluster.stopAll();
  await cleanUp();
});

/** Reconnects for up to ~10 s: a node leaving costs a few attempts. */
const PATIENT = { initialDelayMs: 10, maxDelayMs: 250, maxAttempts: 60 };

interface Run {
  readonly key: string;
  readonly kind: "count" | "digest" | "tally";
  /** What a complete run returns. */
  readonly expected: unknown;
  readonly done: Promise<{ value: unknown; error: { kind?: string; code?: string } | undefined }>;
}

const settle = async (call: Invocation, value: () => unknown) => {
  const error = await call.finished.then(
    () => undefined,
    (e: { kind?: string; code?: string }) => e,
  );
  return { value: value(), error };
};

function countRun(key: string, to: number, delayMs: number): Run {
  const call = clientFor(balancer.url, { reconnect: PATIENT }).invoke({
    ...demo,
    method: "count",
    methodParameters: record(u32(to), u32(delayMs)),
    idempotencyKey: key,
  });
  const items: unknown[] = [];
  const done = (async () => {
    try {
      for await (const item of (await firstStream(call)).values()) items.push(item.value);
    } catch {
      // the stream's terminal (invocation-failed): the outcome says the rest
    }
    return settle(call, () => items);
  })();
  return { key, kind: "count", expected: range(to), done };
}

function digestRun(key: string): Run {
  const { chunks, all } = randomChunks(2 * 1024 * 1024, 96 * 1024);
  async function* paced() {
    for (const chunk of chunks) {
      yield chunk;
      await sleep(40);
    }
  }
  const call = clientFor(balancer.url, { reconnect: PATIENT }).invoke({
    ...demo,
    method: "digest",
    methodParameters: record(inputStream.bytes(paced())),
    idempotencyKey: key,
  });
  let fields: unknown;
  const done = (async () => {
    const result = await call.result.catch(() => undefined);
    if (result?.kind === "value") fields = fieldsOf(result.value).map((f) => f.value);
    return settle(call, () => fields);
  })();
  return { key, kind: "digest", expected: [String(all.length), sha256(all)], done };
}

function tallyRun(key: string): Run {
  const strings = range(300).map((i) => `tally-${i}-${"ü".repeat(i % 11)}`);
  async function* paced() {
    for (const s of strings) {
      yield s;
      await sleep(5);
    }
  }
  const call = clientFor(balancer.url, { reconnect: PATIENT }).invoke({
    ...demo,
    method: "tally",
    methodParameters: record(inputStream.strings(paced())),
    idempotencyKey: key,
  });
  let fields: unknown;
  const done = (async () => {
    const result = await call.result.catch(() => undefined);
    if (result?.kind === "value") fields = fieldsOf(result.value).map((f) => f.value);
    return settle(call, () => fields);
  })();
  return {
    key,
    kind: "tally",
    expected: [String(strings.length), String(strings.reduce((sum, s) => sum + Buffer.byteLength(s), 0))],
    done,
  };
}

describe("rolling restart with drain", () => {
  it("every node drained and replaced in turn under 20 concurrent long invocations: each succeeds, nothing lost or duplicated; what outlives a drain runs again at another node", async () => {
    const tag = Date.now().toString(36);
    const runs: Run[] = [
      ...range(6).map((i) => countRun(`${tag}-short-${i}`, 30, 10)), // well under a second unloaded
      ...range(6).map((i) => countRun(`${tag}-medium-${i}`, 150, 20)), // about 3 s
      // About 8 s a run: outlives its owner's drain deadline, and runs again from the start elsewhere.
      ...range(4).map((i) => countRun(`${tag}-long-${i}`, 400, 20)),
      ...range(2).map((i) => digestRun(`${tag}-digest-${i}`)),
      ...range(2).map((i) => tallyRun(`${tag}-tally-${i}`)),
    ];
    const settled = new Set<string>();
    runs.forEach((run) => void run.done.then(() => settled.add(run.key)));
    const progress = setInterval(() => {
      if (process.env.GS_E2E_DEBUG === undefined) return;
      console.log(
        `[${new Date().toISOString()}] pending: ${runs
          .filter((r) => !settled.has(r.key))
          .map((r) => r.key)
          .join(", ")}; live: ${live.map((n) => n.id).join(",")}`,
      );
      console.log(cluster.logs());
    }, 5000);
    onTestFinished(() => clearInterval(progress));
    await sleep(300);

    // Rolling restart: one node at a time.
    const sigterm = new Map<string, number>();
    for (const old of [...live]) {
      live.splice(live.indexOf(old), 1);
      balancer.setUpstreams(live);
      sigterm.set(old.id, Date.now());
      if (process.env.GS_E2E_DEBUG !== undefined) console.log(`[${new Date().toISOString()}] draining ${old.id}`);
      const exit = await cluster.drain(old);
      expect(exit, `${old.id} exit\n${old.log.join("\n")}`).toEqual({ code: 0, signal: null });
      const replacement = await cluster.start(`${old.id}-2`);
      live.push(replacement);
      balancer.setUpstreams(live);
    }

    const outcomes = await Promise.all(runs.map((run) => run.done));
    const db = await admin();
    let rows: { idempotency_key: string; session_id: string; owner_node: string; outcome: string }[];
    try {
      rows = (
        await db.query(
          `SELECT idempotency_key, session_id, owner_node, outcome FROM ${cluster.schema}.sessions WHERE idempotency_key LIKE $1`,
          [`${tag}-%`],
        )
      ).rows;
    } finally {
      await db.end();
    }
    const byKey = new Map(rows.map((row) => [row.idempotency_key, row]));
    const summary = runs.map((run, i) => {
      const row = byKey.get(run.key);
      const error = outcomes[i]!.error;
      return `${run.key}: ${error === undefined ? "success" : `${error.kind}/${error.code}`} (session ${row?.session_id}, owner ${row?.owner_node})`;
    });
    if (process.env.GS_E2E_DEBUG !== undefined) console.log(`rolling restart outcomes:\n${summary.join("\n")}`);
    runs.forEach((run, i) => {
      const { value, error } = outcomes[i]!;
      const row = byKey.get(run.key);
      const label = `${run.key} (owner ${row?.owner_node})\n${summary.join("\n")}\n${cluster.logs()}`;
      expect(error, label).toBeUndefined();
      expect(value, label).toEqual(run.expected);
      expect(JSON.parse(row!.outcome), label).toMatchObject({ kind: "success" });
    });
    const drained = cluster.nodes.filter((n) => sigterm.has(n.id)).map((n) => ({ id: n.id, ...n.drained }));
    for (const node of drained) expect(node, node.id).toMatchObject({ failed: 0 });
    // The first node drained 2 s after the start: of the ten invocations that run longer, those it
    // owned were still running at its deadline.
    expect(drained[0]!.handedOver, JSON.stringify(drained)).toBeGreaterThan(0);
  }, 90_000);
});
