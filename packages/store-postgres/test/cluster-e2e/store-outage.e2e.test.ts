/**
 * Two node processes on a PostgreSQL of this file's own, which the tests stop and start again
 * under running invocations (docs/cluster.md, *Store outages*). The stores' outage grace is 10 s
 * and the lease 1 s, so every outage here lapses every lease: a node that came back first and
 * claimed the other's sessions would fail them.
 *
 * Invocations run at both nodes, with clients attached to the owner and to the other node:
 * `count` (output written all along), `reverse` (input and output), `digest` (input only); within
 * the grace also every other demo method but `fail`: `tally` (string input, a result), `split`
 * (byte input, two outputs), `blobs` (binary output) and `groups` (nested output streams), the
 * last two with a client that stops reading halfway until the outage is over. The
 * outages are held by events, not by time: until each node has logged enough failed
 * heartbeats (its lease lapsed), or until each has failed writes past the grace.
 *
 * - Within the grace (a fast restart; an immediate one held longer): every invocation succeeds
 *   with every item once, in order.
 * - Past the grace: exactly the invocations that were waiting on a write (the counts) fail
 *   with invocation-failed; those idle meanwhile (their clients' input held) succeed; every
 *   item a client received is in the store.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from "vitest";
import { inputStream, type Client, type Invocation } from "@golem-stream/client";
import { startLocalPostgres, type LocalPostgres } from "../../src/local-postgres.js";
import { cleanUp } from "../support/stores.js";
import { logged, TestCluster, type NodeProcess } from "./support/cluster.js";
import { clientFor, demo, fieldsOf, firstStream, range, record, sha256, u32 } from "./support/demo.js";
import pg from "pg";

const GRACE_MS = 10_000;
/** Patient reconnects: a client whose connection drops during an outage comes back after it. */
const PATIENT = { initialDelayMs: 50, maxDelayMs: 500, maxAttempts: 400 };

let postgres: LocalPostgres;
let cluster: TestCluster;
let a: NodeProcess;
let b: NodeProcess;

beforeAll(async () => {
  postgres = await startLocalPostgres({ database: "outage" });
  cluster = new TestCluster({ pgUrl: postgres.url, leaseTtlMs: 1000, outageGraceMs: GRACE_MS });
  await cluster.prepare();
  [a, b] = (await Promise.all(["node-a", "node-b"].map((id) => cluster.start(id)))) as [NodeProcess, NodeProcess];
}, 120_000);

afterAll(async () => {
  await cluster?.stopAll();
  await cleanUp().catch(() => undefined);
  await postgres?.stop();
});

const client = (node: NodeProcess): Client => clientFor(node.url, { reconnect: PATIENT });

/** A gate the tests open: input generators wait at it, so an invocation sits idle through an outage. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

/** `items`, of which the second half waits for `held` to open; `atHalf` is called first there. */
async function* halfThenHeld<T>(items: readonly T[], held: Promise<void>, atHalf?: () => void): AsyncGenerator<T> {
  for (const [i, item] of items.entries()) {
    if (i === items.length / 2) {
      atHalf?.();
      await held;
    }
    yield item;
  }
}

/** What one invocation ended with: its items or result, and its outcome. */
interface Ran {
  readonly values: unknown;
  readonly outcome: string;
}

/** Items read so far, by run (for the message of a test that hangs). */
const progressOf = new Map<string, string>();

/** Reads every item of `call`'s first stream, and how it finished (`success`, or `kind:code`). */
async function drain(
  call: Invocation,
  progress: () => void,
  label: string,
  progressAt = 5,
): Promise<{ items: unknown[]; outcome: string }> {
  const items: unknown[] = [];
  try {
    for await (const item of (await firstStream(call)).values()) {
      items.push(item.value);
      progressOf.set(label, `${items.length} items`);
      if (items.length === progressAt) progress();
    }
  } catch {
    // The stream's end with a failure: the outcome says which.
  }
  progressOf.set(label, `${items.length} items, stream ended`);
  return { items, outcome: await outcomeOf(call) };
}

