#!/usr/bin/env node
/**
 * Nodes lost while they work: three `golem-stream serve` processes on one PostgreSQL behind a
 * round-robin balancer (or one on SQLite), clients running the demo's methods through it without
 * pause, and a schedule that every few seconds cuts every client connection, freezes a node past
 * its lease, or kills one with SIGKILL and starts it again (same --node-id and port) a moment
 * later or at a later event (docs/cluster.md, "Under chaos"). Every
 * invocation's outcome is checked against what an undisturbed run returns: each output item
 * delivered once and in order, each input item taken once (the digest's SHA-256, the tally's
 * counts), the result. A soak, not a timing: it prints how many invocations of each method
 * ran and every one that came out wrong, and exits 1 if any did.
 *
 *   pnpm build && node bench/chaos.mjs                  # in packages/cli
 *   CHAOS_SECONDS=120 CHAOS_WORKERS=6 CHAOS_LEASE_TTL=2s node bench/chaos.mjs   # the defaults
 *   CHAOS_SEED=7 node bench/chaos.mjs                   # the same schedule of kills again
 *   CHAOS_EVENTS=cut node bench/chaos.mjs               # only cuts (or freeze, kill, drain; a list)
 *   CHAOS_STORE=sqlite node bench/chaos.mjs             # one node on SQLite, killed and started again on its data
 *
 * Each node's log (level warn) is kept in a temporary folder, named in the report, when a call
 * went wrong (always with CHAOS_KEEP_LOGS=1).
 */
import { spawn } from "node:child_process";
import { createWriteStream, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createClient, inputStream } from "@golem-stream/client";
import { startLocalPostgres } from "@golem-stream/store-postgres/local";
import { collect, fieldsOf, randomChunks, sha256, startTcpProxy, u32 } from "@golem-stream/test-support";

const SECONDS = Number(process.env.CHAOS_SECONDS ?? 120);
const WORKERS = Number(process.env.CHAOS_WORKERS ?? 6);
const LEASE_TTL = process.env.CHAOS_LEASE_TTL ?? "2s";
/** One node on SQLite (its data directory kept across its restarts) instead of three on PostgreSQL. */
const SQLITE = process.env.CHAOS_STORE === "sqlite";
/** What the schedule draws from, each as likely: a kill (weighted three), a freeze, a cut of every connection. */
const EVENTS = (process.env.CHAOS_EVENTS ?? "cut,freeze,kill,kill,kill").split(",");
const BIN = fileURLToPath(new URL("../dist/golem-stream.js", import.meta.url));
const TOKEN = "chaos-token-0123456789";
const dir = mkdtempSync(join(tmpdir(), "golem-stream-chaos-"));

/** A small seeded generator (mulberry32), so a schedule of kills can be run again. */
let seed = Number(process.env.CHAOS_SEED ?? Date.now() % 1_000_000);
const firstSeed = seed;
function random() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const between = (low, high) => low + random() * (high - low);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const range = (n, from = 0) => Array.from({ length: n }, (_, i) => from + i);
const record = (...fields) => ({ kind: "record", value: { fields } });

const demo = {
  application: "demo",
  environment: "default",
  agentType: "echo",
  constructorParameters: record({ kind: "string", value: "chaos" }),
};

// ---- the nodes ------------------------------------------------------------------------------

const nodes = new Map(); // id -> { id, port, child | undefined, log }

function nodeArgs(id, storeUrl, port) {
  const common = ["serve", "--token", TOKEN, "--log-level", "warn", "--port", String(port)];
  if (SQLITE) return [...common, "--data-dir", join(dir, "data")];
  return [
    ...common,
    "--store",
    storeUrl,
    "--keyring",
    join(dir, "keyring.json"),
    "--node-id",
    id,
    "--lease-ttl",
    LEASE_TTL,
    "--drain-timeout",
    "1s",
  ];
}

