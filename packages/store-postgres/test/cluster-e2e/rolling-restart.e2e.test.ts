/**
 * Cluster mode with real processes on real PostgreSQL: a rolling restart of every
 * node, one at a time with drain (taken out of the balancer, SIGTERM, wait
 * for the exit, a replacement with a new node id joins), under 20
 * concurrent long invocations started through the balancer: counts with a
 * delay (some finish within a drain's deadline, some cannot), uploads
 * (digest, tally).
 *
 * Checked per invocation: no data lost or duplicated (count values 0..k-1 in
 * order with k what the store holds; digests and tallies equal the local
 * ones), and each ends as the drain rules say: success is complete; an
 * invocation-failed one was owned by a drained node and still running at
 * its drain's deadline, and everything it produced reached the client
 * (which resumed at other nodes). A drained process exits 0 and reports
 * as many failures as the store holds for it.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { inputStream, type Invocation } from "@golem-stream/client";
import { admin, cleanUp } from "../support/stores.js";
import { startTcpProxy, type TcpProxy } from "@golem-stream/test-support";
import { TestCluster, type NodeProcess } from "./support/cluster.js";
import { clientFor, demo, fieldsOf, firstStream, randomChunks, range, record, sha256, sleep, u32 } from "./support/demo.js";

const DRAIN_MS = 2000;
// A lease long enough that a node slowed down by load (2 cores, other suites running) keeps it:
// only drains end invocations here (a lapsed lease of a live node is not fenced yet; docs/cluster.md).
const cluster = new TestCluster({ leaseTtlMs: 15_000, drainMs: DRAIN_MS });
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
  it("every node drained and replaced in turn under 20 concurrent long invocations: nothing lost or duplicated, each ends as the drain rules say", async () => {
    const tag = Date.now().toString(36);
    const runs: Run[] = [
      ...range(6).map((i) => countRun(`${tag}-short-${i}`, 30, 10)), // well under a second unloaded
      ...range(6).map((i) => countRun(`${tag}-medium-${i}`, 150, 20)), // about 3 s
      // About 30 s: outlives its owner (each is failed at its owner's drain deadline, so the test does not wait for it).
      ...range(4).map((i) => countRun(`${tag}-long-${i}`, 1500, 20)),
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
    let rows: {
      idempotency_key: string;
      session_id: string;
      owner_node: string;
      outcome: string;
      finished_at: string;
      count: string | null;
    }[];
    try {
      rows = (
        await db.query(
          `SELECT se.idempotency_key, se.session_id, se.owner_node, se.outcome, se.finished_at, st.count
           FROM ${cluster.schema}.sessions se LEFT JOIN ${cluster.schema}.streams st ON st.session_id = se.session_id AND st.direction = 'output'
           WHERE se.idempotency_key LIKE $1`,
          [`${tag}-%`],
        )
      ).rows;
    } finally {
      await db.end();
    }
    const byKey = new Map(rows.map((row) => [row.idempotency_key, row]));
    const failedBy = new Map<string, number>();
    const summary = runs.map((run, i) => {
      const row = byKey.get(run.key);
      const drainedAt = row === undefined ? undefined : sigterm.get(row.owner_node);
      const error = outcomes[i]!.error;
      return `${run.key}: ${error === undefined ? "success" : `${error.kind}/${error.code}`} (session ${row?.session_id}, owner ${row?.owner_node}, finished ${drainedAt === undefined ? "?" : Number(row!.finished_at) - drainedAt} ms after its SIGTERM)`;
    });
    if (process.env.GS_E2E_DEBUG !== undefined) console.log(`rolling restart outcomes:\n${summary.join("\n")}`);
    runs.forEach((run, i) => {
      const { value, error } = outcomes[i]!;
      const row = byKey.get(run.key);
      const label = `${run.key} (owner ${row?.owner_node}): ${error === undefined ? "success" : `${error.kind}/${error.code}`}\n${summary.join("\n")}\n${cluster.logs()}`;
      expect(row, label).toBeDefined();
      const outcome = JSON.parse(row!.outcome) as { kind: string; code?: string };
      const finishedAt = Number(row!.finished_at);
      const drainedAt = sigterm.get(row!.owner_node);
      if (error === undefined) {
        expect(value, label).toEqual(run.expected);
        expect(outcome.kind, label).toBe("success");
        // No bound on when: a success whose finish was being committed at its owner's
        // deadline stays a success, and under load that commit can land well after it.
        return;
      }
      expect(error, label).toMatchObject({ kind: "invocation-failed", code: "invocation-failed" });
      expect(outcome, label).toMatchObject({ kind: "failure", code: "invocation-failed" });
      // Failed by its owner's drain, at the deadline and not before.
      expect(drainedAt, label).toBeDefined();
      expect(finishedAt, label).toBeGreaterThanOrEqual(drainedAt! + DRAIN_MS - 50);
      failedBy.set(row!.owner_node, (failedBy.get(row!.owner_node) ?? 0) + 1);
      if (run.kind === "count") {
        // Everything produced before the failure reached the client, once, in order.
        const items = value as number[];
        expect(items, label).toEqual(range(items.length));
        // No output stream row when it failed before its result was committed.
        expect(String(items.length), label).toBe(row!.count ?? "0");
      }
    });
    // The long ones outlive every drain deadline; the rest end either way, by the rules above.
    for (const [i, run] of runs.entries()) if (run.key.includes("-long-")) expect(outcomes[i]!.error, run.key).toBeDefined();
    // Each drained process reported as many failed invocations as the store holds for it.
    for (const node of cluster.nodes.filter((n) => sigterm.has(n.id))) expect(node.drained, node.id).toBe(failedBy.get(node.id) ?? 0);
  }, 90_000);
});
