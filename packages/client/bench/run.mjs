#!/usr/bin/env node
/**
 * Throughput of @golem-stream/client (issue #6), printed beside raw `ws`
 * moving the same payloads over loopback in the same run, as ratios (no
 * absolute targets in tests; this is where speed is measured).
 *
 *   node bench/run.mjs            # after `npx tsc -p tsconfig.json` in every package
 *   BENCH_MIB=64 BENCH_ITEMS=50000 BENCH_ROUNDS=5 node bench/run.mjs
 *   BENCH_ONLY=strTally node --cpu-prof bench/run.mjs   # the forked peers inherit --cpu-prof
 *   BENCH_DEBUG=1 node bench/run.mjs                     # also prints every round's seconds
 *
 * Method. The sending side (the raw `ws` client, or @golem-stream/client)
 * runs in this process; the receiving side runs in a child process
 * (`bench/peer.mjs`, forked), for the baseline and the protocol rows alike.
 * A deployment runs client and server in different processes, usually on
 * different machines; running both in one event loop would add their costs
 * on one core and flatter nobody fairly (the bare `ws` baseline then pays
 * twice too, but it is much cheaper per message). On a 2-core machine each
 * side gets about one core. The rows are measured in rounds, each round
 * running every row once in turn; a row's ratio is the median over the
 * rounds of its ratio to the raw row of the same round, and its rate the
 * median rate, so a slow moment of a shared machine favours no row.
 *
 * Rows:
 *   raw ws            — the client sends N messages of the same payload (1 MiB
 *                       binary, or the 64-byte string as a text message); the
 *                       peer counts them and replies once at the end.
 *   client, ack peer  — the full client runtime (codec, feeder, unacked
 *                       buffer, ACK handling) against a minimal protocol peer
 *                       that decodes strictly and ACKs every item at once.
 *   client + server   — the embedded server with its SQLite store at
 *                       synchronous = FULL: `digest` for u8 and `tally` for
 *                       strings (both one way: the result is one record), and
 *                       `reverse` (round trip: every item comes back as its
 *                       own outputStreamItem with its own cursor token).
 *   the same, payloads in SQLite pages
 *                     — `digest` against a second embedded server with
 *                       `payloadFileThreshold: Infinity` (every batch written
 *                       into SQLite's pages, as before payload files).
 *
 * The u8 rows also print the receiver's CPU per MiB (user and system, all its
 * threads, medians over the rounds): on a shared machine it moves less than
 * wall time. Optional native `bufferutil`, when installed, makes `ws` mask and
 * unmask in C and moves the raw row far more than the protocol rows; see
 * docs/protocol/throughput.md.
 */
import { fork } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { WebSocket } from "ws";
import { createClient, inputStream } from "@golem-stream/client";

const MIB = 1024 * 1024;
const TOTAL_MIB = Number(process.env.BENCH_MIB ?? 64);
const ITEMS = Number(process.env.BENCH_ITEMS ?? 50000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const ITEM = "x".repeat(64);
const ctor = { kind: "record", value: { fields: [{ kind: "string", value: "bench" }] } };
const demo = { application: "demo", environment: "default", agentType: "echo", constructorParameters: ctor };

async function time(fn) {
  const start = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - start) / 1e9;
}

/** Forks `peer.mjs <mode> ...args` and resolves once it listens. */
function startPeer(mode, ...args) {
  const child = fork(fileURLToPath(new URL("./peer.mjs", import.meta.url)), [mode, ...args], { stdio: "inherit" });
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`peer ${mode} exited with ${code}`)));
    child.once("message", ({ url }) =>
      resolve({
        url,
        /** Microseconds of CPU (all threads) the peer has used so far: `{ user, system }`. */
        cpu: () =>
          new Promise((r) => {
            child.once("message", ({ cpu }) => r(cpu));
            child.send("cpu");
          }),
        close: () => new Promise((r) => (child.once("exit", r), child.send("close"))),
      }),
    );
  });
}

// ---- raw ws: the ceiling ----

async function rawWs(url, messages, isBinary) {
  const socket = new WebSocket(`${url}/?count=${messages.length}`, { perMessageDeflate: false });
  await new Promise((resolve) => socket.once("open", resolve));
  const seconds = await time(async () => {
    const done = new Promise((resolve) => socket.once("message", resolve));
    for (const message of messages) {
      socket.send(message, { binary: isBinary });
      // Respect the socket's buffer like any well-behaved producer.
      if (socket.bufferedAmount > 8 * MIB) await new Promise((resolve) => setImmediate(resolve));
    }
    await done;
  });
  socket.close();
  return seconds;
}

// ---- the protocol ----

async function viaClient(url, method, params, check) {
  const client = createClient({ url, token: "t" });
  let result;
  const seconds = await time(async () => {
    const call = client.invoke({ ...demo, method, methodParameters: { kind: "record", value: { fields: params } } });
    result = await call.result;
    if (result.kind === "value" && result.streams.length > 0) for await (const _ of result.streams[0]) void _;
    await call.finished;
  });
  check?.(result);
  return seconds;
}

/** The tally result must count every item: a bench that loses items must not look fast. */
const tallied = (expected) => (result) => {
  const [items, bytes] = result.value.value.fields.map((field) => field.value);
  if (items !== String(expected) || bytes !== String(expected * ITEM.length)) throw new Error(`tally counted ${items} items, ${bytes} bytes`);
};