/** Starts node `id` (on `port`, 0 for any), resolved once it listens. */
function start(id, storeUrl, port) {
  const log = createWriteStream(join(dir, `${id}.log`), { flags: "a" });
  const child = spawn(process.execPath, [BIN, ...nodeArgs(id, storeUrl, port)], { stdio: ["ignore", "pipe", "pipe"] });
  child.stderr.pipe(log);
  return new Promise((resolve, reject) => {
    let text = "";
    let stderr = "";
    child.stderr.on("data", (chunk) => (stderr = (stderr + chunk).slice(-4000)));
    const failed = (code) => {
      process.exitCode = 1;
      reject(new Error(`node ${id} exited ${code} before it listened; the end of its log:\n${stderr}`));
    };
    child.once("exit", failed);
    child.stdout.on("data", (chunk) => {
      text += chunk;
      const match = /^listening on (\S+)$/m.exec(text);
      if (match === null) return;
      child.off("exit", failed);
      const node = { id, port: Number(new URL(match[1]).port), child, log };
      nodes.set(id, node);
      resolve(node);
    });
  });
}

async function kill(node) {
  const child = node.child;
  if (child === undefined) return;
  node.child = undefined;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
}

// ---- the calls ------------------------------------------------------------------------------

/** Reads a stream, pausing now and then, so items queue up and a loss forces replays. */
async function slowly(source, every = 8, ms = 2) {
  const out = [];
  for await (const item of source) {
    out.push(item);
    if (out.length % every === 0) await sleep(ms);
  }
  return out;
}

async function firstStream(call) {
  const result = await call.result;
  if (result.kind !== "value" || result.streams[0] === undefined) throw new Error("the result has no stream");
  return result.streams[0];
}

const reverseInput = range(400).map((i) => `item-${i}-${"xy".repeat(i % 13)}`);
const tallyInput = range(20000).map((i) => `t${i}-${"é".repeat(i % 9)}`);
const digestInput = randomChunks(4 * 1024 * 1024 + 333, 64 * 1024);

/** [name, call(client), what an undisturbed run returns, what a run whose owner was lost may return instead] */
const methods = [
  [
    "reverse",
    async (client) => {
      const call = client.invoke({ ...demo, method: "reverse", methodParameters: record(inputStream.strings(reverseInput)) });
      const items = await slowly((await firstStream(call)).values());
      await call.finished;
      return items.map((item) => item.value);
    },
    reverseInput.map((s) => Array.from(s).reverse().join("")),
  ],
  [
    "digest",
    async (client) => {
      const call = client.invoke({ ...demo, method: "digest", methodParameters: record(inputStream.bytes(digestInput.chunks)) });
      const result = await call.result;
      await call.finished;
      return result.kind === "value" ? fieldsOf(result.value).map((field) => field.value) : result;
    },
    [String(digestInput.all.length), sha256(digestInput.all)],
  ],
  [
    "count",
    async (client) => {
      const call = client.invoke({ ...demo, method: "count", methodParameters: record(u32(1500), u32(1)) });
      const items = await slowly((await firstStream(call)).values(), 16);
      await call.finished;
      return items.map((item) => item.value);
    },
    range(1500),
  ],
  [
    "tally",
    async (client) => {
      const call = client.invoke({ ...demo, method: "tally", methodParameters: record(inputStream.strings(tallyInput)) });
      const result = await call.result;
      await call.finished;
      return result.kind === "value" ? fieldsOf(result.value).map((field) => field.value) : result;
    },
    [String(tallyInput.length), String(tallyInput.reduce((sum, s) => sum + Buffer.byteLength(s), 0))],
  ],
  [
    "groups",
    async (client) => {
      const call = client.invoke({ ...demo, method: "groups", methodParameters: record(u32(4), u32(200)) });
      const names = [];
      const reads = [];
      for await (const group of (await firstStream(call)).values()) {
        const [name, items] = fieldsOf(group);
        names.push(name?.value);
        reads.push(slowly(call.stream(items).values(), 6, 1).then((out) => out.map((item) => item.value)));
      }
      const groups = await Promise.all(reads);
      await call.finished;
      return { names, groups };
    },
    { names: range(4).map((g) => `group-${g}`), groups: range(4).map(() => range(200)) },
  ],
  [
    "fail",
    async (client) => {
      const call = client.invoke({ ...demo, method: "fail", methodParameters: record(u32(60)) });
      const seen = [];
      let error;
      try {
        for await (const item of (await firstStream(call)).values()) {
          seen.push(item.value);
          if (seen.length % 7 === 0) await sleep(2);
        }
      } catch (e) {
        error = e;
      }
      const finished = await call.finished.then(
        (outcome) => outcome.kind,
        (e) => `${e.kind}:${e.code}`,
      );
      // Not replayable (durability "none"): an owner lost while it runs fails it, and the
      // client sees that instead of the producer's error. The items before are still its.
      if (finished !== "success") return seen.every((value, i) => value === i) ? "lost with its owner" : { seen, finished };
      return { seen, error: `${error?.kind}:${error?.code}`, finished };
    },
    { seen: range(60), error: "stream-failed:producer-error", finished: "success" },
    "lost with its owner",
  ],
];

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/** What ended connections, over the whole run: `reconnecting` causes, counted. */
const causes = new Map();