/** `count(to, delayMs)` started at `owner`, its client moved to `attachedAt` after the first items when that is another node. */
async function countAt(owner: NodeProcess, attachedAt: NodeProcess, to: number, progress: () => void): Promise<Ran> {
  const call = client(owner).invoke({ ...demo, method: "count", methodParameters: record(u32(to), u32(10)) });
  if (owner === attachedAt) {
    const { items, outcome } = await drain(call, progress, `count ${owner.id} ${attachedAt.id}`);
    return { values: items, outcome };
  }
  // Read three items, detach, resume at the other node: it serves the attachment while the owner runs the invocation.
  const stream = await firstStream(call);
  const first = stream.values()[Symbol.asyncIterator]();
  const items: unknown[] = [];
  for (let i = 0; i < 3; i++) items.push((await first.next()).value?.value);
  const state = call.detach();
  if (state === undefined) throw new Error("no state to detach with");
  const moved = await drain(client(attachedAt).resume(state), progress, `count ${owner.id} ${attachedAt.id}`);
  return { values: [...items, ...moved.items.filter((value) => (value as number) >= 3)], outcome: moved.outcome };
}

/**
 * `reverse` at `node`: half its input, then (once `held` opens) the rest. It has made progress
 * once the client received the first half reversed: that input and output are committed, and
 * the invocation is idle (waiting for input) until `held` opens.
 */
async function reverseAt(node: NodeProcess, input: readonly string[], held: Promise<void>, progress: () => void): Promise<Ran> {
  const call = client(node).invoke({
    ...demo,
    method: "reverse",
    methodParameters: record(inputStream.strings(halfThenHeld(input, held))),
  });
  const { items: out, outcome } = await drain(call, progress, `reverse ${node.id}`, input.length / 2);
  return { values: out, outcome };
}

/** `digest` at `node`: half its chunks, then (once `held` opens) the rest. */
async function digestAt(node: NodeProcess, chunks: readonly Uint8Array[], held: Promise<void>, progress: () => void): Promise<Ran> {
  const call = client(node).invoke({
    ...demo,
    method: "digest",
    methodParameters: record(inputStream.bytes(halfThenHeld(chunks, held, progress))),
  });
  const result = await call.result;
  progressOf.set("digest", "result");
  return {
    values: result.kind === "value" ? fieldsOf(result.value).map((field) => field.value) : result.kind,
    outcome: await outcomeOf(call),
  };
}

/** `tally` at `node`: half its lines, then (once `held` opens) the rest. */
async function tallyAt(node: NodeProcess, lines: readonly string[], held: Promise<void>, progress: () => void): Promise<Ran> {
  const call = client(node).invoke({
    ...demo,
    method: "tally",
    methodParameters: record(inputStream.strings(halfThenHeld(lines, held, progress))),
  });
  const result = await call.result;
  return {
    values: result.kind === "value" ? fieldsOf(result.value).map((field) => field.value) : result.kind,
    outcome: await outcomeOf(call),
  };
}

/** `split` at `node`: half its bytes, then (once `held` opens) the rest; both outputs read to their ends. */
async function splitAt(node: NodeProcess, chunks: readonly Uint8Array[], held: Promise<void>, progress: () => void): Promise<Ran> {
  const call = client(node).invoke({
    ...demo,
    method: "split",
    methodParameters: record(inputStream.bytes(halfThenHeld(chunks, held, progress))),
  });
  const result = await call.result;
  if (result.kind !== "value") return { values: result.kind, outcome: await outcomeOf(call) };
  const [upper, lines] = result.streams;
  const bytes: Uint8Array[] = [];
  const read: unknown[] = [];
  await Promise.all([
    (async () => {
      for await (const batch of upper!.bytes()) bytes.push(batch);
    })(),
    (async () => {
      for await (const item of lines!.values()) read.push(item.value);
    })(),
  ]);
  return { values: { upper: sha256(Buffer.concat(bytes)), lines: read }, outcome: await outcomeOf(call) };
}

/** `blobs` at `node`, read by a client that stops halfway until `held` opens (the producer waits for its window meanwhile). */
async function blobsAt(node: NodeProcess, count: number, size: number, held: Promise<void>, progress: () => void): Promise<Ran> {
  const call = client(node).invoke({ ...demo, method: "blobs", methodParameters: record(u32(count), u32(size)) });
  const firstBytes: number[] = [];
  for await (const blob of (await firstStream(call)).blobs()) {
    firstBytes.push(blob.bytes[0]!);
    if (firstBytes.length === count / 2) {
      progress();
      await held;
    }
  }
  return { values: firstBytes, outcome: await outcomeOf(call) };
}

