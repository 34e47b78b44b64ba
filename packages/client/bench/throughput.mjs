/**
 * The method of the throughput benches, shared by `bench/run.mjs` (this
 * package) and `packages/store-postgres/bench/run.mjs` (the cluster rows):
 * forked receivers (`bench/peer.mjs`), the raw `ws` baseline, one invocation
 * through @golem-stream/client, rounds with every row once in turn, and the
 * printed rows (median rate, median of each round's ratio to the raw row of
 * the same round, receiver CPU). See docs/performance.md, How it is measured.
 */
import { createRequire } from "node:module";
import { fork } from "node:child_process";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { WebSocket } from "ws";
import { createClient, inputStream } from "@golem-stream/client";

export const MIB = 1024 * 1024;
export const ITEM = "x".repeat(64);
const ctor = { kind: "record", value: { fields: [{ kind: "string", value: "bench" }] } };
/** The demo `echo` agent every protocol row invokes. */
export const demo = { application: "demo", environment: "default", agentType: "echo", constructorParameters: ctor };

/** The sizes of a run, from BENCH_MIB, BENCH_ITEMS, BENCH_ROUNDS (defaults 64, 50000, 5 unless given), and the payloads. */
export function benchSizes(defaults = {}) {
  const totalMib = Number(process.env.BENCH_MIB ?? defaults.mib ?? 64);
  const itemCount = Number(process.env.BENCH_ITEMS ?? defaults.items ?? 50000);
  const rounds = Number(process.env.BENCH_ROUNDS ?? defaults.rounds ?? 5);
  const batch = new Uint8Array(MIB).fill(7);
  return {
    totalMib,
    itemCount,
    rounds,
    batches: Array.from({ length: totalMib }, () => batch),
    items: Array.from({ length: itemCount }, () => ITEM),
  };
}

export async function time(fn) {
  const start = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - start) / 1e9;
}

/** Forks `peer.mjs <mode> ...args` and resolves once it listens. */
export function startPeer(mode, ...args) {
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
        /** Sends `name` and resolves with the `name` member of the peer's answer (e.g. "yields" of `peer.mjs timed`). */
        request: (name) =>
          new Promise((r) => {
            child.once("message", (answer) => r(answer[name]));
            child.send(name);
          }),
        close: () => new Promise((r) => (child.once("exit", r), child.send("close"))),
      }),
    );
  });
}

// ---- raw ws: the ceiling ----

