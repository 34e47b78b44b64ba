#!/usr/bin/env node
/**
 * The server's per-item work in this package and the wire for one 64-byte `tally` item
 * (docs/performance.md, *Per-item budget*), without sockets, store or session: decode the message
 * as the server does (`decodeClientMessage` of its bytes), validate the value against a
 * `stream<string>` element (`decodeSchemaValue`), its canonical bytes for the store
 * (`encodeSchemaValue`, `Buffer.from`), and the agent's `toJs`. Prints CPU per item (median of
 * rounds, builds alternating) and bytes allocated per item by site (sampled by the inspector,
 * collected objects included), for this checkout and, when given, other checkouts (built).
 *
 *   node bench/input-item.mjs [<other checkout root> ...]
 *   BENCH_ITEMS=200000 BENCH_ROUNDS=7 TOP=10 node bench/input-item.mjs /work/main
 */
import { Session } from "node:inspector";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = fileURLToPath(new URL("../../..", import.meta.url));
const roots = [here, ...process.argv.slice(2)];
const ITEMS = Number(process.env.BENCH_ITEMS ?? 200_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const TOP = Number(process.env.TOP ?? 8);
const ITEM = "x".repeat(64);
const messages = Array.from({ length: 1000 }, (_, i) =>
  Buffer.from(`{"channel":1,"sequence":"${1000 + i}","type":"inputStreamItem","value":{"kind":"string","value":"${ITEM}"},"version":1}`),
);

/** One build's per-item function, checked to give the canonical bytes and the agent's text. */
async function load(root) {
  const wire = await import(pathToFileURL(`${root}/packages/wire/dist/index.js`).href);
  const sv = await import(pathToFileURL(`${root}/packages/schema-value/dist/index.js`).href);
  const graph = sv.decodeSchemaGraph(sv.t.graph(sv.t.string()));
  const one = (data) => {
    const message = wire.decodeClientMessage(data, false);
    const decoded = sv.decodeSchemaValue(message.value, graph, { streams: "provisional", path: "value" });
    const bytes = Buffer.from(sv.encodeSchemaValue(decoded.value), "utf8");
    return sv.toJs(decoded.value, graph, graph.root, {}).length + bytes.length;
  };
  if (one(messages[0]) !== 64 + `{"kind":"string","value":"${ITEM}"}`.length) throw new Error(`${root}: unexpected result`);
  return { root, one };
}

const builds = await Promise.all(roots.map(load));
let sink = 0;
const run = (one, count) => {
  for (let i = 0; i < count; i++) sink += one(messages[i % messages.length]);
};
for (const { one } of builds) run(one, 50_000); // warm up

const cpu = builds.map(() => []);
for (let round = 0; round < ROUNDS; round++) {
  // Alternate the order every round, as the throughput benches do.
  const order = round % 2 === 0 ? builds.map((_, i) => i) : builds.map((_, i) => builds.length - 1 - i);
  for (const i of order) {
    const start = process.cpuUsage();
    run(builds[i].one, ITEMS);
    const used = process.cpuUsage(start);
    cpu[i].push(((used.user + used.system) * 1000) / ITEMS);
  }
}

const session = new Session();
session.connect();
const post = (method, params) =>
  new Promise((resolve, reject) => session.post(method, params, (error, answer) => (error ? reject(error) : resolve(answer))));
const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1];
for (const [i, { root, one }] of builds.entries()) {
  await post("HeapProfiler.startSampling", {
    samplingInterval: 256,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  run(one, 100_000);
  const { profile } = await post("HeapProfiler.stopSampling");
  const sites = new Map();
  let total = 0;
  const walk = (node) => {
    if (node.selfSize > 0) {
      total += node.selfSize;
      const site = `${node.callFrame.functionName || "(anonymous)"} ${node.callFrame.url.replace(/^.*\/packages\//, "")}:${node.callFrame.lineNumber + 1}`;
      sites.set(site, (sites.get(site) ?? 0) + node.selfSize);
    }
    node.children.forEach(walk);
  };
  walk(profile.head);
  const range = `${Math.min(...cpu[i]).toFixed(0)}–${Math.max(...cpu[i]).toFixed(0)}`;
  console.log(
    `${root === here ? "this checkout" : root}: ${median(cpu[i]).toFixed(0)} ns CPU per item (rounds ${range}), ${(total / 100_000).toFixed(0)} B allocated per item`,
  );
  for (const [site, bytes] of [...sites].sort((a, b) => b[1] - a[1]).slice(0, TOP))
    console.log(`  ${(bytes / 100_000).toFixed(0).padStart(5)} B  ${site}`);
}
if (sink === 0) console.log("");
