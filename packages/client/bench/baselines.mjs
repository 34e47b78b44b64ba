#!/usr/bin/env node
/**
 * golem-stream beside what a user would pick instead, in the same rounds (docs/performance.md,
 * *Against the alternatives*):
 *
 *   - the hand-written durable peer (bench/durable-peer.mjs + `durableWs`): one `ws` message per
 *     item, each appended to a file (and hashed when binary), one `writev` and one `fdatasync` per
 *     group, every byte acknowledged once synced, at most 16 MiB unacknowledged;
 *   - Durable Streams (`@durable-streams/server` file-backed, `@durable-streams/client`'s
 *     `IdempotentProducer`: batched appends over HTTP);
 *   - raw `ws` one way (no durability), the ceiling of a socket; and for small items once more with
 *     the frames of a burst sharing socket writes, as the client's do: what `ws` alone costs per
 *     message when the sender is not the slower side;
 *   - golem-stream's `digest` once more with the peer's window (16 MiB unacknowledged instead of the
 *     client's default 8), so that the two differ only in the work per byte.
 *
 *   node bench/baselines.mjs                          # after `pnpm build`
 *   BENCH_ROUNDS=5 BENCH_ITEMS=50000 BENCH_MIB=64 node bench/baselines.mjs
 *   BENCH_ONLY=strTally node --cpu-prof --cpu-prof-dir=/tmp/prof bench/baselines.mjs
 *   BENCH_SERVER_BEFORE=<other build>/packages/server/dist/index.js node bench/baselines.mjs
 *                     # adds that build's tally, reverse and digest rows to the same rounds (before/after)
 *   BENCH_PEER_DISCARD=1 node bench/baselines.mjs     # the peer deletes each log at its connection's close
 *
 * Every row runs in separate processes (sender here, receiver forked from bench/peer.mjs), every
 * round runs every row once, in reverse order every other round; ratios are medians over the
 * rounds of each round's ratio, so a slow moment of the shared machine favours no row. The
 * end prints the targets: 64 B `tally` against Durable Streams (>= 1.0x) and against the durable
 * peer (>= 0.6x), 64 B `reverse` round trip against raw `ws` one way (>= 0.25x), 1 MiB `digest`
 * against the durable peer (>= 0.9x).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { durableStreams, durableWs } from "./baseline-clients.mjs";
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
  viaClient,
} from "./throughput.mjs";

const { totalMib: TOTAL_MIB, itemCount: ITEMS, rounds: ROUNDS, batches, items } = benchSizes();
const bench = createMeasurements();
const { withCpu } = bench;

const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-baselines-"));
const raw = await startPeer("raw");
const durable = await startPeer("durable", dataDir);
const ds = await startPeer("ds", join(dataDir, "ds"));
const server = await startPeer("server", join(dataDir, "server"));
const beforeBuild = process.env.BENCH_SERVER_BEFORE;
const before = beforeBuild === undefined ? undefined : await startPeer("server", join(dataDir, "before"), "files", beforeBuild);

const PEER_WINDOW = { maxUnackedInputBytes: 16 * 1024 * 1024 };
const rows = {
  strRaw: () => withCpu("strRaw", raw, () => rawWs(raw.url, items, false)),
  strRawBatched: () => withCpu("strRawBatched", raw, () => rawWs(raw.url, items, false, { batched: true })),
  strDurable: () => withCpu("strDurable", durable, () => durableWs(durable.url, items, false)),
  strDs: () => withCpu("strDs", ds, () => durableStreams(ds.url, items, false)),
  strTally: () => withCpu("strTally", server, () => viaClient(server.url, "tally", tallyOf(items), tallied(ITEMS))),
  strReverse: () => withCpu("strReverse", server, () => viaClient(server.url, "reverse", tallyOf(items))),
  u8Raw: () => withCpu("u8Raw", raw, () => rawWs(raw.url, batches, true)),
  u8Durable: () => withCpu("u8Durable", durable, () => durableWs(durable.url, batches, true)),
  u8Ds: () => withCpu("u8Ds", ds, () => durableStreams(ds.url, batches, true)),
  u8Server: () => withCpu("u8Server", server, () => viaClient(server.url, "digest", digestOf(batches))),
  // The client's default window is 8 MiB unacknowledged per stream (decisions-v1), the peer's 16:
  // this row gives the client the peer's window, so the two differ only in the work per byte.
  u8ServerWide: () => withCpu("u8ServerWide", server, () => viaClient(server.url, "digest", digestOf(batches), undefined, PEER_WINDOW)),
};
if (before !== undefined) {
  rows.strTallyBefore = () => withCpu("strTallyBefore", before, () => viaClient(before.url, "tally", tallyOf(items), tallied(ITEMS)));
  rows.strReverseBefore = () => withCpu("strReverseBefore", before, () => viaClient(before.url, "reverse", tallyOf(items)));
  rows.u8ServerBefore = () => withCpu("u8ServerBefore", before, () => viaClient(before.url, "digest", digestOf(batches)));
}

// Warm up every path that will run once (JIT, files, SQLite), then measure. With BENCH_ONLY only
// those rows' paths, so that a profile holds little but the rows it is taken for.
const only = process.env.BENCH_ONLY?.split(",");
const runs = (...names) => only === undefined || names.some((name) => only.includes(name));
const warmItems = items.slice(0, 2000);
const warmBatches = batches.slice(0, 4);
if (runs("strRaw", "u8Raw", "strRawBatched")) await rawWs(raw.url, warmItems, false);
if (runs("strDurable")) await durableWs(durable.url, warmItems, false);
if (runs("u8Durable")) await durableWs(durable.url, warmBatches, true);
if (runs("strDs")) await durableStreams(ds.url, warmItems, false);
if (runs("u8Ds")) await durableStreams(ds.url, warmBatches, true);
for (const [peer, suffix] of before === undefined
  ? [[server, ""]]
  : [
      [server, ""],
      [before, "Before"],
    ]) {
  if (runs(`strTally${suffix}`)) await viaClient(peer.url, "tally", tallyOf(warmItems), tallied(warmItems.length));
  if (runs(`strReverse${suffix}`)) await viaClient(peer.url, "reverse", tallyOf(warmItems));
  if (runs(`u8Server${suffix}`)) await viaClient(peer.url, "digest", digestOf(warmBatches));
}
if (runs("u8ServerWide")) await viaClient(server.url, "digest", digestOf(warmBatches), undefined, PEER_WINDOW);

await bench.runRounds(rows, ROUNDS);
await Promise.all([raw.close(), durable.close(), ds.close(), server.close(), before?.close()]);
rmSync(dataDir, { recursive: true, force: true });

const { row } = bench;
console.log(header(ROUNDS, "durable rows sync before they acknowledge (golem-stream: SQLite synchronous=FULL)"));
console.log(`stream<string>, ${ITEMS} items of 64 bytes (ratios to raw ws one way)`);
console.log(row("  raw ws one way", "strRaw", "strRaw", ITEMS, "items/s"));
console.log(row("  raw ws one way, writes batched as the client's", "strRawBatched", "strRaw", ITEMS, "items/s"));
console.log(row("  hand-written durable peer", "strDurable", "strRaw", ITEMS, "items/s"));
console.log(row("  Durable Streams (file-backed, batched)", "strDs", "strRaw", ITEMS, "items/s"));
console.log(row("  golem-stream tally (one way)", "strTally", "strRaw", ITEMS, "items/s"));
console.log(row("  golem-stream reverse (round trip)", "strReverse", "strRaw", ITEMS, "items/s"));
if (before !== undefined) {
  console.log(row("    tally, BENCH_SERVER_BEFORE", "strTallyBefore", "strRaw", ITEMS, "items/s"));
  console.log(row("    reverse, BENCH_SERVER_BEFORE", "strReverseBefore", "strRaw", ITEMS, "items/s"));
}
console.log(`stream<u8>, ${TOTAL_MIB} batches of 1 MiB (ratios to raw ws one way)`);
console.log(row("  raw ws one way", "u8Raw", "u8Raw", TOTAL_MIB, "MiB/s"));
console.log(row("  hand-written durable peer (SHA-256)", "u8Durable", "u8Raw", TOTAL_MIB, "MiB/s"));
console.log(row("  Durable Streams (file-backed, batched)", "u8Ds", "u8Raw", TOTAL_MIB, "MiB/s"));
console.log(row("  golem-stream digest", "u8Server", "u8Raw", TOTAL_MIB, "MiB/s"));
console.log(row("  golem-stream digest, the peer's 16 MiB window", "u8ServerWide", "u8Raw", TOTAL_MIB, "MiB/s"));
if (before !== undefined) console.log(row("    digest, BENCH_SERVER_BEFORE", "u8ServerBefore", "u8Raw", TOTAL_MIB, "MiB/s"));

const ratioOf = (name, base) => {
  const times = bench.seconds[name];
  const baseTimes = bench.seconds[base];
  if (times === undefined || baseTimes === undefined) return undefined;
  const ratios = times.map((t, round) => baseTimes[round] / t);
  return { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios) };
};
console.log(`targets (bufferutil ${bufferutilStatus()}; ${availableParallelism()} cores)`);
for (const [label, name, base, target] of [
  ["  64 B tally / Durable Streams", "strTally", "strDs", 1.0],
  ["  64 B tally / hand-written durable peer", "strTally", "strDurable", 0.6],
  ["  64 B reverse round trip / raw ws one way", "strReverse", "strRaw", 0.25],
  ["  1 MiB digest / hand-written durable peer", "u8Server", "u8Durable", 0.9],
  ["  1 MiB digest / Durable Streams", "u8Server", "u8Ds", undefined],
  ["  64 B raw ws, writes batched / Durable Streams", "strRawBatched", "strDs", undefined],
  ["  1 MiB digest, 16 MiB window / durable peer", "u8ServerWide", "u8Durable", undefined],
  ...(before === undefined
    ? []
    : [
        ["  before: 64 B tally / Durable Streams", "strTallyBefore", "strDs", undefined],
        ["  before: 64 B tally / hand-written durable peer", "strTallyBefore", "strDurable", undefined],
        ["  before: 64 B reverse / raw ws one way", "strReverseBefore", "strRaw", undefined],
        ["  before: 1 MiB digest / hand-written durable peer", "u8ServerBefore", "u8Durable", undefined],
        ["  tally / tally before", "strTally", "strTallyBefore", undefined],
        ["  reverse / reverse before", "strReverse", "strReverseBefore", undefined],
      ]),
]) {
  const ratio = ratioOf(name, base);
  const verdict =
    target === undefined || ratio === undefined ? "" : `, target >= ${target}x: ${ratio.median >= target ? "met" : "NOT met"}`;
  console.log(
    `${label.padEnd(48)} ${ratio === undefined ? "(not run)" : `${ratio.median.toFixed(2)}x (rounds ${ratio.min.toFixed(2)}–${ratio.max.toFixed(2)})${verdict}`}`,
  );
}
