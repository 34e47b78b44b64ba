#!/usr/bin/env node
/**
 * One session whose output is not read: how much input
 * does the server accept, and how much memory does it hold, before it stops
 * reading the socket? The session's byte budget is 64 MiB (decisions §6).
 *
 *   node bench/unread-output.mjs            # after `pnpm build` at the root; about a minute
 *   UNREAD_ITEMS=1024 UNREAD_ITEM_KIB=512 UNREAD_STALL_MS=3000 node bench/unread-output.mjs
 *   UNREAD_ONLY=greedy node bench/unread-output.mjs
 *   UNREAD_DEBUG=1 node bench/unread-output.mjs   # also the server's counts and memory every 100 ms
 *
 * Each scenario forks a fresh embedded server (bench/peer.mjs server, SQLite
 * synchronous = FULL, payload files; --expose-gc) and runs the client here.
 * The client invokes the demo method `reverse` (stream<string> in, each item
 * reversed out) with UNREAD_ITEMS strings of UNREAD_ITEM_KIB KiB and does not
 * read the output stream. Its own output budget (64 MiB) then pauses its
 * socket, and the server's output pump stops once its socket buffer is full.
 * The client keeps sending input until its unacknowledged window is full or
 * the server stops reading.
 *
 *   accepted   input items the server has committed (its store's stream
 *              count: the ACK high-water it reports) once that stopped
 *              changing for UNREAD_STALL_MS, × the item size; beside it the
 *              output items it has committed.
 *   RSS peak   the server's kernel peak RSS (maxRSS) over its idle baseline
 *              (taken after a warm-up `reverse` and a full GC).
 *   heap+buf   heapUsed + arrayBuffers: highest 20 ms sample over the baseline.
 *   live       heapUsed + arrayBuffers after a full GC at the stall, over the
 *              baseline: what the server holds, garbage excluded.
 *
 * Then the client reads everything, and every item is checked (count, size
 * and which item it is): nothing accepted may be lost.
 *
 * Scenarios: `default` is a client with its default window of unacknowledged
 * input (8 MiB); `greedy` lets the client send up to 1 GiB unacknowledged, so
 * only the server's own bounds stop it (a server must not rely on clients).
 */
import { fork } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { createClient, inputStream } from "@golem-stream/client";

const MIB = 1024 * 1024;
const ITEMS = Number(process.env.UNREAD_ITEMS ?? 1024);
const ITEM_BYTES = Number(process.env.UNREAD_ITEM_KIB ?? 512) * 1024;
const STALL_MS = Number(process.env.UNREAD_STALL_MS ?? 3000);
const demo = {
  application: "demo",
  environment: "default",
  agentType: "echo",
  constructorParameters: { kind: "record", value: { fields: [{ kind: "string", value: "memory" }] } },
};

function nextMessage(channel, key) {
  return new Promise((resolve) => {
    const on = (message) => {
      if (typeof message !== "object" || message === null || !(key in message)) return;
      channel.off("message", on);
      resolve(message[key]);
    };
    channel.on("message", on);
  });
}

function startServer(dataDir) {
  const proc = fork(fileURLToPath(new URL("./peer.mjs", import.meta.url)), ["server", dataDir], {
    stdio: "inherit",
    execArgv: [...process.execArgv, "--expose-gc"],
  });
  let closing = false;
  proc.once("exit", (code) => {
    if (!closing) {
      console.error(`server exited with ${code}`);
      process.exit(1);
    }
  });
  const ask = (request, key) => {
    const answer = nextMessage(proc, key);
    proc.send(request);
    return answer;
  };
  return {
    url: nextMessage(proc, "url"),
    memory: () => ask("memory", "memory"),
    counts: () => ask("counts", "counts"),
    close: () => {
      closing = true;
      return new Promise((resolve) => (proc.once("exit", resolve), proc.send("close")));
    },
  };
}

/** Item i: its number, then one letter to the item's size (ASCII, so one byte per character). */
const label = (i) => `<${i}>`;
const item = (i) => label(i) + String.fromCharCode(97 + (i % 26)).repeat(ITEM_BYTES - label(i).length);
const reversedLabel = (i) => Array.from(label(i)).reverse().join("");
const text = (value) => (typeof value === "string" ? value : value.value);

