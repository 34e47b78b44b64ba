#!/usr/bin/env node
/**
 * The fixed cost of an invocation: `tally` of one 64-byte item (and of BENCH_SMALL_ITEMS, 10 by
 * default), one invocation after another, each on its own WebSocket as the protocol has it, from
 * one client; then `tally` of one item from BENCH_CONCURRENCY (32) loops at once, what a node
 * takes from many callers. Prints the wall time of each invocation (from `invoke` to `finished`,
 * p50 and p99), invocations per second, and the CPU it cost the server (all its threads) and this
 * process, per invocation.
 *
 *   node bench/small-invocations.mjs                       # build first
 *   BENCH_SERVER_BEFORE=<other build>/packages/server/dist/index.js node bench/small-invocations.mjs
 *   BENCH_ROUNDS=7 BENCH_INVOCATIONS=300 node bench/small-invocations.mjs
 *
 * The server is the embedded one (SQLite at `synchronous = FULL`) in a forked `bench/peer.mjs`;
 * with BENCH_SERVER_BEFORE another build runs beside it, the two taking turns in every round, so
 * a change to the invocation's path is measured before and after in one run. Every durable step
 * of an invocation (the session, the input, the result, the finish) is a group commit and its
 * sync before the client hears of it, so the figure moves with the disk's sync time: compare
 * builds in one run, not runs.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient, inputStream } from "@golem-stream/client";
import { bufferutilStatus, demo, median, startPeer, tallied } from "./throughput.mjs";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const INVOCATIONS = Number(process.env.BENCH_INVOCATIONS ?? 200);
const SMALL = Number(process.env.BENCH_SMALL_ITEMS ?? 10);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const before = process.env.BENCH_SERVER_BEFORE;

const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-small-"));
const servers = [{ name: "this build", peer: await startPeer("server", join(dataDir, "here")) }];
if (before !== undefined) servers.push({ name: "other build", peer: await startPeer("server", join(dataDir, "before"), "files", before) });

const ITEM = "x".repeat(64);
/** Each row: items per invocation, and how many invocations run at once. */
const rows = [
  { items: 1, concurrency: 1 },
  { items: SMALL, concurrency: 1 },
  { items: 1, concurrency: CONCURRENCY },
];

/** One `tally` of `items` items through `client`, checked; its wall time in milliseconds. */
async function tallyOnce(client, items) {
  const began = performance.now();
  const call = client.invoke({
    ...demo,
    method: "tally",
    methodParameters: { kind: "record", value: { fields: [inputStream.strings(Array.from({ length: items }, () => ITEM))] } },
  });
  const result = await call.result;
  await call.finished;
  const took = performance.now() - began;
  tallied(items)(result);
  return took;
}

/** `count` invocations of `items` items, `concurrency` at a time; their milliseconds. */
async function tallies(client, items, concurrency, count) {
  const walls = [];
  let started = 0;
  const loop = async () => {
    while (started < count) {
      started++;
      walls.push(await tallyOnce(client, items));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  return walls;
}

/** Per server and row: every invocation's milliseconds, and each round's seconds and CPU per invocation. */
const results = servers.map(() => rows.map(() => ({ wall: [], seconds: [], serverCpu: [], clientCpu: [] })));
const clients = servers.map(({ peer }) => createClient({ url: peer.url, token: "t" }));
for (const client of clients) for (const { items, concurrency } of rows) await tallies(client, items, concurrency, 30);
for (let round = 0; round < ROUNDS; round++) {
  // Every other round the other order: a server that always runs second meets the disk still syncing.
  const order = round % 2 === 0 ? servers.map((_, i) => i) : servers.map((_, i) => servers.length - 1 - i);
  for (const index of order) {
    for (const [at, { items, concurrency }] of rows.entries()) {
      const row = results[index][at];
      const serverBefore = await servers[index].peer.cpu();
      const clientBefore = process.cpuUsage();
      const began = performance.now();
      row.wall.push(...(await tallies(clients[index], items, concurrency, INVOCATIONS)));
      row.seconds.push((performance.now() - began) / 1000);
      const serverAfter = await servers[index].peer.cpu();
      const client = process.cpuUsage(clientBefore);
      row.serverCpu.push((serverAfter.user + serverAfter.system - serverBefore.user - serverBefore.system) / INVOCATIONS / 1000);
      row.clientCpu.push((client.user + client.system) / INVOCATIONS / 1000);
    }
  }
}

const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};
console.log(
  `node ${process.version}, ${bufferutilStatus()}; ${ROUNDS} rounds of ${INVOCATIONS} invocations per row, one client; milliseconds`,
);
for (const [index, { name }] of servers.entries()) {
  for (const [at, { items, concurrency }] of rows.entries()) {
    const { wall, seconds, serverCpu, clientCpu } = results[index][at];
    const label = `tally of ${items} item${items === 1 ? "" : "s"}, ${concurrency === 1 ? "one at a time" : `${concurrency} at once`}, ${name}`;
    console.log(
      `  ${label.padEnd(50)} p50 ${percentile(wall, 50).toFixed(2)}  p99 ${percentile(wall, 99).toFixed(2)}` +
        `  ${Math.round(INVOCATIONS / median(seconds))} per second` +
        `  CPU per invocation: server ${median(serverCpu).toFixed(2)}, client ${median(clientCpu).toFixed(2)}`,
    );
  }
}
await Promise.all(servers.map(({ peer }) => peer.close()));
rmSync(dataDir, { recursive: true, force: true });
