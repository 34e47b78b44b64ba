#!/usr/bin/env node
/**
 * Bytes the server allocates per 64-byte `tally` (or, with BENCH_METHOD=reverse, `reverse`) item, by stage of the small-item path
 * (bench/stages.mjs), and the allocation sites that make most of them. Garbage is what the
 * young-generation collector pays for; unlike a rate or a CPU time it hardly moves with the load
 * of a shared machine, so a change that removes per-item work can be measured here when the
 * throughput benches cannot tell it from their noise (docs/performance.md, *Per-item budget*).
 *
 *   node bench/allocations.mjs                       # this checkout's embedded server
 *   node bench/allocations.mjs <other build>/packages/server/dist/index.js
 *   BENCH_ITEMS=50000 TOP=25 node bench/allocations.mjs
 *   BENCH_METHOD=reverse node bench/allocations.mjs   # the round trip: each item also comes back as an output item
 *   BENCH_SIDE=client node bench/allocations.mjs      # the client's bytes (this process), not the server's
 *
 * The server runs in a forked bench/peer.mjs; its inspector (or, with BENCH_SIDE=client, this
 * process's) samples every allocation (one sample per KiB on average, objects already collected
 * included) while the client sends the items.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { STAGES } from "./stages.mjs";
import { benchSizes, startPeer, tallied, tallyOf, viaClient } from "./throughput.mjs";

const build = process.argv[2];
/** `tally` (one way, the default) or `reverse` (each item also recorded, committed and sent back). */
const method = process.env.BENCH_METHOD ?? "tally";
if (method !== "tally" && method !== "reverse") throw new Error(`BENCH_METHOD must be tally or reverse, not ${method}`);
const { itemCount, items } = benchSizes({ items: 50000 });
const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-allocations-"));
const server = await startPeer("server", dataDir, ...(build === undefined ? [] : ["files", build]));
const warm = items.slice(0, 2000);
await viaClient(server.url, method, tallyOf(warm), method === "tally" ? tallied(warm.length) : undefined);
/** Whose allocations are sampled: the server's (default) or this process's, the client's. */
const side = process.env.BENCH_SIDE ?? "server";
if (side !== "server" && side !== "client") throw new Error(`BENCH_SIDE must be server or client, not ${side}`);
const sampler = side === "server" ? server : await clientSampler();
await sampler.request("allocations-start");
await viaClient(server.url, method, tallyOf(items), method === "tally" ? tallied(itemCount) : undefined);
const profile = await sampler.request("allocations-stop");
await server.close();
rmSync(dataDir, { recursive: true, force: true });

// Each node's own bytes go to its stage: the first frame, from it outwards, whose script a rule names.
const stages = new Map();
const sites = new Map();
let total = 0;
const walk = (node, outer) => {
  const { url, functionName, lineNumber } = node.callFrame;
  const stage = STAGES.find(([, match]) => match(url, functionName))?.[0] ?? outer;
  if (node.selfSize > 0) {
    total += node.selfSize;
    stages.set(stage, (stages.get(stage) ?? 0) + node.selfSize);
    const site = `${functionName || "(anonymous)"} ${url.replace(/^.*\/(packages|node_modules)\//, "")}:${lineNumber + 1}`;
    sites.set(site, (sites.get(site) ?? 0) + node.selfSize);
  }
  for (const child of node.children) walk(child, stage);
};
walk(profile.head, "other");
const perItem = (bytes) => `${(bytes / itemCount).toFixed(0).padStart(6)} B/item`;
console.log(
  `${side === "client" ? "this checkout's client" : (build ?? "this checkout's server")}: ${itemCount} ${method} items of 64 bytes; allocated ${perItem(total)} (sampled, collected objects included)`,
);
for (const [stage, bytes] of [...stages].sort((a, b) => b[1] - a[1])) console.log(`  ${stage.padEnd(44)} ${perItem(bytes)}`);
console.log("  sites");
for (const [site, bytes] of [...sites].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.TOP ?? 15)))
  console.log(`    ${perItem(bytes)}  ${site}`);

/** This process's heap sampler, asked as a peer is (`request`), with the options `bench/peer.mjs` uses. */
async function clientSampler() {
  const { Session } = await import("node:inspector/promises");
  const session = new Session();
  session.connect();
  const options = { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true };
  return {
    request: async (name) =>
      name === "allocations-start"
        ? session.post("HeapProfiler.startSampling", options)
        : (await session.post("HeapProfiler.stopSampling")).profile,
  };
}
