#!/usr/bin/env node
/**
 * Throughput of @golem-stream/client, printed beside raw `ws`
 * moving the same payloads over loopback in the same run, as ratios (no
 * absolute targets in tests; this is where speed is measured).
 *
 *   node bench/run.mjs            # after `npx tsc -p tsconfig.json` in every package
 *   BENCH_MIB=64 BENCH_ITEMS=50000 BENCH_ROUNDS=5 node bench/run.mjs
 *   BENCH_ONLY=strTally node --cpu-prof bench/run.mjs   # the forked peers inherit --cpu-prof
 *   BENCH_DEBUG=1 node bench/run.mjs                     # also prints every round's seconds
 *
 * Method (the shared pieces are in bench/throughput.mjs). The sending side (the raw `ws` client, or @golem-stream/client)
 * runs in this process; the receiving side runs in a child process
 * (`bench/peer.mjs`, forked), for the baseline and the protocol rows alike.
 * A deployment runs client and server in different processes, usually on
 * different machines; running both in one event loop would add their costs
 * on one core and flatter nobody fairly (the bare `ws` baseline then pays
 * twice too, but it is much cheaper per message). On a 2-core machine each
 * side gets about one core. The rows are measured in rounds, each round
 * running every row once in turn; a row's ratio is the median over the
 * rounds of its ratio to the raw row of the same round, and its rate the
 * median rate, so a slow moment of a shared machine favours no row.
 *
 * Rows:
 *   raw ws            — the client sends N messages of the same payload (1 MiB
 *                       binary, or the 64-byte string as a text message); the
 *                       peer counts them and replies once at the end.
 *   client, ack peer  — the full client runtime (codec, feeder, unacked
 *                       buffer, ACK handling) against a minimal protocol peer
 *                       that decodes strictly and ACKs every item at once.
 *   client + server   — the embedded server with its SQLite store at
 *                       synchronous = FULL: `digest` for u8 and `tally` for
 *                       strings (both one way: the result is one record), and
 *                       `reverse` (round trip: every item comes back as its
 *                       own outputStreamItem with its own cursor token).
 *   the same, payloads in SQLite pages
 *                     — `digest` against a second embedded server with
 *                       `payloadFileThreshold: Infinity` (every batch written
 *                       into SQLite's pages, as before payload files).
 *
 *   disk              — 1 MiB appends to a file, each fdatasync'd: the disk's own
 *                       ceiling for a durable `digest`. Per round the lower of
 *                       it and raw ws is the durable bound `digest` is also
 *                       compared with; the report ends with the targets
 *                       (docs/performance.md).
 *
 * The u8 rows also print the receiver's CPU per MiB (user and system, all its
 * threads, medians over the rounds): on a shared machine it moves less than
 * wall time. Optional native `bufferutil`, when installed, makes `ws` mask and
 * unmask in C and moves the raw row far more than the protocol rows; see
 * docs/performance.md. The PostgreSQL and cluster rows are
 * packages/store-postgres/bench/run.mjs (the same method, imported).
 */
