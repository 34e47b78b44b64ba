#!/usr/bin/env node
/**
 * Summarises `.cpuprofile` files (from `node --cpu-prof`) into the shares of
 * the small-item path that docs/performance.md reports: self time
 * grouped by the stage of the pipeline the function belongs to, then the top
 * functions.
 *
 *   BENCH_ONLY=strTally node --cpu-prof --cpu-prof-dir=/tmp/prof bench/run.mjs
 *   node bench/profile-summary.mjs /tmp/prof/*.cpuprofile
 *
 * Each file is one process (the bench's sender, every forked peer); its busy
 * time excludes `(idle)`. Stages are matched on the function's script path and
 * name, first rule wins; what no rule matches is "other".
 */
import { readFileSync } from "node:fs";

const STAGES = [
  ["garbage collection", (url, name) => name === "(garbage collector)"],
  ["program / native", (url, name) => name === "(program)"],
  ["store: SQLite insert + commit", (url) => /better-sqlite3|sqlite-store|sqlite-rows|row-inserter|group-commit|payload-files/.test(url)],
  ["strict decode (wire)", (url) => /wire\/dist\/(decode|json|strict|messages|client-messages|server-messages|binary)/.test(url)],
  ["encode (wire)", (url) => /wire\/dist\/(encode|canonical)/.test(url)],
  ["SchemaValue validation", (url) => /schema-value\/dist/.test(url)],
  ["server values / canonical re-encode", (url) => /server\/dist\/values/.test(url)],
  ["wire (other)", (url) => /wire\/dist/.test(url)],
  ["tokens (HMAC)", (url) => /tokens\/dist|noble/.test(url)],
  ["ws receive/send", (url) => /node_modules\/.*ws\/lib/.test(url) || /bufferutil/.test(url)],
  ["node net / streams", (url) => /^node:(net|internal\/stream|internal\/streams|stream)/.test(url)],
  ["server session/attachment", (url) => /server\/dist/.test(url)],
  ["client runtime", (url) => /client\/dist/.test(url)],
  ["promises / microtasks", (url, name) => url === "" && /Promise|then|await|microtask/i.test(name)],
  ["node internals", (url) => url.startsWith("node:")],
];

for (const file of process.argv.slice(2)) {
  const profile = JSON.parse(readFileSync(file, "utf8"));
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map();
  // Sample intervals: timeDeltas[i] is the time before sample i.
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const stages = new Map();
  const functions = new Map();
  let busy = 0;
  for (const [id, micros] of self) {
    const { callFrame } = byId.get(id);
    const { url, functionName } = callFrame;
    if (functionName === "(idle)") continue;
    busy += micros;
    const stage = STAGES.find(([, match]) => match(url, functionName))?.[0] ?? "other";
    stages.set(stage, (stages.get(stage) ?? 0) + micros);
    const key = `${functionName || "(anonymous)"} ${url.replace(/^.*\/(packages|node_modules)\//, "")}:${callFrame.lineNumber + 1}`;
    functions.set(key, (functions.get(key) ?? 0) + micros);
  }
  console.log(`${file}: busy ${(busy / 1000).toFixed(0)} ms`);
  for (const [stage, micros] of [...stages].sort((a, b) => b[1] - a[1]))
    console.log(`  ${stage.padEnd(40)} ${(micros / 1000).toFixed(0).padStart(7)} ms ${((100 * micros) / busy).toFixed(1).padStart(5)} %`);
  console.log("  top functions (self time)");
  for (const [key, micros] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.TOP ?? 25)))
    console.log(`    ${((100 * micros) / busy).toFixed(1).padStart(5)} %  ${key}`);
}
