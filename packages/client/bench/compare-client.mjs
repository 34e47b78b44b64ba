#!/usr/bin/env node
/**
 * Before/after of the client's small-item path in one run: this checkout's
 * @golem-stream/client against another build of it, alternating in every
 * round, each sending the same 64-byte strings
 * - one way, to the same ACK-only peer (`bench/peer.mjs ack`, forked), beside raw `ws`;
 * - one way, to the same embedded server (`tally`, durable: its ACKs wait for commits);
 * - round trip (`reverse`: every item comes back), to the same embedded server
 *   (`bench/peer.mjs server`, this checkout's server, forked);
 * - durable `digest` of BENCH_MIB (default 64) 1 MiB u8 batches, to that server,
 *   beside raw `ws` one way.
 * The far end is the same for both builds, so the difference is the clients'.
 * Besides throughput it prints the sending process's CPU per item (the client's own cost, which on
 * a machine whose cores the server shares is what the client takes from it), median over the
 * rounds, and the median of each round's ratio other/this.
 *
 *   node bench/compare-client.mjs /path/to/other/checkout/packages/client/dist/index.js
 *   BENCH_ITEMS=50000 BENCH_ROUNDS=8 node bench/compare-client.mjs <module>
 *   BENCH_ONLY=strRaw,other,here node bench/compare-client.mjs <module>   # one way only
 *   BENCH_ONLY=binRaw,otherDigest,hereDigest node bench/compare-client.mjs <module>   # digest only
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import * as here from "@golem-stream/client";
import { benchSizes, createMeasurements, demo, header, median, rawWs, startPeer, time } from "./throughput.mjs";

const otherPath = process.argv[2];
if (otherPath === undefined) {
  console.error("usage: compare-client.mjs <path of another build's packages/client/dist/index.js>");
  process.exit(2);
}
const other = await import(pathToFileURL(otherPath).href);
const { itemCount: ITEMS, rounds: ROUNDS, items, totalMib: MIBS, batches } = benchSizes();
const bench = createMeasurements();
const { withCpu } = bench;
const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-compare-client-"));
const peer = await startPeer("ack");
const raw = await startPeer("raw");
const server = await startPeer("server", join(dataDir, "files"));

/** `method` over the items through one client build; a returned stream is read to its end. */
const invoke = (lib, url, method, list) => {
  const client = lib.createClient({ url, token: "t" });
  return time(async () => {
    const call = client.invoke({
      ...demo,
      method,
      methodParameters: { kind: "record", value: { fields: [lib.inputStream.strings(list)] } },
    });
    const result = await call.result;
    if (result.kind === "value" && result.streams.length > 0) {
      let count = 0;
      for await (const _ of result.streams[0]) count++;
      if (count !== list.length) throw new Error(`reverse returned ${count} of ${list.length} items`);
    }
    await call.finished;
  });
};
/** Durable `digest` of the 1 MiB batches through one client build. */
const digest = (lib, list) => {
  const client = lib.createClient({ url: server.url, token: "t" });
  return time(async () => {
    const call = client.invoke({
      ...demo,
      method: "digest",
      methodParameters: { kind: "record", value: { fields: [lib.inputStream.bytes(list)] } },
    });
    await call.result;
    await call.finished;
  });
};
const warm = items.slice(0, 2000);
for (const lib of [here, other]) {
  await invoke(lib, peer.url, "tally", warm);
  await invoke(lib, server.url, "tally", warm);
  await invoke(lib, server.url, "reverse", warm);
  await digest(lib, batches.slice(0, 4));
}
await rawWs(raw.url, warm, false);
await rawWs(raw.url, batches.slice(0, 4), true);
await bench.runRounds(
  {
    strRaw: () => withCpu("strRaw", raw, () => rawWs(raw.url, items, false)),
    other: () => withCpu("other", peer, () => invoke(other, peer.url, "tally", items)),
    here: () => withCpu("here", peer, () => invoke(here, peer.url, "tally", items)),
    otherDurable: () => withCpu("otherDurable", server, () => invoke(other, server.url, "tally", items)),
    hereDurable: () => withCpu("hereDurable", server, () => invoke(here, server.url, "tally", items)),
    otherReverse: () => withCpu("otherReverse", server, () => invoke(other, server.url, "reverse", items)),
    hereReverse: () => withCpu("hereReverse", server, () => invoke(here, server.url, "reverse", items)),
    binRaw: () => withCpu("binRaw", raw, () => rawWs(raw.url, batches, true)),
    otherDigest: () => withCpu("otherDigest", server, () => digest(other, batches)),
    hereDigest: () => withCpu("hereDigest", server, () => digest(here, batches)),
  },
  ROUNDS,
);
await Promise.all([peer.close(), raw.close(), server.close()]);
rmSync(dataDir, { recursive: true, force: true });