export async function rawWs(url, messages, isBinary, { batched = false } = {}) {
  const socket = new WebSocket(`${url}/?count=${messages.length}`, { perMessageDeflate: false });
  let tcp;
  socket.once("upgrade", (response) => (tcp = response.socket));
  await new Promise((resolve) => socket.once("open", resolve));
  const seconds = await time(async () => {
    const done = new Promise((resolve) => socket.once("message", resolve));
    // `batched`: the frames of a burst share socket writes of about 64 KiB, as
    // @golem-stream/client's are (ws-transport.ts), instead of a write each.
    let corked = false;
    let corkedBytes = 0;
    const uncork = () => {
      if (!corked) return;
      corked = false;
      corkedBytes = 0;
      tcp.uncork();
    };
    for (const message of messages) {
      if (batched && !corked) ((corked = true), tcp.cork());
      socket.send(message, { binary: isBinary });
      if (corked && (corkedBytes += message.length) >= 64 * 1024) uncork();
      // Respect the socket's buffer like any well-behaved producer.
      if (socket.bufferedAmount > 8 * MIB) {
        uncork();
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    uncork();
    await done;
  });
  socket.close();
  return seconds;
}

// ---- the protocol ----

/** One invocation of the demo agent through @golem-stream/client; `clientOptions` are added to createClient's. */
export async function viaClient(url, method, params, check, clientOptions = {}) {
  const client = createClient({ url, token: "t", ...clientOptions });
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

export const digestOf = (batches) => [inputStream.bytes(batches)];
export const tallyOf = (items) => [inputStream.strings(items)];

/** The tally result must count every item: a bench that loses items must not look fast. */
export const tallied = (expected) => (result) => {
  const [items, bytes] = result.value.value.fields.map((field) => field.value);
  if (items !== String(expected) || bytes !== String(expected * ITEM.length))
    throw new Error(`tally counted ${items} items, ${bytes} bytes`);
};

// ---- rounds and the report ----

/** Per row: each round's seconds, and the CPU its receivers and this (sending) process spent in each round. */
export function createMeasurements() {
  const seconds = {};
  const receiverCpu = {};
  const senderCpu = {};
  return {
    seconds,
    receiverCpu,
    senderCpu,
    /**
     * Runs `run` (resolving with seconds) and records what the receivers (one peer or several, e.g. two
     * cluster nodes) and this process (the sender: the client or the raw `ws` client) spent meanwhile,
     * in microseconds, all threads of each process.
     */
    async withCpu(name, receivers, run) {
      const list = Array.isArray(receivers) ? receivers : [receivers];
      const before = await Promise.all(list.map((r) => r.cpu()));
      const senderBefore = process.cpuUsage();
      const result = await run();
      const sender = process.cpuUsage(senderBefore);
      const after = await Promise.all(list.map((r) => r.cpu()));
      const sum = (part) => after.reduce((total, cpu, i) => total + cpu[part] - before[i][part], 0);
      (receiverCpu[name] ??= []).push({
        user: sum("user"),
        system: sum("system"),
        mainThread: sum("mainThread"),
        mainThreadWait: sum("mainThreadWait"),
      });
      (senderCpu[name] ??= []).push(sender.user + sender.system);
      return result;
    },
    /**
     * How fast the machine could run row `name` at all, as a ratio to `rawName`: the sender's and the
     * receivers' CPU of each round can at best spread over every core, so a round cannot take less
     * than their sum over `availableParallelism()`; the median over the rounds of the raw row's
     * seconds over that floor. A target above it cannot be met on this machine by any overlap, only
     * by spending less CPU.
     */
    cpuCeiling(name, rawName) {
      const base = seconds[rawName];
      const receivers = receiverCpu[name];
      const senders = senderCpu[name];
      if (base === undefined || receivers === undefined || senders === undefined) return undefined;
      const floors = receivers.map((r, round) => (r.user + r.system + senders[round]) / 1e6 / availableParallelism());
      return median(floors.map((floor, round) => base[round] / floor));
    },
    /**
     * `rounds` rounds, each running every row once in turn, in reverse order every other round
     * (BENCH_ONLY=a,b runs only those, for profiling); prints every round's seconds with BENCH_DEBUG.
     */
    async runRounds(rows, rounds) {
      const only = process.env.BENCH_ONLY?.split(",");
      // Odd rounds run the rows in reverse order, so that no row always follows the same one
      // (a row after a durable one can meet the disk still flushing its writes).
      for (let round = 0; round < rounds; round++)
        for (const [name, run] of round % 2 === 0 ? Object.entries(rows) : Object.entries(rows).reverse())
          if (only === undefined || only.includes(name)) (seconds[name] ??= []).push(await run());
      if (process.env.BENCH_DEBUG) console.log(JSON.stringify(seconds));
    },
    /** One printed row: median rate over the rounds, the median of each round's ratio to `rawName` of the same round, receiver CPU. */
    row(label, name, rawName, units, unit) {
      const times = seconds[name];
      if (times === undefined) return `${label.padEnd(48)} (not run)`;
      const rate = units / median(times);
      const base = seconds[rawName];
      const ratios = base === undefined ? [] : times.map((t, round) => base[round] / t);
      // The spread over the rounds says how far one run of this machine can be trusted.
      const ratio =
        ratios.length === 0
          ? ""
          : `${median(ratios).toFixed(2).padStart(6)}x raw (rounds ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`;
      // Per MiB in milliseconds; per item (far less) in microseconds.
      const perItem = unit.startsWith("items");
      const cpuOf = (part) =>
        (median(receiverCpu[name].map((round) => part(round))) / (perItem ? 1 : 1000) / units).toFixed(perItem ? 1 : 2);
      const cpu =
        receiverCpu[name] === undefined
          ? ""
          : `  receiver CPU ${cpuOf((r) => r.user + r.system)} ${perItem ? "µs/item" : `ms/${unit.split("/")[0]}`} (user ${cpuOf((r) => r.user)}, system ${cpuOf((r) => r.system)}${mainThreadOf(cpuOf)})` +
            (senderCpu[name] === undefined
              ? ""
              : `, sender ${(median(senderCpu[name]) / (perItem ? 1 : 1000) / units).toFixed(perItem ? 1 : 2)}`);
      return `${label.padEnd(48)} ${rate.toFixed(rate >= 100 ? 0 : 1).padStart(10)} ${unit.padEnd(8)} ${ratio}${cpu}`;
    },
  };
}

/**
 * ", main thread X (waited Y)": the receivers' main threads alone (their event loops, which bound a
 * node's rate; the rest is the thread pool's writes and syncs and the collector's helpers), and how
 * long they were ready to run but waited for a core, where /proc counts them. On a machine whose
 * cores the sender and the receivers' other threads share, a busy event loop's wait is rate the row
 * loses without spending any CPU (docs/performance.md, *The CPU ceiling*).
 */
function mainThreadOf(cpuOf) {
  const value = cpuOf((r) => r.mainThread);
  if (!Number.isFinite(Number(value))) return "";
  const wait = cpuOf((r) => r.mainThreadWait);
  return `, main thread ${value}${Number.isFinite(Number(wait)) ? ` (waited ${wait})` : ""}`;
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** The first line of a report. */

/**
 * Whether `ws` (as the client resolves it) loads the optional native `bufferutil`,
 * which masks and unmasks frames in C instead of JavaScript.
 */
export function bufferutilStatus() {
  if (process.env.WS_NO_BUFFER_UTIL) return "disabled (WS_NO_BUFFER_UTIL)";
  try {
    createRequire(createRequire(import.meta.url).resolve("ws"))("bufferutil");
    return "loaded (native frame masking)";
  } catch (error) {
    return `not loaded (${error.code ?? error.message}): ws masks frames in JavaScript`;
  }
}

export function header(rounds, stores) {
  return (
    `node ${process.version}, ${availableParallelism()} cores, bufferutil ${bufferutilStatus()}, loopback; sender in this process, receiver in a forked process ` +
    `(bench/peer.mjs); medians of ${rounds} rounds, each running every row in turn (ratios: to raw ws of the same round); ${stores}`
  );
}
