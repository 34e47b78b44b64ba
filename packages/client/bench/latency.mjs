#!/usr/bin/env node
/**
 * Latency of output items: from the agent's `writer.write` of an
 * item (its yield) to the moment the client's consumer receives it from
 * `for await`, p50/p99/max, for the demo method `count`.
 *
 *   node bench/latency.mjs                          # build first
 *   BENCH_LATENCY_ITEMS=5000 BENCH_ROUNDS=3 node bench/latency.mjs
 *   BENCH_SERVER_MODULE=/other/checkout/packages/server/dist/index.js node bench/latency.mjs
 *
 * The server runs in a forked process (`peer.mjs timed`): the embedded
 * server with SQLite at synchronous = FULL, whose `count` agent notes when it
 * writes each item. Both sides read `process.hrtime.bigint()`, the system's
 * monotonic clock, so the two processes' times compare directly. Every
 * output item is recorded durably before it is sent, so the figure includes
 * a commit (shared by the items that wait for the same group).
 *
 * Rows:
 *   no delay          — count N items as fast as the agent can; the consumer
 *                       reads at once. Items queue behind commits and the
 *                       socket: this is latency under full load.
 *   paced (1 ms)      — the agent sleeps 1 ms before each item (`delayMs` = 1):
 *                       the latency of an item on an idle pipeline.
 *   slow consumer     — no delay, and the consumer spends BENCH_SLOW_MS (2 ms)
 *                       on each item. Items wait in the output window and the
 *                       client's buffer: the figure is the queueing that flow
 *                       control allows, not a defect.
 * Each row runs once per round, in turn; percentiles are over all the
 * rounds' items together.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { createClient } from "@golem-stream/client";
import { availableParallelism } from "node:os";
import { bufferutilStatus, startPeer } from "./throughput.mjs";

const ITEMS = Number(process.env.BENCH_LATENCY_ITEMS ?? 5000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SLOW_MS = Number(process.env.BENCH_SLOW_MS ?? 2);
const SLOW_ITEMS = Math.min(ITEMS, Number(process.env.BENCH_SLOW_ITEMS ?? 1000));
const PACED_ITEMS = Math.min(ITEMS, Number(process.env.BENCH_PACED_ITEMS ?? 1000));

const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-latency-"));
// BENCH_SERVER_MODULE=<another build's packages/server/dist/index.js>: measure that server instead (before/after).
const serverModule = process.env.BENCH_SERVER_MODULE;
const server = await (serverModule === undefined ? startPeer("timed", dataDir) : startPeer("timed", dataDir, serverModule));
const client = createClient({ url: server.url, token: "t" });
const u32 = (value) => ({ kind: "u32", value });
const ctor = { kind: "record", value: { fields: [{ kind: "string", value: "bench" }] } };

/** One `count` invocation; resolves with the latencies of its items in milliseconds. */
async function countLatencies(to, delayMs, consumerMs) {
  await server.request("yields"); // drop anything earlier
  const received = new Map();
  const call = client.invoke({
    application: "demo",
    environment: "default",
    agentType: "echo",
    constructorParameters: ctor,
    method: "count",
    methodParameters: { kind: "record", value: { fields: [u32(to), u32(delayMs)] } },
  });
  const result = await call.result;
  for await (const item of result.streams[0]) {
    received.set(item.value, process.hrtime.bigint());
    if (consumerMs > 0) await sleep(consumerMs);
  }
  await call.finished;
  const yields = await server.request("yields");
  if (yields.length !== to || received.size !== to)
    throw new Error(`count ${to}: ${yields.length} yields, ${received.size} items received`);
  return yields.map(([value, at]) => Number(received.get(value) - BigInt(at)) / 1e6);
}

const rows = {
  "no delay": () => countLatencies(ITEMS, 0, 0),
  [`paced (agent sleeps 1 ms per item), ${PACED_ITEMS} items`]: () => countLatencies(PACED_ITEMS, 1, 0),
  [`slow consumer (${SLOW_MS} ms per item), ${SLOW_ITEMS} items`]: () => countLatencies(SLOW_ITEMS, 0, SLOW_MS),
};
await countLatencies(500, 0, 0); // warm up
const samples = {};
for (let round = 0; round < ROUNDS; round++) for (const [name, run] of Object.entries(rows)) (samples[name] ??= []).push(...(await run()));
await client.close?.();
await server.close();
rmSync(dataDir, { recursive: true, force: true });

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
console.log(
  `node ${process.version}, ${availableParallelism()} cores, bufferutil ${bufferutilStatus()}; client in this process, embedded server ` +
    `(SQLite synchronous=FULL) forked; ${ROUNDS} rounds; latency = the agent's writer.write of an item to the consumer's for-await receiving it`,
);
console.log(`count, ${ITEMS} u32 items unless said; server: ${serverModule ?? "this checkout"}`);
for (const [name, values] of Object.entries(samples)) {
  const sorted = values.sort((a, b) => a - b);
  const fmt = (ms) => `${ms.toFixed(2).padStart(8)} ms`;
  console.log(
    `  ${name.padEnd(52)} p50 ${fmt(percentile(sorted, 50))}  p99 ${fmt(percentile(sorted, 99))}  max ${fmt(sorted[sorted.length - 1])}  (${sorted.length} items)`,
  );
}
