#!/usr/bin/env node
/**
 * Before/after of the client's small-item path in one run: this checkout's
 * @golem-stream/client against another build of it, alternating in every
 * round, each sending the same 64-byte strings to the same ACK-only peer
 * (`bench/peer.mjs`, forked), beside raw `ws`. The peer is the same for
 * both, so the ratio is the clients' alone.
 *
 *   node bench/compare-client.mjs /path/to/other/checkout/packages/client/dist/index.js
 *   BENCH_ITEMS=50000 BENCH_ROUNDS=8 node bench/compare-client.mjs <module>
 */
import { pathToFileURL } from "node:url";
import * as here from "@golem-stream/client";
import { benchSizes, createMeasurements, demo, header, rawWs, startPeer, time } from "./throughput.mjs";

const otherPath = process.argv[2];
if (otherPath === undefined) {
  console.error("usage: compare-client.mjs <path of another build's packages/client/dist/index.js>");
  process.exit(2);
}
const other = await import(pathToFileURL(otherPath).href);
const { itemCount: ITEMS, rounds: ROUNDS, items } = benchSizes();
const bench = createMeasurements();
const peer = await startPeer("ack");
const raw = await startPeer("raw");

/** `tally` of the items through one client build, to the ACK-only peer. */
const tally = (lib, list) => {
  const client = lib.createClient({ url: peer.url, token: "t" });
  return time(async () => {
    const call = client.invoke({ ...demo, method: "tally", methodParameters: { kind: "record", value: { fields: [lib.inputStream.strings(list)] } } });
    await call.result;
    await call.finished;
  });
};
const warm = items.slice(0, 2000);
await tally(here, warm);
await tally(other, warm);
await rawWs(raw.url, warm, false);
await bench.runRounds(
  { strRaw: () => rawWs(raw.url, items, false), other: () => tally(other, items), here: () => tally(here, items) },
  ROUNDS,
);
await Promise.all([peer.close(), raw.close()]);
const { row } = bench;
console.log(header(ROUNDS, `this checkout's client against ${otherPath}, both to the ACK-only peer`));
console.log(`stream<string>, ${ITEMS} items of 64 bytes, one way`);
console.log(row("  raw ws", "strRaw", "strRaw", ITEMS, "items/s"));
console.log(row("  other build", "other", "strRaw", ITEMS, "items/s"));
console.log(row("  this checkout", "here", "strRaw", ITEMS, "items/s"));
console.log(row("  this checkout / other build", "here", "other", ITEMS, "items/s"));
