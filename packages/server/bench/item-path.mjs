#!/usr/bin/env node
/**
 * The server's small-item path after the socket: CPU per 64-byte `tally`
 * item from `Connection.receive` of the message's bytes to the ACK (strict
 * decode, validation, routing, the SQLite store's group commit, the demo
 * agent), without `ws`, a socket or a client process beside it, the event
 * loop's delay meanwhile (p99 and longest turn: how long a message on
 * another connection could have waited), and the bytes the store wrote per
 * item (WAL, checkpoints; the item itself is about 94 bytes as stored). For
 * this checkout's build and, optionally, another build's, alternating in
 * fresh processes round by round.
 *
 *   node bench/item-path.mjs [/path/to/other/packages/server/dist/index.js]
 *   ITEMS=200000 ROUNDS=9 BURST=400 SYNCHRONOUS=full node bench/item-path.mjs ...
 *   PROFILE=/tmp/item-path.cpuprofile node bench/item-path.mjs --child dist/index.js
 *       # one run of one build, its measured part profiled (for packages/client/bench/profile-budget.mjs)
 *       # PROFILE_INTERVAL_US=100: a sample every 100 µs instead of V8's 1 ms, for short runs
 *
 * Why: the loopback benches (`packages/client/bench/baselines.mjs`) share two
 * cores between the client, the server and the socket, and their rounds move
 * by ±20 %. Here only the server's own work runs, fed as `ws` feeds it (BURST
 * messages per turn of the event loop, about one 64 KiB socket read, each a
 * view of one buffer as `ws` hands over views of a socket's chunk), within the
 * client's window (8 MiB unacknowledged) and the server's pauses of reading;
 * the same build measured against itself came within ±6 % in nine rounds.
 * The store runs at `synchronous: "normal"` unless SYNCHRONOUS=full: the
 * WAL's sync is the disk's time more than the server's CPU, and its system
 * time moved the same build's rounds by ±15 %. The other build must have this
 * one's internal module layout (transport/connection.js, admission/, demo/):
 * a build from the same history does.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { randomUUID } from "node:crypto";
import { Session } from "node:inspector/promises";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Keyring } from "@golem-stream/tokens";
import { decodeServerMessage, encodeMessage } from "@golem-stream/wire";

const ITEMS = Number(process.env.ITEMS ?? 100000);
const ROUNDS = Number(process.env.ROUNDS ?? 7);
/** Messages handed over per turn of the event loop: about what one 64 KiB socket read holds. */
const BURST = Number(process.env.BURST ?? 400);
/** The client's default unacknowledged input per stream (decisions-v1). */
const WINDOW_BYTES = 8 * 1024 * 1024;
const WARM_ITEMS = 20000;
const SYNCHRONOUS = process.env.SYNCHRONOUS ?? "normal";
const HERE = fileURLToPath(new URL("../dist/index.js", import.meta.url));

