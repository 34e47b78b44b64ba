/**
 * Cluster mode with real processes on real PostgreSQL: every demo method driven by
 * the real client through a round-robin balancer in front of two, then
 * three, node processes, with the balancer cutting the client's connection
 * at several points of each run (a few byte offsets per method, the next
 * connections cut again early). Every reconnect lands on another node, so
 * the client's attachment moves between nodes while the invocation runs at
 * the node that took the start.
 *
 * Checked: every output item delivered once, in order, no gap (values);
 * every input item accepted once (digest's SHA-256 equals the local one,
 * tally's counts equal); results equal to the same run without cuts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inputStream, type Client } from "@golem-stream/client";
import { cleanUp } from "../support/stores.js";
import { startTcpProxy, type TcpProxy } from "@golem-stream/test-support";
import { TestCluster } from "./support/cluster.js";
import { clientFor, collectAll, demo, fieldsOf, firstStream, randomChunks, range, record, sha256, sleep, u32 } from "./support/demo.js";

const cluster = new TestCluster();
let two: TcpProxy;
let three: TcpProxy;

beforeAll(async () => {
  await cluster.prepare();
  const nodes = await Promise.all(["node-a", "node-b", "node-c"].map((id) => cluster.start(id)));
  two = await startTcpProxy({ upstream: nodes.slice(0, 2) });
  three = await startTcpProxy({ upstream: nodes });
});

afterAll(async () => {
  await two?.close();
  await three?.close();
  await cluster.stopAll();
  await cleanUp();
});

/** Cut points per method and balancer: spread over the bytes of an uncut run. */
const POINTS = 3;

type Scenario<T> = (client: Client) => Promise<T>;

/**
 * Runs `scenario` uncut through `balancer` (its result must equal
 * `expected`) to learn its byte volume, then once per cut point: the first
 * connection is reset at the point, the next two early in their own lives.
 */
async function acrossCuts<T>(balancer: TcpProxy, scenario: Scenario<T>, expected: T): Promise<void> {
  balancer.forget();
  balancer.setPlan(() => undefined);
  const uncut = await scenario(clientFor(balancer.url));
  expect(uncut, "uncut").toEqual(expected);
  const total = balancer.bytes;
  let cuts = 0;
  for (let i = 1; i <= POINTS; i++) {
    const first = Math.max(1, Math.round((total * i) / (POINTS + 1)));
    const budgets = [first, Math.round(first / 3) + 600, 900];
    balancer.forget();
    balancer.setPlan(({ index }) => ({ cutAfter: budgets[index] }));
    const label = `cut at ${first} of ${total} bytes`;
    let value: T;
    try {
      value = await scenario(clientFor(balancer.url));
    } catch (error) {
      throw new Error(`${label}: ${String(error)}\n${cluster.logs()}`, { cause: error });
    }
    expect(value, label).toEqual(uncut);
    // Each reconnect landed on another node than the connection before it.
    const nodes = balancer.connections.map((c) => c.upstreamId).filter((id) => id !== undefined);
    for (let j = 1; j < nodes.length; j++) expect(nodes[j], `${label}: connection ${j}`).not.toBe(nodes[j - 1]);
    expect(new Set(nodes).size, label).toBeGreaterThanOrEqual(2);
    cuts += balancer.cuts;
  }
  expect(cuts).toBeGreaterThanOrEqual(POINTS);
}

/** Reads a stream, pausing now and then so received items queue up and cuts force replays. */
async function slowly<T>(source: AsyncIterable<T>, every = 8, ms = 2): Promise<T[]> {
  const out: T[] = [];
  for await (const item of source) {
    out.push(item);
    if (out.length % every === 0) await sleep(ms);
  }
  return out;
}

const reverseInput = range(40).map((i) => `item-${i}-${"xy".repeat(i % 13)}`);
const tallyInput = range(300).map((i) => `t${i}-${"é".repeat(i % 9)}`);
const digestInput = randomChunks(1024 * 1024 + 333, 64 * 1024);
const splitLines = range(150).map((i) => `line ${i} ${"q".repeat((i * 7) % 200)}`);
const splitText = new TextEncoder().encode(splitLines.join("\n"));