/** `client` whose invocations write what happens to them into `trace` (for a call that comes out wrong). */
function traced(client, trace) {
  const at = () => new Date().toISOString().slice(11, 23);
  return {
    invoke(options) {
      const call = client.invoke(options);
      call.on("accepted", (e) => trace.push(`${at()} accepted ${e.operation} ${e.attemptId}${e.replayed ? " (replayed)" : ""}`));
      call.on("reconnecting", (e) => {
        trace.push(`${at()} reconnecting after ${e.cause} (failure ${e.failures})`);
        causes.set(e.cause, (causes.get(e.cause) ?? 0) + 1);
      });
      call.on("revoked", () => trace.push(`${at()} revoked`));
      return call;
    },
  };
}

/** Where two results first differ, for the report. */
function firstDifference(got, expected) {
  const a = JSON.stringify(got);
  const b = JSON.stringify(expected);
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  return `at character ${i}: got …${a.slice(Math.max(0, i - 40), i + 80)}… expected …${b.slice(Math.max(0, i - 40), i + 80)}…`;
}

// ---- the run --------------------------------------------------------------------------------

const tallies = new Map(methods.map(([name]) => [name, { ok: 0, lost: 0, wrong: 0, failed: 0 }]));
const problems = [];
let running = true;
/** The method each worker is running, undefined between calls: what a kill lands on. */
const inFlight = [];
let hitByKills = 0;

async function worker(index, url) {
  for (let n = 0; running; n++) {
    const [name, call, expected, lost] = methods[Math.floor(random() * methods.length)];
    const trace = [];
    const client = traced(createClient({ url, token: TOKEN, reconnect: { initialDelayMs: 20, maxDelayMs: 500, maxAttempts: 400 } }), trace);
    const startedAt = Date.now();
    const label = () => `${name} (worker ${index}, call ${n}, ended ${new Date().toISOString()} after ${Date.now() - startedAt} ms)`;
    inFlight[index] = name;
    try {
      const got = await call(client);
      if (same(got, expected)) tallies.get(name).ok++;
      else if (lost !== undefined && same(got, lost)) tallies.get(name).lost++;
      else {
        tallies.get(name).wrong++;
        problems.push(`${label()}: wrong result ${firstDifference(got, expected)}\n      ${trace.join("\n      ")}`);
      }
    } catch (error) {
      tallies.get(name).failed++;
      problems.push(
        `${label()}: ${error?.kind ?? ""} ${error?.code ?? ""} ${String(error?.message ?? error)}\n      ${trace.join("\n      ")}`,
      );
    }
    inFlight[index] = undefined;
  }
}

/**
 * Every 1.5–4 s one of: every client connection cut; a node frozen (SIGSTOP) for 0.5–5 s; a node
 * killed and started again after 0–3 s, or at a later event. One node always runs.
 */