/** One run of `build`'s server path: a tally invocation fed WARM_ITEMS, then ITEMS measured. */
async function measure(build) {
  const dist = dirname(build);
  const load = (path) => import(pathToFileURL(join(dist, path)).href);
  const { SqliteSessionStore, resolveLimits, silentLogger } = await load("index.js");
  const { createDemoHost } = await load("demo/index.js");
  const { Connection } = await load("transport/connection.js");
  const { SessionRuntime } = await load("admission/session-runtime.js");
  const { StoredBytesTable } = await load("admission/stored-bytes.js");
  const { TokenService } = await load("admission/token-service.js");
  const { NodeBudget } = await load("invocation/node-budget.js");
  const { NOOP_OBSERVER } = await load("observability/server-observer.js");
  const { SYSTEM_TIMERS } = await load("timers.js");
  const { encodeOutgoing } = await load("transport/transport.js");

  const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-item-path-"));
  // Removed however the run ends, a failed check of the result included.
  process.on("exit", () => rmSync(dataDir, { recursive: true, force: true }));
  const store = new SqliteSessionStore({ dataDir, synchronous: SYNCHRONOUS });
  const limits = resolveLimits({});
  const runtime = new SessionRuntime(
    {
      store,
      cluster: undefined,
      host: createDemoHost(),
      tokens: new TokenService(Keyring.generate(), { issuer: "bench", audience: "bench" }),
      limits,
      logger: silentLogger,
      observer: NOOP_OBSERVER,
      now: Date.now,
      timers: SYSTEM_TIMERS,
      nodeBudget: new NodeBudget(limits.maxQueuedBytesPerNode),
      storedBytes: new StoredBytesTable(limits.maxStoredBytesPerPrincipal, () => undefined),
    },
    () => true,
  );
  const transport = new BenchTransport(encodeOutgoing);
  const connection = new Connection(transport, { account: "bench", principal: "bench" }, runtime);
  const receive = (message) => {
    const data = encodeMessage(message);
    connection.receive(typeof data === "string" ? Buffer.from(data) : data, typeof data !== "string");
  };
  const stream = { kind: "stream", value: { provisionalRef: randomUUID() } };
  receive({
    type: "invocationStart",
    attemptId: randomUUID(),
    config: [],
    idempotencyKey: randomUUID(),
    methodParameters: { kind: "record", value: { fields: [stream] } },
    selector: {
      agentType: "echo",
      application: "demo",
      constructorParameters: { kind: "record", value: { fields: [{ kind: "string", value: "bench" }] } },
      environment: "default",
      method: "tally",
    },
  });
  await transport.until(() => transport.accepted !== undefined);
  const channel = transport.accepted.mappings[0].channel;
  // The messages as a client encodes them, made before the clock starts (only the server's work is
  // measured), back to back in one buffer: each is handed over as a view of it, as `ws` hands over
  // a view of the socket's chunk, and no object per message lives through the run.
  const value = { kind: "string", value: "x".repeat(64) };
  const total = WARM_ITEMS + ITEMS;
  const texts = [];
  for (let i = 0; i < total; i++) texts.push(encodeMessage({ type: "inputStreamItem", channel, sequence: BigInt(i), value }));
  const all = Buffer.from(texts.join(""));
  const starts = new Uint32Array(total + 1);
  for (let i = 0; i < total; i++) starts[i + 1] = starts[i] + Buffer.byteLength(texts[i]);
  texts.length = 0;
  const bytes = all.length / total;
  const feed = async (from, to) => {
    let next = from;
    while (next < to) {
      if (transport.paused) await transport.resumed();
      // The client's window: no more than WINDOW_BYTES beyond the last acknowledged item.
      if ((next - transport.acked) * bytes >= WINDOW_BYTES) {
        await transport.until(() => (next - transport.acked) * bytes < WINDOW_BYTES);
        continue;
      }
      const end = Math.min(to, next + BURST);
      while (next < end && !transport.paused) {
        connection.receive(all.subarray(starts[next], starts[next + 1]), false);
        next++;
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    await transport.until(() => transport.acked >= to);
  };
  await feed(0, WARM_ITEMS);
  const profiler = process.env.PROFILE === undefined ? undefined : await startProfiler();
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  const writtenBefore = bytesWritten();
  const started = process.cpuUsage();
  const loopStarted = mainThreadTicks();
  await feed(WARM_ITEMS, WARM_ITEMS + ITEMS);
  const used = process.cpuUsage(started);
  const loopTicks = mainThreadTicks() - loopStarted;
  const written = bytesWritten() - writtenBefore;
  delay.disable();
  if (profiler !== undefined) {
    const { profile } = await profiler.post("Profiler.stop");
    writeFileSync(process.env.PROFILE, JSON.stringify(withoutInspector(profile)));
  }
  receive({ type: "inputStreamEnd", channel, sequence: BigInt(WARM_ITEMS + ITEMS) });
  await transport.until(() => transport.closedWith !== undefined);
  // Checked, as every bench's result is: tally counted every item and every byte.
  const counted = JSON.stringify(transport.result, (_key, v) => (typeof v === "bigint" ? String(v) : v));
  if (!counted.includes(`{"kind":"u64","value":"${total}"},{"kind":"u64","value":"${total * 64}"}`)) {
    throw new Error(`tally's result is not ${total} items of 64 bytes: ${counted}`);
  }
  await store.close();
  return {
    microsPerItem: (used.user + used.system) / ITEMS,
    userPerItem: used.user / ITEMS,
    // The main thread's alone (clock ticks of 10 ms): what bounds a node's rate, where the
    // process's CPU also counts the thread pool's writes and syncs and the collector's helpers.
    loopPerItem: (loopTicks * 1e6) / TICKS_PER_SECOND / ITEMS,
    // The longest turns: how long a message on another connection could have waited.
    delayP99: delay.percentile(99) / 1e6,
    delayMax: delay.max / 1e6,
    // What the store hands the kernel per item (WAL, checkpoints, payload files): NaN off Linux.
    writtenPerItem: written / ITEMS,
  };
}

/** The kernel's clock ticks per second, as /proc counts a thread's CPU time (USER_HZ: 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** CPU ticks of this process's main thread so far (user + system, /proc/thread-self/stat): NaN where there is no /proc. */
function mainThreadTicks() {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, "utf8");
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return Number.NaN;
  }
}

/**
 * Bytes this process has passed to `write` and its kin so far (`wchar` of /proc/self/io, every
 * thread): unlike CPU time it does not move with the machine's load, so a change to how the store
 * lays out its writes shows in it exactly. NaN where there is no /proc.
 */
function bytesWritten() {
  try {
    const match = /^wchar: (\d+)$/m.exec(readFileSync("/proc/self/io", "utf8"));
    return match === null ? Number.NaN : Number(match[1]);
  } catch {
    return Number.NaN;
  }
}