/** `groups` at `node`, whose nested streams are read by a client that stops after its first items until `held` opens. */
async function groupsAt(node: NodeProcess, groups: number, per: number, held: Promise<void>, progress: () => void): Promise<Ran> {
  const call = client(node).invoke({ ...demo, method: "groups", methodParameters: record(u32(groups), u32(per)) });
  const names: unknown[] = [];
  const reads: Promise<unknown[]>[] = [];
  let first = true;
  for await (const group of (await firstStream(call)).values()) {
    const [name, items] = fieldsOf(group);
    names.push(name?.value);
    const holdHere = first;
    first = false;
    reads.push(
      (async () => {
        const out: unknown[] = [];
        for await (const item of call.stream(items!)!.values()) {
          out.push(item.value);
          if (holdHere && out.length === per / 2) {
            progress();
            await held;
          }
        }
        return out;
      })(),
    );
  }
  return { values: { names, groups: await Promise.all(reads) }, outcome: await outcomeOf(call) };
}

/** How `call` finished: `success`, or `kind:code`. */
function outcomeOf(call: Invocation): Promise<string> {
  return call.finished.then(
    (finished) => (finished.kind === "success" ? "success" : `${finished.kind}:${(finished as { code?: string }).code}`),
    (error: { kind?: string; code?: string }) => `${error.kind}:${error.code}`,
  );
}

const tallyLines = range(400).map((i) => `line ${i}`);
const splitText = Buffer.from(
  range(300)
    .map((i) => `line ${i} ${"q".repeat(i % 40)}`)
    .join("\n"),
);
const splitChunks = range(8).map((i) => splitText.subarray((i * splitText.length) / 8, ((i + 1) * splitText.length) / 8));
const BLOBS = 600;
const GROUPS = 3;
const PER_GROUP = 600;

const reverseInput = range(40).map((i) => `item-${i}`);
const digestChunks = range(16).map((i) => Uint8Array.from({ length: 8192 }, (_, j) => (i * 31 + j) & 0xff));
const digestAll = Buffer.concat(digestChunks);

/**
 * Starts the invocations, waits until each has made progress, runs `outage`, opens the held
 * input, and resolves with what each ended with, by name.
 */
async function underOutage(
  countTo: number,
  idleAtB: "digest" | "reverse",
  outage: () => Promise<void>,
  everyMethod = false,
): Promise<Record<string, Ran>> {
  // A run that hangs ends by the test's timeout, which tells nothing: the nodes' logs and the runs' progress do.
  onTestFailed(() => console.error(`${cluster.logs()}\n${JSON.stringify([...progressOf])}`));
  progressOf.clear();
  const held = gate();
  const started: Promise<void>[] = [];
  const progress = (): (() => void) => {
    const step = gate();
    started.push(step.wait);
    return step.open;
  };
  const runs: Record<string, Promise<Ran>> = {
    "count at A, client at A": countAt(a, a, countTo, progress()),
    "count at A, client at B": countAt(a, b, countTo, progress()),
    "count at B, client at B": countAt(b, b, countTo, progress()),
    "count at B, client at A": countAt(b, a, countTo, progress()),
    "reverse at A": reverseAt(a, reverseInput, held.wait, progress()),
    // A digest has no output to tell that its first half was committed: only where every run must succeed.
    [`${idleAtB} at B`]:
      idleAtB === "digest" ? digestAt(b, digestChunks, held.wait, progress()) : reverseAt(b, reverseInput, held.wait, progress()),
    ...(everyMethod
      ? {
          "tally at A": tallyAt(a, tallyLines, held.wait, progress()),
          "split at B": splitAt(b, splitChunks, held.wait, progress()),
          "blobs at A": blobsAt(a, BLOBS, 1024, held.wait, progress()),
          "groups at B": groupsAt(b, GROUPS, PER_GROUP, held.wait, progress()),
        }
      : {}),
  };
  await Promise.all(started);
  await outage();
  held.open();
  const names = Object.keys(runs);
  const ended = await Promise.all(names.map((name) => runs[name]!));
  return Object.fromEntries(names.map((name, i) => [name, ended[i]!]));
}

/** Holds PostgreSQL down until each node has logged `failures` more failed heartbeats (its lease lapsed meanwhile). */
async function heartbeatsFail(failures: number): Promise<void> {
  const from = [a.log.length, b.log.length];
  await Promise.all([logged(a, "cluster.heartbeat-error", failures, from[0]), logged(b, "cluster.heartbeat-error", failures, from[1])]);
}

const reversed = reverseInput.map((s) => Array.from(s).reverse().join(""));