const { row, senderCpu } = bench;
/** Median sender CPU per item of both builds, and the median of each round's other/this ratio. */
const cpuLine = (label, otherName, hereName, per = ITEMS, unit = "µs/item") => {
  const [was, now] = [senderCpu[otherName], senderCpu[hereName]];
  if (was === undefined || now === undefined) return `${label.padEnd(48)} (not run)`;
  const ratios = now.map((cpu, round) => was[round] / cpu);
  const perItem = (list) => (median(list) / per).toFixed(2);
  return (
    `${label.padEnd(48)} ${perItem(was)} → ${perItem(now)} ${unit}, other/this ${median(ratios).toFixed(2)}x ` +
    `(rounds ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`
  );
};
console.log(
  header(
    ROUNDS,
    `this checkout's client against ${otherPath}; one way to the ACK-only peer, round trip to this checkout's embedded server`,
  ),
);
console.log(`stream<string>, ${ITEMS} items of 64 bytes, one way (tally)`);
console.log(row("  raw ws", "strRaw", "strRaw", ITEMS, "items/s"));
console.log(row("  other build", "other", "strRaw", ITEMS, "items/s"));
console.log(row("  this checkout", "here", "strRaw", ITEMS, "items/s"));
console.log(row("  this checkout / other build", "here", "other", ITEMS, "items/s"));
console.log(cpuLine("  sender CPU, other → this", "other", "here"));
console.log(`stream<string>, ${ITEMS} items of 64 bytes, one way to the embedded server (durable tally)`);
console.log(row("  other build", "otherDurable", "strRaw", ITEMS, "items/s"));
console.log(row("  this checkout", "hereDurable", "strRaw", ITEMS, "items/s"));
console.log(row("  this checkout / other build", "hereDurable", "otherDurable", ITEMS, "items/s"));
console.log(cpuLine("  sender CPU, other → this", "otherDurable", "hereDurable"));
console.log(`stream<string>, ${ITEMS} items of 64 bytes, round trip (reverse)`);
console.log(row("  other build", "otherReverse", "strRaw", ITEMS, "items/s"));
console.log(row("  this checkout", "hereReverse", "strRaw", ITEMS, "items/s"));
console.log(row("  this checkout / other build", "hereReverse", "otherReverse", ITEMS, "items/s"));
console.log(cpuLine("  sender CPU, other → this", "otherReverse", "hereReverse"));
console.log(`stream<u8>, ${MIBS} batches of 1 MiB, durable (digest)`);
console.log(row("  raw ws, 1 MiB binary", "binRaw", "binRaw", MIBS, "MiB/s"));
console.log(row("  other build", "otherDigest", "binRaw", MIBS, "MiB/s"));
console.log(row("  this checkout", "hereDigest", "binRaw", MIBS, "MiB/s"));
console.log(row("  this checkout / other build", "hereDigest", "otherDigest", MIBS, "MiB/s"));
console.log(cpuLine("  sender CPU, other → this", "otherDigest", "hereDigest", MIBS * 1000, "ms/MiB"));