import { closeSync, fdatasyncSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import {
  benchSizes,
  bufferutilStatus,
  createMeasurements,
  digestOf,
  header,
  median,
  rawWs,
  startPeer,
  tallied,
  tallyOf,
  time,
  viaClient,
} from "./throughput.mjs";

const { totalMib: TOTAL_MIB, itemCount: ITEMS, rounds: ROUNDS, batches, items } = benchSizes();
const bench = createMeasurements();
const { withCpu } = bench;

const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-bench-"));
const raw = await startPeer("raw");
const peer = await startPeer("ack");
const server = await startPeer("server", join(dataDir, "files"));
const inlineServer = await startPeer("server", join(dataDir, "inline"), "inline");

/**
 * The disk's own ceiling for a durable `digest`: append the same 1 MiB batches to one file,
 * `fdatasync` after each (what the store does per payload file append, without anything else).
 * A fresh file per round, in the data directory the servers use.
 */
let diskRound = 0;
function syncedAppends(count) {
  const path = join(dataDir, `disk-${diskRound++}.bin`);
  const fd = openSync(path, "a");
  return time(async () => {
    for (let i = 0; i < count; i++) {
      writeSync(fd, batches[i]);
      fdatasyncSync(fd);
    }
  }).finally(() => (closeSync(fd), rmSync(path)));
}

const rows = {
  u8Disk: () => syncedAppends(TOTAL_MIB),
  u8Raw: () => withCpu("u8Raw", raw, () => rawWs(raw.url, batches, true)),
  u8Peer: () => withCpu("u8Peer", peer, () => viaClient(peer.url, "digest", digestOf(batches))),
  u8Server: () => withCpu("u8Server", server, () => viaClient(server.url, "digest", digestOf(batches))),
  u8Inline: () => withCpu("u8Inline", inlineServer, () => viaClient(inlineServer.url, "digest", digestOf(batches))),
  strRaw: () => withCpu("strRaw", raw, () => rawWs(raw.url, items, false)),
  strPeer: () => withCpu("strPeer", peer, () => viaClient(peer.url, "tally", tallyOf(items))),
  strTally: () => withCpu("strTally", server, () => viaClient(server.url, "tally", tallyOf(items), tallied(ITEMS))),
  strReverse: () => withCpu("strReverse", server, () => viaClient(server.url, "reverse", tallyOf(items))),
};

// Warm up JIT and SQLite once, then measure.
await rawWs(raw.url, batches.slice(0, 4), true);
const warmItems = items.slice(0, 2000); // fewer when BENCH_ITEMS is smaller
await rawWs(raw.url, warmItems, false);
await viaClient(peer.url, "digest", digestOf(batches.slice(0, 4)));
await viaClient(server.url, "digest", digestOf(batches.slice(0, 4)));
await viaClient(inlineServer.url, "digest", digestOf(batches.slice(0, 4)));
await viaClient(server.url, "tally", tallyOf(warmItems), tallied(warmItems.length));
await viaClient(server.url, "reverse", tallyOf(warmItems));

// BENCH_ONLY=strTally,strPeer runs only those rows (for profiling).
await bench.runRounds(rows, ROUNDS);

await Promise.all([raw.close(), peer.close(), server.close(), inlineServer.close()]);
rmSync(dataDir, { recursive: true, force: true });

// Per round, the lower of raw ws and the disk's synced appends (the longer time) is the durable ceiling.
if (bench.seconds.u8Raw !== undefined && bench.seconds.u8Disk !== undefined)
  bench.seconds.u8Bound = bench.seconds.u8Raw.map((raw, round) => Math.max(raw, bench.seconds.u8Disk[round]));

const { row } = bench;
console.log(header(ROUNDS, "embedded server with SQLite synchronous=FULL (its default)"));
console.log(`stream<u8>, ${TOTAL_MIB} packed batches of 1 MiB, one way`);
console.log(row("  raw ws", "u8Raw", "u8Raw", TOTAL_MIB, "MiB/s"));
console.log(row("  disk: 1 MiB appends, each fdatasync'd", "u8Disk", "u8Raw", TOTAL_MIB, "MiB/s"));
console.log(row("  lower of the two, per round (durable bound)", "u8Bound", "u8Bound", TOTAL_MIB, "MiB/s"));
console.log(row("  client, ack-only peer", "u8Peer", "u8Raw", TOTAL_MIB, "MiB/s"));
console.log(row("  client + server + SQLite (digest)", "u8Server", "u8Raw", TOTAL_MIB, "MiB/s"));
console.log(row("    the same, payloads in SQLite pages", "u8Inline", "u8Raw", TOTAL_MIB, "MiB/s"));
console.log(row("  digest against the durable bound", "u8Server", "u8Bound", TOTAL_MIB, "MiB/s"));
console.log(`stream<string>, ${ITEMS} items of 64 bytes`);
console.log(row("  raw ws", "strRaw", "strRaw", ITEMS, "items/s"));
console.log(row("  client, ack-only peer (one way)", "strPeer", "strRaw", ITEMS, "items/s"));
console.log(row("  client + server + SQLite (tally, one way)", "strTally", "strRaw", ITEMS, "items/s"));
console.log(row("  client + server + SQLite (reverse, round trip)", "strReverse", "strRaw", ITEMS, "items/s"));

// The targets (docs/performance.md): medians of the per-round ratios, baselines from the same round.
const ratioOf = (name, base) => {
  const times = bench.seconds[name];
  const baseTimes = bench.seconds[base];
  return times === undefined || baseTimes === undefined ? undefined : median(times.map((t, round) => baseTimes[round] / t));
};
console.log(`targets (bufferutil ${bufferutilStatus()})`);
for (const [label, name, base, target] of [
  ["  durable digest / lower of raw ws and disk", "u8Server", "u8Bound", 0.9],
  ["  tally (64-byte items) / raw ws messages", "strTally", "strRaw", 0.4],
  ["  reverse (round trip) / raw ws messages", "strReverse", "strRaw", 0.2],
]) {
  const ratio = ratioOf(name, base);
  const ceiling = bench.cpuCeiling(name, base);
  const ceilingText = ceiling === undefined ? "" : `; CPU ceiling on ${availableParallelism()} cores ${ceiling.toFixed(2)}x`;
  console.log(
    `${label.padEnd(48)} ${ratio === undefined ? "(not run)" : `${ratio.toFixed(2)}x, target >= ${target}x: ${ratio >= target ? "met" : "NOT met"}${ceilingText}`}`,
  );
}