const methods: [string, Scenario<unknown>, unknown][] = [
  [
    "reverse",
    async (client) => {
      const call = client.invoke({ ...demo, method: "reverse", methodParameters: record(inputStream.strings(reverseInput)) });
      const items = await slowly((await firstStream(call)).values());
      await call.finished;
      return items.map((item) => item.value);
    },
    reverseInput.map((s) => Array.from(s).reverse().join("")),
  ],
  [
    "digest",
    async (client) => {
      const call = client.invoke({ ...demo, method: "digest", methodParameters: record(inputStream.bytes(digestInput.chunks)) });
      const result = await call.result;
      await call.finished;
      return result.kind === "value" ? fieldsOf(result.value).map((field) => field.value) : result;
    },
    [String(digestInput.all.length), sha256(digestInput.all)],
  ],
  [
    "count",
    async (client) => {
      const call = client.invoke({ ...demo, method: "count", methodParameters: record(u32(120), u32(0)) });
      const items = await slowly((await firstStream(call)).values(), 16);
      await call.finished;
      return items.map((item) => item.value);
    },
    range(120),
  ],
  [
    "blobs",
    async (client) => {
      const call = client.invoke({ ...demo, method: "blobs", methodParameters: record(u32(12), u32(48 * 1024)) });
      const blobs = await slowly((await firstStream(call)).blobs(), 1, 3);
      await call.finished;
      return blobs.map((blob) => `${blob.bytes.length}:${blob.mimeType}:${sha256(blob.bytes)}`);
    },
    range(12).map(
      (i) => `${48 * 1024}:application/octet-stream:${sha256(Uint8Array.from({ length: 48 * 1024 }, (_, j) => (i + j) & 0xff))}`,
    ),
  ],
  [
    "split",
    async (client) => {
      const chunks = range(Math.ceil(splitText.length / 3000)).map((i) => splitText.subarray(i * 3000, (i + 1) * 3000));
      const call = client.invoke({ ...demo, method: "split", methodParameters: record(inputStream.bytes(chunks)) });
      const result = await call.result;
      if (result.kind !== "value") throw new Error("split returns a value");
      const [upper, lines] = result.streams;
      const [batches, items] = await Promise.all([slowly(upper!.bytes(), 1, 1), collectAll(lines!.values())]);
      await call.finished;
      return { upper: sha256(Buffer.concat(batches)), lines: items.map((item) => item.value) };
    },
    { upper: sha256(Buffer.from(splitLines.join("\n").toUpperCase())), lines: splitLines },
  ],
  [
    "groups",
    async (client) => {
      const call = client.invoke({ ...demo, method: "groups", methodParameters: record(u32(4), u32(25)) });
      const names: unknown[] = [];
      const reads: Promise<unknown[]>[] = [];
      for await (const group of (await firstStream(call)).values()) {
        const [name, items] = fieldsOf(group);
        names.push(name?.value);
        reads.push(slowly(call.stream(items!)!.values(), 6, 1).then((out) => out.map((item) => item.value)));
      }
      const groups = await Promise.all(reads);
      await call.finished;
      return { names, groups };
    },
    { names: range(4).map((g) => `group-${g}`), groups: range(4).map(() => range(25)) },
  ],
  [
    "fail",
    async (client) => {
      const call = client.invoke({ ...demo, method: "fail", methodParameters: record(u32(30)) });
      const seen: unknown[] = [];
      let error: unknown;
      try {
        for await (const item of (await firstStream(call)).values()) {
          seen.push(item.value);
          if (seen.length % 7 === 0) await sleep(2);
        }
      } catch (e) {
        error = e;
      }
      const finished = await call.finished.then(
        (outcome) => outcome.kind,
        (e: { kind?: string; code?: string }) => `${e.kind}:${e.code}`,
      );
      const { kind, code } = (error ?? {}) as { kind?: string; code?: string };
      return { seen, error: `${kind}:${code}`, finished };
    },
    { seen: range(30), error: "stream-failed:producer-error", finished: "success" },
  ],
  [
    "tally",
    async (client) => {
      const call = client.invoke({ ...demo, method: "tally", methodParameters: record(inputStream.strings(tallyInput)) });
      const result = await call.result;
      await call.finished;
      return result.kind === "value" ? fieldsOf(result.value).map((field) => field.value) : result;
    },
    [String(tallyInput.length), String(tallyInput.reduce((sum, s) => sum + Buffer.byteLength(s), 0))],
  ],
];

describe.each([
  ["two nodes", () => two],
  ["three nodes", () => three],
])("every demo method behind a round-robin balancer, %s, cut at many points", (_, balancer) => {
  it.each(methods)(
    "%s",
    async (_method, scenario, expected) => {
      await acrossCuts(balancer(), scenario, expected);
    },
    60_000,
  );
});

describe("an upload continued at a node that does not run the invocation", () => {
  it("tally of 1000 items: the start at one node, the connection cut early, every later item sent to the other node; its input window keeps opening as the owner consumes", async () => {
    const strings = range(1000).map((i) => `w${i}`);
    two.forget();
    // The first connection (the owner) is cut after about 2 KB; the second (the other node) is left alone.
    two.setPlan(({ index }) => (index === 0 ? { cutAfter: 2000 } : undefined));
    const call = clientFor(two.url).invoke({ ...demo, method: "tally", methodParameters: record(inputStream.strings(strings)) });
    const result = await call.result;
    await call.finished;
    expect(result.kind === "value" ? fieldsOf(result.value).map((field) => field.value) : result).toEqual([
      String(strings.length),
      String(strings.reduce((sum, s) => sum + Buffer.byteLength(s), 0)),
    ]);
    const nodes = two.connections.map((c) => c.upstreamId);
    expect(nodes.length).toBe(2);
    expect(nodes[1]).not.toBe(nodes[0]);
  }, 30_000);
});
