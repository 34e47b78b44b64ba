#!/usr/bin/env node
/**
 * The per-item CPU budget of one process, split by stage of the small-item path
 * (docs/performance.md, *Per-item budget*): the shares of a `--cpu-prof` profile, times the CPU
 * per item the bench measured without the profiler (which inflates every stage, not equally).
 *
 *   BENCH_ONLY=strTally node --cpu-prof --cpu-prof-dir=/tmp/prof bench/baselines.mjs
 *   node bench/profile-budget.mjs <µs of CPU per item> /tmp/prof/<the process>.cpuprofile
 *
 * A sample belongs to the stage of the first frame, from the sampled function outwards, whose
 * script a rule names: a native or Node function (`writev`, `Buffer.from`, `TextDecoder`) counts for
 * whoever called it.
 * Garbage collection is its own line: it is the price of every stage's allocations together.
 */
import { readFileSync } from "node:fs";
import { STAGES } from "./stages.mjs";

const [perItem, file] = [Number(process.argv[2]), process.argv[3]];
if (!(perItem > 0) || file === undefined) {
  console.error("usage: profile-budget.mjs <µs of CPU per item> <file.cpuprofile>");
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, "utf8"));
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parentOf = new Map();
for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);

const stageCache = new Map();
function stageOf(id) {
  if (stageCache.has(id)) return stageCache.get(id);
  const { url, functionName } = byId.get(id).callFrame;
  let stage;
  if (functionName === "(idle)") stage = null;
  else if (functionName === "(garbage collector)") stage = "garbage collection";
  else if (functionName === "(program)") stage = "program / native (unattributed)";
  else {
    stage = STAGES.find(([, match]) => match(url, functionName))?.[0];
    if (stage === undefined) stage = parentOf.has(id) ? stageOf(parentOf.get(id)) : "other";
  }
  stageCache.set(id, stage);
  return stage;
}

const stages = new Map();
let busy = 0;
profile.samples.forEach((id, i) => {
  const stage = stageOf(id);
  if (stage === null) return;
  const micros = profile.timeDeltas[i] ?? 0;
  busy += micros;
  stages.set(stage, (stages.get(stage) ?? 0) + micros);
});
console.log(`${file}: busy ${(busy / 1000).toFixed(0)} ms; ${perItem} µs per item measured without the profiler`);
for (const [stage, micros] of [...stages].sort((a, b) => b[1] - a[1]))
  console.log(
    `  ${stage.padEnd(44)} ${((100 * micros) / busy).toFixed(1).padStart(5)} %  ${((perItem * micros) / busy).toFixed(2).padStart(6)} µs/item`,
  );