async function schedule(storeUrl, events, balancer) {
  const down = new Set();
  const end = Date.now() + SECONDS * 1000;
  while (Date.now() < end) {
    await sleep(between(1500, 4000));
    const live = [...nodes.values()].filter((node) => node.child !== undefined);
    const event = EVENTS[Math.floor(random() * EVENTS.length)];
    if (event === "cut") {
      // Every client connection cut at once: each client reconnects, through the balancer, elsewhere.
      hitByKills += inFlight.filter((name) => name !== undefined).length;
      balancer.cutOpen();
      events.push(`${new Date().toISOString()} cut every connection`);
      continue;
    }
    if (event === "freeze") {
      // A node frozen, not dead (a long GC pause, a stopped VM): past its lease, others claim its work.
      const victim = live[Math.floor(random() * live.length)];
      hitByKills += inFlight.filter((name) => name !== undefined).length;
      const ms = between(500, 5000);
      victim.child.kill("SIGSTOP");
      events.push(`${new Date().toISOString()} froze ${victim.id} for ${ms.toFixed(0)} ms`);
      await sleep(ms);
      victim.child?.kill("SIGCONT");
      continue;
    }
    if (event === "drain" && live.length > 0) {
      // A graceful stop (SIGTERM): the node's clients move on, and what it still runs at its
      // --drain-timeout goes to the others (replayable) or fails (`fail`); then it comes back.
      const victim = live[Math.floor(random() * live.length)];
      hitByKills += inFlight.filter((name) => name !== undefined).length;
      const child = victim.child;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
      victim.child = undefined;
      events.push(`${new Date().toISOString()} drained ${victim.id}`);
      await sleep(between(0, 2000));
      await start(victim.id, storeUrl, victim.port);
      events.push(`${new Date().toISOString()} started ${victim.id}`);
      continue;
    }
    if (live.length > 1 || (SQLITE && live.length === 1)) {
      const victim = live[Math.floor(random() * live.length)];
      hitByKills += inFlight.filter((name) => name !== undefined).length;
      await kill(victim);
      events.push(`${new Date().toISOString()} killed ${victim.id}`);
      down.add(victim.id);
      // Alone, the node is always started again: nothing else could serve the clients.
      if (SQLITE || random() < 0.6) {
        await sleep(between(0, 3000));
        await start(victim.id, storeUrl, victim.port);
        events.push(`${new Date().toISOString()} started ${victim.id}`);
        down.delete(victim.id);
        continue;
      }
    }
    // A node left down comes back now.
    for (const id of [...down]) {
      if (down.size + 1 > nodes.size - 1 || random() < 0.5) {
        await start(id, storeUrl, nodes.get(id).port);
        events.push(`${new Date().toISOString()} started ${id}`);
        down.delete(id);
      }
    }
  }
}

let postgres;
let balancer;
try {
  let storeUrl;
  if (SQLITE) await start("node-a", undefined, 0);
  else {
    postgres = await startLocalPostgres({ settings: { fsync: "on", synchronous_commit: "on" } });
    storeUrl = await postgres.createDatabase("chaos");
    for (const id of ["node-a", "node-b", "node-c"]) await start(id, storeUrl, 0);
  }
  balancer = await startTcpProxy({ upstream: [...nodes.values()].map(({ id, port }) => ({ id, port })) });
  const where = SQLITE ? "one node on SQLite" : `3 nodes on PostgreSQL (--lease-ttl ${LEASE_TTL})`;
  console.log(`chaos: ${WORKERS} clients through a balancer to ${where} for ${SECONDS} s, events from seed ${firstSeed}; logs in ${dir}`);
  const events = [];
  const workers = range(WORKERS).map((i) => worker(i, balancer.url));
  const forgetting = setInterval(() => balancer.forget(), 5000);
  await schedule(storeUrl, events, balancer);
  // Every node back, then the calls under way finish.
  for (const node of nodes.values()) if (node.child === undefined) await start(node.id, storeUrl, node.port);
  running = false;
  await Promise.all(workers);
  clearInterval(forgetting);
  const kinds = ["killed", "froze", "cut", "drained"].map((word) => `${events.filter((e) => e.includes(` ${word} `)).length} ${word}`);
  console.log(`events: ${kinds.join(", ")}; ${hitByKills} calls in flight at one (at one node or another)`);
  for (const [name, { ok, lost, wrong, failed }] of tallies) {
    console.log(`  ${name.padEnd(8)} ${ok} right, ${lost} lost with their owner (not replayable), ${wrong} wrong, ${failed} failed`);
  }
  console.log(`connections ended by: ${[...causes].map(([cause, count]) => `${cause} ${count}`).join(", ")}`);
  for (const problem of problems) console.log(`  PROBLEM ${problem}`);
  if (problems.length > 0) {
    console.log(`events:\n  ${events.join("\n  ")}`);
    process.exitCode = 1;
  }
} finally {
  await balancer?.close();
  await Promise.all([...nodes.values()].map(kill));
  await postgres?.stop();
  if (process.exitCode !== 1 && process.env.CHAOS_KEEP_LOGS === undefined) rmSync(dir, { recursive: true, force: true });
}
