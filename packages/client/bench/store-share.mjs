#!/usr/bin/env node
/**
 * What the SQLite store's input path costs a loopback `tally`, measured by taking it away: the
 * embedded server as shipped beside the same server on a store that reports each turn's input
 * chunks committed without writing them (bench/unwritten-input-store.mjs; everything else still
 * SQLite), beside the same SQLite store run on a thread of its own behind a stand-in on the
 * event loop (bench/worker-store.mjs: what moving the store's work off the event loop would
 * give), and beside one that appends the input chunks to a file instead
 * (bench/file-input-store.mjs: what an input log kept in files would cost), rows alternating in
 * every round. Prints the rate and the server's CPU per item, all
 * threads and its main thread alone (the event loop, which bounds a node's rate).
 *
 *   node bench/store-share.mjs
 *   BENCH_ITEMS=200000 BENCH_ROUNDS=6 node bench/store-share.mjs
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { benchSizes, createMeasurements, header, startPeer, tallied, tallyOf, viaClient } from "./throughput.mjs";

const { itemCount: ITEMS, rounds: ROUNDS, items } = benchSizes();
const bench = createMeasurements();
const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-store-share-"));
const shipped = await startPeer("server", join(dataDir, "shipped"));
const unwritten = await startPeer(
  "store",
  join(dataDir, "unwritten"),
  fileURLToPath(new URL("./unwritten-input-store.mjs", import.meta.url)),
  JSON.stringify({ dataDir: join(dataDir, "unwritten-store") }),
);
const threaded = await startPeer(
  "store",
  join(dataDir, "threaded"),
  fileURLToPath(new URL("./worker-store.mjs", import.meta.url)),
  JSON.stringify({ dataDir: join(dataDir, "threaded-store") }),
);
const fileLog = await startPeer(
  "store",
  join(dataDir, "file-log"),
  fileURLToPath(new URL("./file-input-store.mjs", import.meta.url)),
  JSON.stringify({ dataDir: join(dataDir, "file-log-store") }),
);
const warm = items.slice(0, 2000);
for (const server of [shipped, unwritten, threaded, fileLog]) await viaClient(server.url, "tally", tallyOf(warm), tallied(warm.length));
await bench.runRounds(
  {
    shipped: () => bench.withCpu("shipped", shipped, () => viaClient(shipped.url, "tally", tallyOf(items), tallied(ITEMS))),
    unwritten: () => bench.withCpu("unwritten", unwritten, () => viaClient(unwritten.url, "tally", tallyOf(items), tallied(ITEMS))),
    threaded: () => bench.withCpu("threaded", threaded, () => viaClient(threaded.url, "tally", tallyOf(items), tallied(ITEMS))),
    fileLog: () => bench.withCpu("fileLog", fileLog, () => viaClient(fileLog.url, "tally", tallyOf(items), tallied(ITEMS))),
  },
  ROUNDS,
);
await Promise.all([shipped.close(), unwritten.close(), threaded.close(), fileLog.close()]);
rmSync(dataDir, { recursive: true, force: true });

console.log(
  header(ROUNDS, "the SQLite store beside one that writes no input, the same store on a thread of its own, and input appended to a file"),
);
console.log(`stream<string>, ${ITEMS} items of 64 bytes (tally)`);
console.log(bench.row("  SQLite, as shipped", "shipped", "shipped", ITEMS, "items/s"));
console.log(bench.row("  input not written", "unwritten", "shipped", ITEMS, "items/s"));
console.log(bench.row("  SQLite on a thread of its own", "threaded", "shipped", ITEMS, "items/s"));
console.log(bench.row("  input appended to a file instead", "fileLog", "shipped", ITEMS, "items/s"));
