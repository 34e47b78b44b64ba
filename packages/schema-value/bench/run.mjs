// Benchmarks of @golem-stream/schema-value against dist/ (build first:
// npx tsc -p tsconfig.json). Every figure is a ratio to a baseline measured
// side by side in the same run, so numbers compare across machines.
// Usage: node bench/run.mjs [--quick]
//
// The measurement: strict decode + validate of a large nested value
// (records and lists, 10k elements) compared with JSON.parse of the same text.
import { performance } from "node:perf_hooks";
import { canonicalJson, parseStrictJson } from "@golem-stream/wire";
import { byteCharge, decodeSchemaGraph, decodeSchemaValue, encodeSchemaValue, fromJs, t, toJs, v } from "../dist/index.js";

const quick = process.argv.includes("--quick");

/** Best of `samples` timings of `rounds` passes, in ms per pass: the least disturbed run. */
function time(fn, rounds, samples = quick ? 3 : 7) {
  fn(); // warm up
  let best = Number.POSITIVE_INFINITY;
  for (let s = 0; s < samples; s++) {
    const start = performance.now();
    for (let i = 0; i < rounds; i++) fn();
    best = Math.min(best, (performance.now() - start) / rounds);
  }
  return best;
}

// ---- a large nested value: 10k records with nested lists ----

const ELEMENTS = 10_000;
const item = t.record({
  id: t.u64(),
  name: t.string(),
  score: t.f64({ min: { kind: "float-bits", value: "0" } }),
  active: t.bool(),
  tags: t.list(t.string()),
  size: t.option(t.u32()),
  kind: t.enum(["small", "medium", "large"]),
});
const graph = decodeSchemaGraph(t.graph(t.record({ title: t.text(), items: t.list(t.ref("item")) }), { item }));
const value = v.record(
  v.text("inventory", "en"),
  v.list(
    ...Array.from({ length: ELEMENTS }, (_, i) =>
      v.record(
        v.u64(BigInt(1_000_000_000_000 + i)),
        v.string(`item-${i} the quick brown fox`),
        v.f64(i / 7),
        v.bool(i % 2 === 0),
        v.list(v.string("alpha"), v.string("beta")),
        v.option(i % 3 === 0 ? null : v.u32(i)),
        v.enum(i % 3),
      ),
    ),
  ),
);
const text = canonicalJson(value);
const parsed = JSON.parse(text);
const rounds = quick ? 3 : 10;

const jsonParse = time(() => JSON.parse(text), rounds);
const strictParse = time(() => parseStrictJson(text), rounds);
const parseAndDecode = time(() => decodeSchemaValue(parseStrictJson(text), graph), rounds);
const decodeOnly = time(() => decodeSchemaValue(parsed, graph), rounds);
const jsonStringify = time(() => JSON.stringify(parsed), rounds);
const encode = time(() => encodeSchemaValue(value), rounds);
const charge = time(() => byteCharge(parsed, graph), rounds);
const js = toJs(value, graph);
const toJsTime = time(() => toJs(value, graph), rounds);
const fromJsTime = time(() => fromJs(js, graph), rounds);

const mb = (Buffer.byteLength(text) / 1024 / 1024).toFixed(2);
const fmt = (ms) => `${ms.toFixed(2)} ms`;
const ratio = (ms) => `${(jsonParse / ms).toFixed(2)}x JSON.parse throughput`;
console.log(`value: ${ELEMENTS} records (${mb} MiB canonical text, byte charge ${byteCharge(parsed, graph)})`);
console.log(`  JSON.parse                                 ${fmt(jsonParse)}  (baseline)`);
console.log(`  wire parseStrictJson                       ${fmt(strictParse)}  ${ratio(strictParse)}`);
console.log(`  parseStrictJson + decodeSchemaValue        ${fmt(parseAndDecode)}  ${ratio(parseAndDecode)}`);
console.log(`  decodeSchemaValue alone (parsed JSON)      ${fmt(decodeOnly)}  ${ratio(decodeOnly)}`);
console.log(`  byteCharge (validating)                    ${fmt(charge)}  ${ratio(charge)}`);
console.log(
  `  encodeSchemaValue vs JSON.stringify        ${fmt(encode)}  ${(jsonStringify / encode).toFixed(2)}x JSON.stringify throughput`,
);
console.log(`  toJs                                       ${fmt(toJsTime)}  ${ratio(toJsTime)}`);
console.log(`  fromJs                                     ${fmt(fromJsTime)}  ${ratio(fromJsTime)}`);

// ---- linearity: decode time per element stays flat as the value grows ----
// (a first untimed pass warms the JIT at every size, so the sizes compare fairly)

console.log("linearity (decodeSchemaValue, ms per 1k elements):");
const listGraph = decodeSchemaGraph(t.graph(t.list(t.ref("item")), { item }));
const elements = value.value.fields[1].value.elements;
const sized = [1_000, 4_000, 16_000].map((n) => [
  n,
  JSON.parse(canonicalJson(v.list(...Array.from({ length: n }, (_, i) => elements[i % ELEMENTS])))),
]);
for (const [, big] of sized) decodeSchemaValue(big, listGraph);
for (const [n, big] of sized) {
  const ms = time(() => decodeSchemaValue(big, listGraph), quick ? 2 : 5);
  console.log(`  ${String(n).padStart(6)} elements  ${(ms / (n / 1000)).toFixed(3)} ms`);
}
