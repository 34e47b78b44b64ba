#!/usr/bin/env node
/**
 * canonicalJson of this checkout against another build's, alternating in
 * rounds (docs/performance.md): an input item message
 * and a record of 20 string fields, with the outputs checked equal.
 *
 *   node bench/canonical-compare.mjs /other/checkout/packages/wire/dist/canonical-json.js
 */
const other = process.argv[2];
if (other === undefined) {
  console.error("usage: canonical-compare.mjs <another build's packages/wire/dist/canonical-json.js>");
  process.exit(2);
}
const before = await import(other);
const here = await import(new URL("../dist/canonical-json.js", import.meta.url).href);
const item = () => ({ channel: 1, sequence: "123", value: { kind: "string", value: "x".repeat(64) }, type: "inputStreamItem", version: 1 });
const record = { kind: "record", value: { fields: Array.from({ length: 20 }, (_, i) => ({ kind: "string", value: `field-${i}` })) } };
const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1];
for (const [label, make] of [
  ["input item message", item],
  ["record of 20 strings", () => record],
]) {
  if (before.canonicalJson(make()) !== here.canonicalJson(make())) throw new Error(`${label}: the outputs differ`);
  const nanos = { before: [], here: [] };
  for (let round = 0; round < 7; round++)
    for (const [name, encoder] of [
      ["before", before],
      ["here", here],
    ]) {
      const count = 200_000;
      const start = process.hrtime.bigint();
      for (let i = 0; i < count; i++) encoder.canonicalJson(make());
      nanos[name].push(Number(process.hrtime.bigint() - start) / count);
    }
  console.log(
    `${label.padEnd(22)} other build ${median(nanos.before).toFixed(0).padStart(6)} ns, this checkout ${median(nanos.here).toFixed(0).padStart(6)} ns: ` +
      `${(median(nanos.before) / median(nanos.here)).toFixed(2)}x faster (medians of 7 alternating rounds)`,
  );
}
