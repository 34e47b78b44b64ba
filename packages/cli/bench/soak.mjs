#!/usr/bin/env node
/**
 * Soak of a real `golem-stream serve`: many idle sessions, churn and a few
 * hostile clients for minutes; do the server's RSS and event-loop lag stay
 * flat? (docs/operations.md, "Limits and abuse", Measured.)
 *
 *   node bench/soak.mjs                               # 10 000 idle, 5 minutes (build first)
 *   node bench/soak.mjs --connections 2000 --minutes 2 --warmup 30
 *   flags: --connections N  idle sessions (10000)      --minutes M   soak after they are open (5)
 *          --warmup S       seconds not judged (60)    --sample S    seconds between samples (5)
 *          --churn R        churn invocations a second (20)
 *          --hostile K      clients of each hostile kind (4)
 *          --tokens T       principals (static tokens) the idle sessions are spread over (40)
 *
 * The server: `serve --token-file` (T tokens: each static token is its own
 * principal, so the idle sessions stay under the per-principal defaults of
 * 1000 connections and 500 running invocations), `--max-connections`
 * N + 1000 (the default 10 000 would refuse the churn beside 10 000 idle
 * sessions), `--metrics`; every other limit its default (pings every 30 s,
 * first message within 30 s, the auth throttle).
 *
 * Three client processes, each with a raised descriptor limit:
 *   idle    — N authenticated sessions (`reverse` of an input stream that is
 *             never written to), opened 50 at a time from 8 source addresses
 *             (127.0.4.x, against ephemeral-port exhaustion), then kept: they
 *             answer the server's pings and nothing else. A lost one is counted.
 *   churn   — R a second: connect (127.0.3.x), start `count` to 3, read to
 *             `invocationFinished` and the server's close. Latency (whole
 *             cycle, and the connect alone) and failures.
 *   hostile — K silent sockets (authenticated, never speak: closed by the
 *             first-message timeout, then opened again); K non-ponging
 *             sessions (a `reverse` start, then no pong: dropped after two
 *             unanswered pings, then opened again — each leaves a detached
 *             session behind, as a real one would); refused upgrades, K loops
 *             paced at 20 a second each: bearer-entry upgrades without Origin whose close
 *             is never answered (from 127.1.x.y), and wrong tokens from one
 *             address (127.0.2.1, throttled).
 *
 * Every `--sample` seconds this process reads the server's /metrics: RSS, JS
 * heap, event-loop delay over the interval (prom-client's histogram, reset at
 * each read: p50, p99, max, less the 10 ms period of Node's sampling timer),
 * time spent in major (mark-compact) garbage collection and the server's CPU
 * (% of one core) since the last read,
 * open session sockets, running invocations, open descriptors. The verdict compares the first minute after `--warmup` with
 * the last minute: flat when the RSS median grew less than 10 % and the lag
 * p99 median grew less than 50 % or 20 ms.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { randomBytes } from "node:crypto";
import {
  bearerEntryHeaders,
  bufferutilStatus,
  countStart,
  descriptorLimit,
  hostileUpgrade,
  idleStart,
  loopDelayMs,
  metricSum,
  nextOf,
  openSession,
  quantile,
  scrapeMetrics,
  spawnNode,
  startServe,
  stop,
  tally,
  wrongTokenHeaders,
} from "./abuse-kit.mjs";

const SELF = fileURLToPath(import.meta.url);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const roles = { idle, churn, hostile };
const role = roles[process.argv[2]];
if (role === undefined) await main();
else {
  const report = await role(JSON.parse(process.argv[3]));
  // The parent asks for a report whenever it samples, and says when to stop.
  process.on("message", async (message) => {
    if (message === "report") process.send(report(false));
    if (message === "stop") process.send(report(true), () => process.exit(0));
  });
  process.send("ready");
}

/** Round-robin over a list. */
function cycle(list) {
  let next = 0;
  return () => list[next++ % list.length];
}

