#!/usr/bin/env node
/**
 * Where a durable `digest` batch waits: the time from the
 * server's `acceptInput` of each 1 MiB batch to its durability (what the ACK
 * waits for), the group commits' latency and size, and the batches'
 * inter-arrival times, beside the row's rate.
 *
 *   node bench/digest-latency.mjs                     # the server's data in the OS's temporary directory
 *   BENCH_SERVE_DIR=/dev/shm node bench/digest-latency.mjs   # on tmpfs: no disk in the latency
 *   BENCH_MIB=64 BENCH_ROUNDS=3 BENCH_WINDOW_MIB=32 node bench/digest-latency.mjs
 *
 * With the client's window of unacknowledged input (default 8 MiB), a
 * batch's accept-to-durable latency bounds the rate: about window / latency
 * (Little's law), whatever the CPU could do. The receiver is the client
 * bench's forked peer (`bench/peer.mjs store`) on the SQLite store this
 * module makes (`createStore`, below), which times every `acceptInput`.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { benchSizes, digestOf, median, startPeer, viaClient } from "./throughput.mjs";

/** Loaded by the peer: the SQLite store, `acceptInput` timed; the figures go to `reportPath` at exit. */
export async function createStore({ dataDir, reportPath }) {
  const { SqliteSessionStore } = await import("@golem-stream/server");
  const store = new SqliteSessionStore({ dataDir });
  const latencies = [];
  const gaps = [];
  const groups = [];
  let lastArrival = 0;
  const accept = store.acceptInput.bind(store);
  store.acceptInput = (chunk, introduced) => {
    const at = performance.now();
    if (lastArrival > 0 && chunk.data.length >= 1 << 20) gaps.push(at - lastArrival);
    if (chunk.data.length >= 1 << 20) lastArrival = at;
    const accepted = accept(chunk, introduced);
    if (chunk.data.length >= 1 << 20)
      accepted.then(
        () => latencies.push(performance.now() - at),
        () => {},
      );
    return accepted;
  };
  store.observeCommits((seconds, writes) => groups.push([seconds * 1000, writes]));
  // How busy the server's event loop was from the first batch to the last: near 1, its main thread is the bound.
  let loopAtFirst;
  let loopAtLast;
  const timed = store.acceptInput;
  store.acceptInput = (chunk, introduced) => {
    loopAtFirst ??= performance.eventLoopUtilization();
    loopAtLast = performance.eventLoopUtilization();
    return timed(chunk, introduced);
  };
  const report = () =>
    writeFileSync(
      reportPath,
      JSON.stringify({
        latencies,
        gaps,
        commitMs: groups.map(([ms]) => ms),
        writes: groups.map(([, w]) => w),
        loopBusy: loopAtFirst === undefined ? undefined : performance.eventLoopUtilization(loopAtLast, loopAtFirst).utilization,
      }),
    );
  process.on("exit", report);
  process.on("disconnect", report);
  return { store };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { totalMib, rounds, batches } = benchSizes({ rounds: 3 });
  const windowMib = Number(process.env.BENCH_WINDOW_MIB ?? 8);
  const root = mkdtempSync(join(process.env.BENCH_SERVE_DIR ?? tmpdir(), "golem-stream-digest-latency-"));
  const reportPath = join(root, "report.json");
  const peer = await startPeer(
    "store",
    join(root, "keys"),
    fileURLToPath(import.meta.url),
    JSON.stringify({ dataDir: join(root, "db"), reportPath }),
  );
  const seconds = [];
  try {
    await viaClient(peer.url, "digest", digestOf(batches.slice(0, 4)));
    for (let round = 0; round < rounds; round++) {
      seconds.push(await viaClient(peer.url, "digest", digestOf(batches), undefined, { maxUnackedInputBytes: windowMib * 1024 * 1024 }));
    }
  } finally {
    await peer.close();
  }
  const { latencies, gaps, commitMs, writes, loopBusy } = JSON.parse(readFileSync(reportPath, "utf8"));
  rmSync(root, { recursive: true, force: true });
  const pct = (values, q) => {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted.length === 0 ? "-" : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))].toFixed(1);
  };
  const line = (label, values) => `  ${label.padEnd(44)} p10 ${pct(values, 0.1)}  p50 ${pct(values, 0.5)}  p90 ${pct(values, 0.9)}`;
  console.log(
    `digest of ${totalMib} × 1 MiB, ${rounds} rounds, client window ${windowMib} MiB, server data in ${process.env.BENCH_SERVE_DIR ?? tmpdir()}`,
  );
  console.log(`  rate (median round)                          ${(totalMib / median(seconds)).toFixed(0)} MiB/s`);
  console.log(line("1 MiB batch, acceptInput to durable (ms)", latencies));
  console.log(line("1 MiB batch inter-arrival (ms)", gaps));
  console.log(line("group commit, payloads + commit (ms)", commitMs));
  console.log(line("writes per group commit", writes));
  console.log(`  server event loop busy, first batch to last (all rounds)   ${loopBusy === undefined ? "-" : loopBusy.toFixed(2)}`);
}