describe("PostgreSQL unavailable under running invocations on two nodes", () => {
  it.each([
    ["restarted fast, down until every lease lapsed", "fast", 4],
    ["restarted immediate, down for several leases", "immediate", 12],
  ] as const)("%s: every invocation succeeds with every item once, in order", { timeout: 60_000 }, async (_, mode, failures) => {
    const ran = await underOutage(
      300,
      "digest",
      async () => {
        await postgres.shutdown(mode);
        await heartbeatsFail(failures);
        await postgres.start();
      },
      true,
    );
    const message = cluster.logs();
    for (const name of ["count at A, client at A", "count at A, client at B", "count at B, client at B", "count at B, client at A"]) {
      expect(ran[name], `${name}\n${message}`).toEqual({ values: range(300), outcome: "success" });
    }
    expect(ran["reverse at A"], message).toEqual({ values: reversed, outcome: "success" });
    expect(ran["digest at B"], message).toEqual({ values: [String(digestAll.length), sha256(digestAll)], outcome: "success" });
    expect(ran["tally at A"], message).toEqual({
      values: [String(tallyLines.length), String(Buffer.byteLength(tallyLines.join("")))],
      outcome: "success",
    });
    expect(ran["split at B"], message).toEqual({
      values: { upper: sha256(Buffer.from(splitText.toString().toUpperCase())), lines: splitText.toString().split("\n") },
      outcome: "success",
    });
    expect(ran["blobs at A"], message).toEqual({ values: range(BLOBS).map((i) => i & 0xff), outcome: "success" });
    expect(ran["groups at B"], message).toEqual({
      values: { names: range(GROUPS).map((g) => `group-${g}`), groups: range(GROUPS).map(() => range(PER_GROUP)) },
      outcome: "success",
    });
    // The writers waited: each node saw the outage and its end, and failed nothing past the grace.
    for (const node of [a, b]) {
      expect(node.log.some((line) => line.includes('"store available again"'))).toBe(true);
      expect(node.log.some((line) => line.includes("store.outage-grace-exceeded"))).toBe(false);
    }
  });

  it(
    "down past the grace: the invocations waiting on a write fail with invocation-failed, the idle ones succeed, nothing a client received is lost",
    { timeout: 60_000 },
    async () => {
      const from = [a.log.length, b.log.length];
      const ran = await underOutage(100_000, "reverse", async () => {
        await postgres.shutdown("fast");
        await Promise.all([logged(a, "store.outage-grace-exceeded", 1, from[0]), logged(b, "store.outage-grace-exceeded", 1, from[1])]);
        await postgres.start();
      });
      const message = cluster.logs();
      const counts = ["count at A, client at A", "count at A, client at B", "count at B, client at B", "count at B, client at A"];
      for (const name of counts) {
        const { values, outcome } = ran[name]!;
        expect(outcome, `${name}\n${message}`).toBe("invocation-failed:invocation-failed");
        // What the client received: the first items, once, in order.
        expect(values, name).toEqual(range((values as unknown[]).length));
      }
      expect(ran["reverse at A"], message).toEqual({ values: reversed, outcome: "success" });
      expect(ran["reverse at B"], message).toEqual({ values: reversed, outcome: "success" });
      // Every item a client received was committed: each count's stored output holds at least as many.
      const stored = await storedCounts();
      const received = counts.map((name) => (ran[name]!.values as unknown[]).length).sort((x, y) => x - y);
      const committed = stored.filter((count) => count < 100_000).sort((x, y) => x - y);
      expect(committed.length).toBeGreaterThanOrEqual(received.length);
      const largest = committed.slice(-received.length);
      received.forEach((count, i) => expect(largest[i]).toBeGreaterThanOrEqual(count));
      for (const node of [a, b])
        expect(node.log.some((line) => line.includes("store unavailable for longer than the outage grace"))).toBe(true);
    },
  );
});

/** The item count of every `count` output stream in the cluster's schema (finished sessions of this file). */
async function storedCounts(): Promise<number[]> {
  const db = new pg.Client({ connectionString: postgres.url });
  await db.connect();
  try {
    const { rows } = await db.query<{ count: string }>(
      `SELECT st.count FROM ${cluster.schema}.streams st JOIN ${cluster.schema}.sessions s USING (session_id)
       WHERE s.method = 'count' AND st.direction = 'output' AND s.outcome LIKE '%invocation-failed%'`,
    );
    return rows.map((row) => Number(row.count));
  } finally {
    await db.end();
  }
}
