#!/usr/bin/env node
/**
 * The payload files alone (`src/store/payload-files.ts`): one session's 1 MiB payloads written in
 * groups, each group written and synced before the next (as the group commit does), with direct
 * I/O and through the page cache, alternating round by round in one process. Prints MiB/s and the
 * process's CPU per MiB (the thread pool's copies and syncs are in it), medians of the rounds,
 * and each round's ratio (docs/performance.md, *Payload files*).
 *
 *   node bench/payload-writes.mjs
 *   PAYLOAD_MIB=512 PAYLOAD_GROUP_MIB=3 PAYLOAD_ROUNDS=5 node bench/payload-writes.mjs
 *
 * Every round writes fresh files and keeps them until the end, as a store keeps its sessions'
 * payloads: through the page cache each written byte needs a page the kernel has not used yet
 * (on a VM that returns freed memory to its host, a fault in the hypervisor as well).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PayloadFiles } from "../dist/store/payload-files.js";

const MIB = 1024 * 1024;
const TOTAL_MIB = Number(process.env.PAYLOAD_MIB ?? 256);
const GROUP_MIB = Number(process.env.PAYLOAD_GROUP_MIB ?? 3);
const ROUNDS = Number(process.env.PAYLOAD_ROUNDS ?? 5);

const dir = mkdtempSync(join(tmpdir(), "golem-stream-payload-writes-"));
const batch = new Uint8Array(MIB).map((_, i) => i % 251);
let sessions = 0;

async function round(directIo) {
  const files = new PayloadFiles(join(dir, "payloads"), { directIo });
  const sessionId = `s${sessions++}`;
  const cpu = process.cpuUsage();
  const began = performance.now();
  for (let written = 0; written < TOTAL_MIB; written += GROUP_MIB) {
    const group = [];
    for (let i = 0; i < GROUP_MIB && written + i < TOTAL_MIB; i++) group.push(files.reserve(sessionId, batch));
    await files.writeDurably(group);
  }
  const seconds = (performance.now() - began) / 1000;
  const used = process.cpuUsage(cpu);
  if (files.directIo !== directIo) throw new Error(`direct I/O was refused here: the two rows would measure the same path`);
  await files.close();
  return {
    rate: TOTAL_MIB / seconds,
    cpuPerMib: (used.user + used.system) / 1000 / TOTAL_MIB,
    systemPerMib: used.system / 1000 / TOTAL_MIB,
  };
}

const rows = { direct: [], pageCache: [] };
for (let r = 0; r < ROUNDS; r++) {
  // Odd rounds go the other way round, so that neither always follows the other.
  for (const directIo of r % 2 === 0 ? [true, false] : [false, true]) rows[directIo ? "direct" : "pageCache"].push(await round(directIo));
}
rmSync(dir, { recursive: true, force: true });

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
console.log(`payload files: ${TOTAL_MIB} MiB of 1 MiB payloads per round, groups of ${GROUP_MIB} MiB, ${ROUNDS} rounds (medians)`);
for (const [label, name] of [
  ["direct I/O (O_DIRECT | O_DSYNC)", "direct"],
  ["through the page cache (O_DSYNC)", "pageCache"],
]) {
  const results = rows[name];
  const rate = median(results.map((result) => result.rate));
  const cpu = median(results.map((result) => result.cpuPerMib));
  const system = median(results.map((result) => result.systemPerMib));
  console.log(`  ${label.padEnd(34)} ${rate.toFixed(0).padStart(6)} MiB/s   CPU ${cpu.toFixed(2)} ms/MiB (system ${system.toFixed(2)})`);
}
const ratios = rows.direct.map((result, i) => result.rate / rows.pageCache[i].rate);
console.log(
  `  direct / page cache, same rounds: ${median(ratios).toFixed(2)}x (rounds ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`,
);