/** The idle role: opens `connections` sessions, 50 at a time; returns its reporter. */
async function idle({ url, tokens, connections }) {
  const token = cycle(tokens);
  const address = cycle(Array.from({ length: 8 }, (_, i) => `127.0.4.${i + 1}`));
  const refused = [];
  let open = 0;
  let lost = 0;
  const one = async () => {
    const opened = await openSession(url, token(), { localAddress: address() });
    if (opened.refused !== undefined) return refused.push(opened.refused);
    opened.socket.send(idleStart());
    const answer = await nextOf(opened.socket, "invocationAccepted", "invocationRejected");
    if (answer !== "invocationAccepted") return refused.push(answer);
    open++;
    opened.socket.once("close", () => {
      open--;
      lost++;
    });
  };
  const started = performance.now();
  for (let at = 0; at < connections; at += 50) await Promise.all(Array.from({ length: Math.min(50, connections - at) }, one));
  const seconds = (performance.now() - started) / 1000;
  return () => ({ open, lost, refused: tally(refused), openedInSeconds: seconds });
}

/** The churn role: `rate` connect-start-finish-close cycles a second; returns its reporter. */
async function churn({ url, tokens, rate }) {
  const token = cycle(tokens);
  const address = cycle(Array.from({ length: 16 }, (_, i) => `127.0.3.${i + 1}`));
  let latencies = [];
  let connects = [];
  const failures = [];
  let done = 0;
  let stopping = false;
  const one = async () => {
    const begin = performance.now();
    const opened = await openSession(url, token(), { localAddress: address() });
    if (opened.refused !== undefined) return failures.push(`upgrade ${opened.refused}`);
    connects.push(opened.ms);
    opened.socket.send(countStart(3));
    const answer = await nextOf(opened.socket, "invocationFinished", "invocationRejected");
    if (answer !== "invocationFinished") failures.push(answer);
    else {
      latencies.push(performance.now() - begin);
      done++;
    }
    opened.socket.close();
  };
  // Paced, not back to back: a steady load whose cost shows in the server's lag.
  void (async () => {
    const period = 1000 / rate;
    let next = performance.now();
    while (!stopping) {
      void one();
      next += period;
      await sleep(Math.max(0, next - performance.now()));
    }
  })();
  return (final) => {
    stopping ||= final;
    const sorted = latencies.sort((a, b) => a - b);
    const connected = connects.sort((a, b) => a - b);
    latencies = [];
    connects = [];
    return {
      done,
      failures: tally(failures),
      p50: quantile(sorted, 0.5),
      p99: quantile(sorted, 0.99),
      connectP99: quantile(connected, 0.99),
    };
  };
}

/** The hostile role: silent and non-ponging clients kept at `count` each, and refused upgrades; returns its reporter. */
async function hostile({ url, port, tokens, count }) {
  const token = cycle(tokens);
  const closes = { silent: [], nonPonging: [] };
  const refusals = [];
  let stopping = false;
  const keep = async (kind) => {
    while (!stopping) {
      const opened = await openSession(url, token(), { localAddress: "127.0.5.1", autoPong: kind === "silent" });
      if (opened.refused !== undefined) {
        closes[kind].push(`upgrade ${opened.refused}`);
        await sleep(1000);
        continue;
      }
      if (kind === "nonPonging") opened.socket.send(idleStart());
      const code = await new Promise((resolve) => opened.socket.once("close", resolve));
      closes[kind].push(String(code));
    }
  };
  let nextAddress = 0;
  const refuse = async (i) => {
    while (!stopping) {
      const entry = i % 2 === 0;
      const address = entry ? `127.1.${(nextAddress >> 8) & 255}.${1 + (nextAddress++ % 254)}` : "127.0.2.1";
      refusals.push(await hostileUpgrade(port, address, entry ? bearerEntryHeaders() : wrongTokenHeaders()));
      await sleep(50);
    }
  };
  for (let i = 0; i < count; i++) {
    void keep("silent");
    void keep("nonPonging");
    void refuse(i);
  }
  return (final) => {
    stopping ||= final;
    return { silent: tally(closes.silent), nonPonging: tally(closes.nonPonging), refused: tally(refusals) };
  };
}