/** Invokes `reverse` over `count` items; `reading` decides when the output is read. Checks every item. */
async function reverse(url, count, options, reading) {
  const client = createClient({ url, token: "t", ...options });
  let pulled = 0;
  async function* items() {
    for (let i = 0; i < count; i++) {
      pulled = i + 1;
      yield item(i);
    }
  }
  const call = client.invoke({
    ...demo,
    method: "reverse",
    methodParameters: { kind: "record", value: { fields: [inputStream.strings(items())] } },
  });
  const result = await call.result;
  await reading();
  let n = 0;
  for await (const value of result.streams[0]) {
    const out = text(value);
    if (out.length !== ITEM_BYTES || !out.endsWith(reversedLabel(n)))
      throw new Error(`output item ${n} is not the reverse of input item ${n}`);
    n++;
  }
  await call.finished;
  if (n !== count) throw new Error(`reverse delivered ${n} items of ${count}`);
  return { pulled };
}

const heapOf = (usage) => usage.heapUsed + usage.arrayBuffers;
const mib = (bytes) => `${(bytes / MIB).toFixed(1)} MiB`;

async function scenario(name, options) {
  const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-unread-"));
  const server = startServer(dataDir);
  try {
    const url = await server.url;
    await reverse(url, 8, options, async () => {});
    const base = await server.memory();
    const before = await server.counts();
    let stalled;
    await reverse(url, ITEMS, options, async () => {
      // Not reading: wait until the server has stopped accepting input.
      let last = -1;
      let since = Date.now();
      for (;;) {
        await sleep(100);
        const counts = await server.counts();
        const input = counts.input - before.input;
        if (process.env.UNREAD_DEBUG) {
          const u = counts.usage;
          console.log(
            `  in ${input} out ${counts.output - before.output}: rss ${mib(u.rss - base.now.rss)} heap ${mib(u.heapUsed - base.now.heapUsed)} buffers ${mib(u.arrayBuffers - base.now.arrayBuffers)}`,
          );
        }
        if (input !== last) {
          last = input;
          since = Date.now();
        } else if (input === ITEMS || Date.now() - since >= STALL_MS) {
          stalled = { input, output: counts.output - before.output };
          break;
        }
      }
      stalled.memory = await server.memory();
    });
    const m = stalled.memory;
    return {
      name,
      accepted: stalled.input,
      output: stalled.output,
      rss: Math.max(m.maxRSS, m.peak.rss) - base.now.rss,
      heap: m.peak.heap - heapOf(base.now),
      live: heapOf(m.now) - heapOf(base.now),
    };
  } finally {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const only = process.env.UNREAD_ONLY?.split(",");
const scenarios = [
  ["default", "client window 8 MiB (default)", {}],
  ["greedy", "client window 1 GiB", { maxUnackedInputBytes: 1024 * MIB }],
].filter(([key]) => only === undefined || only.includes(key));
const rows = [];
const started = Date.now();
for (const [, label, options] of scenarios) {
  const r = await scenario(label, options);
  rows.push([
    r.name,
    `${r.accepted} (${mib(r.accepted * ITEM_BYTES)})`,
    `${r.output} (${mib(r.output * ITEM_BYTES)})`,
    mib(r.rss),
    mib(r.heap),
    mib(r.live),
  ]);
}
console.log(
  `node ${process.version}, ${availableParallelism()} cores, loopback; reverse of ${ITEMS} x ${ITEM_BYTES / 1024} KiB strings, output unread; ` +
    `a fresh server process per scenario; server growth over its idle baseline; every item checked after; ${((Date.now() - started) / 1000).toFixed(0)} s`,
);
const header = ["scenario", "input accepted (items)", "output committed (items)", "server RSS peak", "heap+buf peak", "live after GC"];
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
const line = (cells) =>
  cells
    .map((cell, i) => (i >= 3 ? cell.padStart(widths[i]) : cell.padEnd(widths[i])))
    .join("  ")
    .trimEnd();
console.log(line(header));
for (const r of rows) console.log(line(r));