/** CPU microseconds the receiver spent in each round of a row: steadier than wall time on a shared machine. */
const receiverCpu = {};
async function withReceiverCpu(name, receiver, run) {
  const before = await receiver.cpu();
  const seconds = await run();
  const after = await receiver.cpu();
  (receiverCpu[name] ??= []).push({ user: after.user - before.user, system: after.system - before.system });
  return seconds;
}

// ---- the run ----

const batch = new Uint8Array(MIB).fill(7);
const batches = Array.from({ length: TOTAL_MIB }, () => batch);
const items = Array.from({ length: ITEMS }, () => ITEM);

const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-bench-"));
const raw = await startPeer("raw");
const peer = await startPeer("ack");
const server = await startPeer("server", join(dataDir, "files"));
const inlineServer = await startPeer("server", join(dataDir, "inline"), "inline");

const rows = {
  u8Raw: () => withReceiverCpu("u8Raw", raw, () => rawWs(raw.url, batches, true)),
  u8Peer: () => withReceiverCpu("u8Peer", peer, () => viaClient(peer.url, "digest", [inputStream.bytes(batches)])),
  u8Server: () => withReceiverCpu("u8Server", server, () => viaClient(server.url, "digest", [inputStream.bytes(batches)])),
  u8Inline: () => withReceiverCpu("u8Inline", inlineServer, () => viaClient(inlineServer.url, "digest", [inputStream.bytes(batches)])),
  strRaw: () => rawWs(raw.url, items, false),
  strPeer: () => viaClient(peer.url, "tally", [inputStream.strings(items)]),
  strTally: () => viaClient(server.url, "tally", [inputStream.strings(items)], tallied(ITEMS)),
  strReverse: () => viaClient(server.url, "reverse", [inputStream.strings(items)]),
};

// Warm up JIT and SQLite once, then measure.
await rawWs(raw.url, batches.slice(0, 4), true);
const warmItems = items.slice(0, 2000); // fewer when BENCH_ITEMS is smaller
await rawWs(raw.url, warmItems, false);
await viaClient(peer.url, "digest", [inputStream.bytes(batches.slice(0, 4))]);
await viaClient(server.url, "digest", [inputStream.bytes(batches.slice(0, 4))]);
await viaClient(inlineServer.url, "digest", [inputStream.bytes(batches.slice(0, 4))]);
await viaClient(server.url, "tally", [inputStream.strings(warmItems)], tallied(warmItems.length));
await viaClient(server.url, "reverse", [inputStream.strings(warmItems)]);

// BENCH_ONLY=strTally,strPeer runs only those rows (for profiling).
const only = process.env.BENCH_ONLY?.split(",");
/** Seconds of each row, one entry per round. */
const seconds = {};
for (let round = 0; round < ROUNDS; round++)
  for (const [name, run] of Object.entries(rows))
    if (only === undefined || only.includes(name)) (seconds[name] ??= []).push(await run());

if (process.env.BENCH_DEBUG) console.log(JSON.stringify(seconds));
await Promise.all([raw.close(), peer.close(), server.close(), inlineServer.close()]);
rmSync(dataDir, { recursive: true, force: true });

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};
/** Median rate over the rounds, and the median of each round's ratio to the raw row of the same round. */
const row = (label, name, rawName, units, unit) => {
  const times = seconds[name];
  if (times === undefined) return `${label.padEnd(48)} (not run)`;
  const rate = units / median(times);
  const base = seconds[rawName];
  const ratios = base === undefined ? [] : times.map((t, round) => base[round] / t);
  // The spread over the rounds says how far one run of this machine can be trusted.
  const ratio = ratios.length === 0 ? "" : `${median(ratios).toFixed(2).padStart(6)}x raw (rounds ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`;
  const cpuOf = (part) => (median(receiverCpu[name].map((round) => part(round))) / 1000 / units).toFixed(2);
  const cpu =
    receiverCpu[name] === undefined
      ? ""
      : `  receiver CPU ${cpuOf((r) => r.user + r.system)} ms/${unit.split("/")[0]} (user ${cpuOf((r) => r.user)}, system ${cpuOf((r) => r.system)})`;
  return `${label.padEnd(48)} ${rate.toFixed(rate >= 100 ? 0 : 1).padStart(10)} ${unit.padEnd(8)} ${ratio}${cpu}`;
};
console.log(
  `node ${process.version}, ${availableParallelism()} cores, loopback; sender in this process, receiver in a forked process ` +
    `(bench/peer.mjs); medians of ${ROUNDS} rounds, each running every row in turn (ratios: to raw ws of the same round); embedded server with SQLite synchronous=FULL (its default)`,
);
console.log(`stream<u8>, ${TOTAL_MIB} packed batches of 1 MiB, one way`);
console.log(row("  raw ws", "u8Raw", "u8Raw", TOTAL_MIB, "MiB/s"));
console.log(row("  client, ack-only peer", "u8Peer", "u8Raw", TOTAL_MIB, "MiB/s"));
console.log(row("  client + server + SQLite (digest)", "u8Server", "u8Raw", TOTAL_MIB, "MiB/s"));
console.log(row("    the same, payloads in SQLite pages", "u8Inline", "u8Raw", TOTAL_MIB, "MiB/s"));
console.log(`stream<string>, ${ITEMS} items of 64 bytes`);
console.log(row("  raw ws", "strRaw", "strRaw", ITEMS, "items/s"));
console.log(row("  client, ack-only peer (one way)", "strPeer", "strRaw", ITEMS, "items/s"));
console.log(row("  client + server + SQLite (tally, one way)", "strTally", "strRaw", ITEMS, "items/s"));
console.log(row("  client + server + SQLite (reverse, round trip)", "strReverse", "strRaw", ITEMS, "items/s"));
