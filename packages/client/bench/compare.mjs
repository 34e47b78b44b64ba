#!/usr/bin/env node
/**
 * Before/after of the server's small-item path in one run (docs/performance.md,
 * How it is measured): raw `ws`, then `tally` and `reverse`
 * against this checkout's embedded server and against another build of
 * @golem-stream/server, alternating in every round; the client is this
 * checkout's in both. Also `digest` of BENCH_MIB 1 MiB batches (upload), and
 * `blobs` of BENCH_MIB items of 1 MiB (download: binary output).
 *
 *   node bench/compare.mjs /path/to/other/checkout/packages/server/dist/index.js
 *   node bench/compare.mjs <other build> <this build>   # two builds, neither this checkout's
 *   BENCH_ITEMS=50000 BENCH_ROUNDS=5 BENCH_MIB=64 node bench/compare.mjs <module>
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { benchSizes, createMeasurements, digestOf, header, rawWs, startPeer, tallied, tallyOf, viaClient } from "./throughput.mjs";

const [other, thisBuild] = process.argv.slice(2);
if (other === undefined) {
  console.error("usage: compare.mjs <path of another build's packages/server/dist/index.js>");
  process.exit(2);
}
const { totalMib: TOTAL_MIB, itemCount: ITEMS, rounds: ROUNDS, batches, items } = benchSizes();
const bench = createMeasurements();
const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-compare-"));
const raw = await startPeer("raw");
const here = await startPeer("server", join(dataDir, "here"), ...(thisBuild === undefined ? [] : ["files", thisBuild]));
const there = await startPeer("server", join(dataDir, "there"), "files", other);

const rows = {
  u8Raw: () => rawWs(raw.url, batches, true),
  u8Other: () => bench.withCpu("u8Other", there, () => viaClient(there.url, "digest", digestOf(batches))),
  u8Here: () => bench.withCpu("u8Here", here, () => viaClient(here.url, "digest", digestOf(batches))),
  strRaw: () => rawWs(raw.url, items, false),
  tallyOther: () => bench.withCpu("tallyOther", there, () => viaClient(there.url, "tally", tallyOf(items), tallied(ITEMS))),
  tallyHere: () => bench.withCpu("tallyHere", here, () => viaClient(here.url, "tally", tallyOf(items), tallied(ITEMS))),
  reverseOther: () => bench.withCpu("reverseOther", there, () => viaClient(there.url, "reverse", tallyOf(items))),
  reverseHere: () => bench.withCpu("reverseHere", here, () => viaClient(here.url, "reverse", tallyOf(items))),
  blobsOther: () => bench.withCpu("blobsOther", there, () => viaClient(there.url, "blobs", blobsOf(TOTAL_MIB), received(TOTAL_MIB))),
  blobsHere: () => bench.withCpu("blobsHere", here, () => viaClient(here.url, "blobs", blobsOf(TOTAL_MIB), received(TOTAL_MIB))),
};
/** `blobs(count, 1 MiB)`: the demo agent's deterministic binary items. */
const blobsOf = (count) => [
  { kind: "u32", value: count },
  { kind: "u32", value: 1024 * 1024 },
];
/** The result must carry the blob stream (viaClient reads it to its end). */
const received = (count) => (result) => {
  if (result.kind !== "value" || result.streams.length !== 1) throw new Error(`blobs(${count}) returned no stream`);
};
const warm = items.slice(0, 2000);
for (const server of [here, there]) {
  await viaClient(server.url, "tally", tallyOf(warm), tallied(warm.length));
  await viaClient(server.url, "digest", digestOf(batches.slice(0, 4)));
  await viaClient(server.url, "blobs", blobsOf(4), received(4));
}
await bench.runRounds(rows, ROUNDS);
await Promise.all([raw.close(), here.close(), there.close()]);
rmSync(dataDir, { recursive: true, force: true });

const { row } = bench;
console.log(header(ROUNDS, `${thisBuild ?? "this checkout's server"} against ${other}`));
console.log(`stream<u8>, ${TOTAL_MIB} packed batches of 1 MiB`);
console.log(row("  raw ws", "u8Raw", "u8Raw", TOTAL_MIB, "MiB/s"));
console.log(row("  digest, other build", "u8Other", "u8Raw", TOTAL_MIB, "MiB/s"));
console.log(row("  digest, this checkout", "u8Here", "u8Raw", TOTAL_MIB, "MiB/s"));
console.log(row("  blobs (download), other build", "blobsOther", "u8Raw", TOTAL_MIB, "MiB/s"));
console.log(row("  blobs (download), this checkout", "blobsHere", "u8Raw", TOTAL_MIB, "MiB/s"));
console.log(row("  blobs, this checkout / other build", "blobsHere", "blobsOther", TOTAL_MIB, "MiB/s"));
console.log(`stream<string>, ${ITEMS} items of 64 bytes`);
console.log(row("  raw ws", "strRaw", "strRaw", ITEMS, "items/s"));
console.log(row("  tally, other build", "tallyOther", "strRaw", ITEMS, "items/s"));
console.log(row("  tally, this checkout", "tallyHere", "strRaw", ITEMS, "items/s"));
console.log(row("  reverse, other build", "reverseOther", "strRaw", ITEMS, "items/s"));
console.log(row("  reverse, this checkout", "reverseHere", "strRaw", ITEMS, "items/s"));
console.log(row("  tally, this checkout / other build", "tallyHere", "tallyOther", ITEMS, "items/s"));
console.log(row("  reverse, this checkout / other build", "reverseHere", "reverseOther", ITEMS, "items/s"));