/** The inspector's CPU profiler, started: only the measured part is in the profile, not the setup. */
async function startProfiler() {
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  // Finer than V8's default (1 ms) for short runs: PROFILE_INTERVAL_US=100.
  if (process.env.PROFILE_INTERVAL_US !== undefined)
    await session.post("Profiler.setSamplingInterval", { interval: Number(process.env.PROFILE_INTERVAL_US) });
  await session.post("Profiler.start");
  return session;
}

/**
 * The profile without the samples taken inside the inspector's own `post` (stopping the profiler
 * took a fifth of a run's samples), so that a stage's share is of the server's work alone.
 */
function withoutInspector(profile) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const inspector = new Set();
  const mark = (node, inside) => {
    const here = inside || node.callFrame.url === "node:inspector";
    if (here) inspector.add(node.id);
    for (const child of node.children ?? []) mark(byId.get(child), here);
  };
  mark(profile.nodes[0], false);
  const kept = profile.samples.map((id, i) => [id, profile.timeDeltas[i]]).filter(([id]) => !inspector.has(id));
  return { ...profile, samples: kept.map(([id]) => id), timeDeltas: kept.map(([, delta]) => delta) };
}

/** What the server sends, kept only as far as the bench needs it: the acceptance, the items acknowledged, the result, the close. */
class BenchTransport {
  /** Items acknowledged: one more than the last ACK's highest contiguous sequence. */
  acked = 0;
  accepted = undefined;
  /** The `invocationResult`, decoded. */
  result = undefined;
  paused = false;
  closedWith = undefined;
  #encode;
  #waiters = [];
  #resume = [];

  constructor(encode) {
    this.#encode = encode;
  }
  get isOpen() {
    return this.closedWith === undefined;
  }
  send(message) {
    if (message.type === "inputStreamAck") this.acked = Number(message.highestContiguousSequence) + 1;
    else if (message.type === "invocationAccepted") this.accepted = decodeServerMessage(this.#encode(message), false);
    else if (message.type === "invocationResult") this.result = decodeServerMessage(this.#encode(message), false);
    this.#wake();
    return Promise.resolve();
  }
  close(code) {
    this.closedWith = code;
    this.#wake();
  }
  pauseReading() {
    this.paused = true;
  }
  resumeReading() {
    this.paused = false;
    for (const wake of this.#resume.splice(0)) wake();
  }
  resumed() {
    return new Promise((resolve) => this.#resume.push(resolve));
  }
  /** Resolves once `ready()` holds, checked again whenever the server sends or closes. */
  async until(ready) {
    while (!ready()) await new Promise((resolve) => this.#waiters.push(resolve));
  }
  #wake() {
    for (const wake of this.#waiters.splice(0)) wake();
  }
}

if (process.argv[2] === "--child") {
  console.log(JSON.stringify(await measure(process.argv[3])));
  process.exit(0);
}

const other = process.argv[2];
const builds = other === undefined ? { here: HERE } : { here: HERE, other };
const results = {};
const loadBefore = loadavg()[0];
for (let round = 0; round < ROUNDS; round++) {
  // Alternating which build goes first, so neither always runs on a machine the other warmed.
  const order = round % 2 === 0 ? Object.entries(builds) : Object.entries(builds).reverse();
  for (const [name, path] of order) {
    const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), "--child", path], { encoding: "utf8" });
    (results[name] ??= []).push(JSON.parse(out));
  }
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const range = (values) => `${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)}`;
console.log(
  `server item path (no socket), ${ITEMS} tally items of 64 bytes, ${BURST} per turn, ${ROUNDS} rounds, SQLite synchronous=${SYNCHRONOUS}, load average ${loadBefore.toFixed(1)} → ${loadavg()[0].toFixed(1)}: CPU µs per item, median (range)`,
);
for (const [name, runs] of Object.entries(results)) {
  const cpu = runs.map((r) => r.microsPerItem);
  const user = runs.map((r) => r.userPerItem);
  const loop = runs.map((r) => r.loopPerItem);
  const p99 = runs.map((r) => r.delayP99);
  const max = runs.map((r) => r.delayMax);
  const written = runs.map((r) => r.writtenPerItem);
  console.log(
    `  ${name.padEnd(5)} ${median(cpu).toFixed(2)} (${range(cpu)}), user ${median(user).toFixed(2)}, main thread ${median(loop).toFixed(2)} (${range(loop)}); event-loop delay p99 ${median(p99).toFixed(1)} ms, max ${median(max).toFixed(1)} ms (${range(max)}); written ${median(written).toFixed(0)} B per item`,
  );
}
if (results.other !== undefined) {
  const ratio = (key) => results.here.map((r, i) => results.other[i][key] / r[key]);
  const show = (values) => `${median(values).toFixed(3)}x (${range(values)})`;
  console.log(
    `  other/here ${show(ratio("microsPerItem"))}, user ${show(ratio("userPerItem"))}, main thread ${show(ratio("loopPerItem"))}: above 1, this checkout's server spends less per item`,
  );
}
