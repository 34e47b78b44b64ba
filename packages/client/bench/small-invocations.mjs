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
import { measureSmallInvocations } from "./small-invocation-rows.mjs";
import { bufferutilStatus, startPeer } from "./throughput.mjs";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const INVOCATIONS = Number(process.env.BENCH_INVOCATIONS ?? 200);
const before = process.env.BENCH_SERVER_BEFORE;

const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-small-"));
const servers = [{ name: "this build", peers: [await startPeer("server", join(dataDir, "here"))] }];
if (before !== undefined)
  servers.push({ name: "other build", peers: [await startPeer("server", join(dataDir, "before"), "files", before)] });

console.log(
  `node ${process.version}, ${bufferutilStatus()}; ${ROUNDS} rounds of ${INVOCATIONS} invocations per row, one client; milliseconds`,
);
await measureSmallInvocations(servers, {
  rounds: ROUNDS,
  invocations: INVOCATIONS,
  small: Number(process.env.BENCH_SMALL_ITEMS ?? 10),
  concurrency: Number(process.env.BENCH_CONCURRENCY ?? 32),
});
await Promise.all(servers.flatMap(({ peers }) => peers.map((peer) => peer.close())));
rmSync(dataDir, { recursive: true, force: true });