/** Starts a role in its own process; resolves once it is ready, with `ask(message)` for its reports. */
async function startRole(name, settings) {
  const child = spawnNode([SELF, name, JSON.stringify(settings)], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  await new Promise((resolve, reject) => {
    child.once("message", resolve);
    child.once("exit", (code) => reject(new Error(`${name} exited ${code}`)));
  });
  child.removeAllListeners("exit");
  const ask = (message) =>
    new Promise((resolve) => {
      child.once("message", resolve);
      child.send(message);
    });
  return { child, ask };
}

async function main() {
  const { values: flags } = parseArgs({
    options: {
      connections: { type: "string", default: "10000" },
      minutes: { type: "string", default: "5" },
      warmup: { type: "string", default: "60" },
      sample: { type: "string", default: "5" },
      churn: { type: "string", default: "20" },
      hostile: { type: "string", default: "4" },
      tokens: { type: "string", default: "40" },
    },
  });
  const connections = Number(flags.connections);
  const soakMs = Number(flags.minutes) * 60_000;
  const warmupMs = Number(flags.warmup) * 1000;
  const sampleMs = Number(flags.sample) * 1000;

  const dir = mkdtempSync(join(tmpdir(), "golem-stream-soak-"));
  const tokens = Array.from({ length: Number(flags.tokens) }, () => randomBytes(24).toString("base64url"));
  const tokenFile = join(dir, "tokens");
  writeFileSync(tokenFile, `${tokens.join("\n")}\n`);
  chmodSync(tokenFile, 0o600);
  const server = await startServe([
    "--token-file",
    tokenFile,
    "--data-dir",
    join(dir, "data"),
    "--max-connections",
    String(connections + 1000),
  ]);
  const samples = [];
  const began = performance.now();
  let gcBefore = 0;
  let cpuBefore = { seconds: 0, at: 0 };
  const sample = async (phase, roles) => {
    const metrics = await scrapeMetrics(server.url);
    const reports = Object.fromEntries(await Promise.all(Object.entries(roles).map(async ([name, r]) => [name, await r.ask("report")])));
    const row = {
      phase,
      at: (performance.now() - began) / 1000,
      rss: metricSum(metrics, "process_resident_memory_bytes") / 2 ** 20,
      heap: metricSum(metrics, "nodejs_heap_size_used_bytes") / 2 ** 20,
      lagP50: loopDelayMs(metrics, "p50"),
      lagP99: loopDelayMs(metrics, "p99"),
      lagMax: loopDelayMs(metrics, "max"),
      sockets: metricSum(metrics, "golem_stream_connections_open"),
      running: metricSum(metrics, "golem_stream_sessions_running"),
      fds: metricSum(metrics, "process_open_fds"),
      // Seconds of major (mark-compact) collection since the previous sample.
      gc: metricSum(metrics, `nodejs_gc_duration_seconds_sum{kind="major"}`) - gcBefore,
      reports,
    };
    gcBefore += row.gc;
    // The server's CPU (user + system) over the interval, in % of one core.
    const cpuNow = { seconds: metricSum(metrics, "process_cpu_seconds_total"), at: row.at };
    row.cpu = (100 * (cpuNow.seconds - cpuBefore.seconds)) / (cpuNow.at - cpuBefore.at);
    cpuBefore = cpuNow;
    samples.push(row);
    const f = (value, digits = 0) => (Number.isNaN(value) ? "-" : value.toFixed(digits));
    const churned =
      reports.churn === undefined
        ? ""
        : `  churn ${reports.churn.done} p99 ${f(reports.churn.p99)} ms (connect p99 ${f(reports.churn.connectP99)} ms)`;
    console.log(
      `${phase.padEnd(6)} ${f(row.at).padStart(5)} s  CPU ${f(row.cpu).padStart(3)} %  RSS ${f(row.rss).padStart(5)} MiB  heap ${f(row.heap).padStart(4)} MiB  ` +
        `lag p50 ${f(row.lagP50, 1).padStart(5)} p99 ${f(row.lagP99, 1).padStart(6)} max ${f(row.lagMax, 1).padStart(6)} ms  ` +
        `major GC ${f(row.gc * 1000).padStart(4)} ms  ` +
        `sockets ${String(row.sockets).padStart(5)}  running ${String(row.running).padStart(5)}  fds ${String(row.fds).padStart(5)}${churned}`,
    );
  };

  console.log(
    `node ${process.version}, ${cpus().length} cores, load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}, bufferutil ${bufferutilStatus()}`,
  );
  console.log(
    `serve ${server.url} (open-files limit ${descriptorLimit(server.child.pid)}): ${connections} idle sessions over ${tokens.length} tokens, churn ${flags.churn}/s, ${flags.hostile} hostile clients of each kind`,
  );
  const roles = {};
  // Samples during the ramp too: the idle process answers once all are open, so it is asked only after.
  const ramp = setInterval(() => void sample("ramp", {}), sampleMs);
  roles.idle = await startRole("idle", { url: server.url, tokens, connections });
  clearInterval(ramp);
  const idleReady = await roles.idle.ask("report");
  console.log(
    `idle sessions open: ${idleReady.open} in ${idleReady.openedInSeconds.toFixed(1)} s, refused ${JSON.stringify(idleReady.refused)}`,
  );
  roles.churn = await startRole("churn", { url: server.url, tokens, rate: Number(flags.churn) });
  roles.hostile = await startRole("hostile", { url: server.url, port: server.port, tokens, count: Number(flags.hostile) });
  const soakBegan = performance.now();
  while (performance.now() - soakBegan < soakMs) {
    await sleep(sampleMs - ((performance.now() - soakBegan) % sampleMs));
    await sample(performance.now() - soakBegan < warmupMs ? "warmup" : "soak", roles);
  }
  const finals = Object.fromEntries(await Promise.all(Object.entries(roles).map(async ([name, r]) => [name, await r.ask("stop")])));
  await Promise.all(Object.values(roles).map((r) => stop(r.child)));
  await stop(server.child);
  rmSync(dir, { recursive: true, force: true });

  console.log(`idle: ${finals.idle.open} still open at the end, ${finals.idle.lost} lost`);
  console.log(`churn: ${finals.churn.done} invocations finished, failures ${JSON.stringify(finals.churn.failures)}`);
  console.log(
    `hostile: silent closed with ${JSON.stringify(finals.hostile.silent)}, non-ponging closed with ${JSON.stringify(finals.hostile.nonPonging)}, ` +
      `refused upgrades answered ${JSON.stringify(finals.hostile.refused)}`,
  );
  verdict(samples.filter((row) => row.phase === "soak"));
}

/** First minute after the warm-up against the last minute: medians of RSS and of the lag p99. */
function verdict(soak) {
  if (soak.length < 2) return console.log("verdict: too short to judge (soak longer than the warm-up plus two samples)");
  const start = soak[0].at;
  const end = soak.at(-1).at;
  const minute = Math.min(60, (end - start) / 2);
  const first = soak.filter((row) => row.at <= start + minute);
  const last = soak.filter((row) => row.at >= end - minute);
  const median = (rows, key) =>
    quantile(
      rows.map((row) => row[key]).sort((a, b) => a - b),
      0.5,
    );
  const rss = [median(first, "rss"), median(last, "rss")];
  const lag = [median(first, "lagP99"), median(last, "lagP99")];
  // Least-squares slope of RSS over the judged samples, MiB per minute.
  const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length;
  const ts = soak.map((row) => row.at / 60);
  const ys = soak.map((row) => row.rss);
  const [mt, my] = [mean(ts), mean(ys)];
  const slope = ts.reduce((sum, t, i) => sum + (t - mt) * (ys[i] - my), 0) / ts.reduce((sum, t) => sum + (t - mt) ** 2, 0);
  const rssFlat = rss[1] < rss[0] * 1.1;
  const lagFlat = lag[1] < Math.max(lag[0] * 1.5, lag[0] + 20);
  console.log(
    `RSS median ${rss[0].toFixed(0)} MiB (first ${minute.toFixed(0)} s after warm-up) -> ${rss[1].toFixed(0)} MiB (last ${minute.toFixed(0)} s), ` +
      `slope ${slope.toFixed(2)} MiB/min: ${rssFlat ? "flat" : "GROWING"}`,
  );
  console.log(`event-loop lag p99 median ${lag[0].toFixed(1)} ms -> ${lag[1].toFixed(1)} ms: ${lagFlat ? "flat" : "GROWING"}`);
  console.log(`verdict: ${rssFlat && lagFlat ? "flat" : "NOT flat"}`);
}
