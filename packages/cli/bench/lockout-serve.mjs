#!/usr/bin/env node
/**
 * The lock-out attack against a real `golem-stream serve` with its default
 * limits (docs/operations.md, "Limits and abuse", Measured): can a valid client
 * still connect while attackers run at full speed?
 *
 *   node bench/lockout-serve.mjs                 # 60 s (build first: pnpm -F @golem-stream/cli... build)
 *   node bench/lockout-serve.mjs --seconds 20 --attackers 2 --concurrency 16 --interval 250 --addresses 10000
 *
 * The attack, from `--attackers` separate processes of `--concurrency`
 * concurrent loops each, for `--seconds`:
 *   - three loops in four send upgrades that offer a bearer subprotocol entry
 *     (a wrong token) and no `Origin`, spread over `--addresses` loopback
 *     addresses (127.1.x.y): `serve` runs the browser extension (its console),
 *     which refuses them by completing the upgrade and closing with 4401. The
 *     attacker never answers the close frame; the server must drop the socket.
 *     Each address is throttled after its allowance of failures (20 a minute),
 *     then refused 503 before the authenticator runs: with the default 10 000
 *     addresses a minute of the attack stays under the allowance of most of
 *     them, so the upgrade-then-close path runs at full speed (the worst case);
 *     with 200 the throttle answers most of them;
 *   - the fourth loop sends failed authentications (a wrong `Authorization`
 *     token) from one address, 127.0.2.1: throttled after 20 a minute.
 * Meanwhile this process, from 127.0.0.1, connects a valid client every
 * `--interval` ms and starts `count` (a small invocation that finishes by
 * itself): connect latency = from the TCP connect to the upgrade's open;
 * start latency = to `invocationAccepted`. Any refusal (HTTP status, error,
 * `invocationRejected`) is counted.
 *
 * The goal: never refused, every connect under a second.
 * Prints p50 / p99 / max of both latencies, the refusals, what the attackers
 * got, the server's RSS at the end and its event-loop delay over the attack
 * (prom-client's histogram since the read before the attack).
 */
import { fork } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import {
  bearerEntryHeaders,
  bufferutilStatus,
  countStart,
  descriptorLimit,
  hostileUpgrade,
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
const TOKEN = "a-valid-lockout-bench-token-0123456789";
/** The `index`th address of the bearer-entry loops, in 127.1.0.0/16. */
const entryAddress = (index) => `127.1.${Math.floor(index / 254)}.${1 + (index % 254)}`;

if (process.argv[2] === "attacker") await attacker(JSON.parse(process.argv[3]));
else await main();

/** One attacker process: `concurrency` loops at full speed until `until` (epoch ms); reports what it got. */
async function attacker({ port, concurrency, until, addresses }) {
  const outcomes = { entry: [], guess: [] };
  let next = Math.floor(Math.random() * addresses);
  const loop = async (kind) => {
    while (Date.now() < until) {
      const outcome =
        kind === "entry"
          ? await hostileUpgrade(port, entryAddress(next++ % addresses), bearerEntryHeaders())
          : await hostileUpgrade(port, "127.0.2.1", wrongTokenHeaders());
      outcomes[kind].push(outcome);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, (_, i) => loop(i % 4 === 3 ? "guess" : "entry")));
  process.send({ entry: tally(outcomes.entry), guess: tally(outcomes.guess) }, () => process.exit(0));
}

async function main() {
  const { values: flags } = parseArgs({
    options: {
      seconds: { type: "string", default: "60" },
      attackers: { type: "string", default: "2" },
      concurrency: { type: "string", default: "16" },
      interval: { type: "string", default: "250" },
      addresses: { type: "string", default: "10000" },
    },
  });
  const seconds = Number(flags.seconds);
  const attackers = Number(flags.attackers);
  const concurrency = Number(flags.concurrency);
  const intervalMs = Number(flags.interval);
  const addresses = Number(flags.addresses);

  const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-lockout-"));
  const server = await startServe(["--token", TOKEN, "--data-dir", dataDir]);
  const before = await scrapeMetrics(server.url);
  const limit = descriptorLimit(server.child.pid);
  const until = Date.now() + seconds * 1000;
  // Forked through sh for the descriptor limit; the IPC channel survives the exec.
  const children = Array.from({ length: attackers }, () =>
    spawnNode([SELF, "attacker", JSON.stringify({ port: server.port, concurrency, until, addresses })], {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    }),
  );
  const reports = children.map((child) => new Promise((resolve) => child.once("message", resolve)));

  const connects = [];
  const starts = [];
  const refusals = [];
  while (Date.now() < until) {
    const tick = performance.now();
    const opened = await openSession(server.url, TOKEN, { localAddress: "127.0.0.1" });
    if (opened.refused !== undefined) refusals.push(`upgrade ${opened.refused}`);
    else {
      connects.push(opened.ms);
      opened.socket.send(countStart(1));
      const answer = await nextOf(opened.socket, "invocationAccepted", "invocationRejected");
      if (answer === "invocationAccepted") starts.push(performance.now() - tick);
      else refusals.push(answer);
      opened.socket.close();
    }
    const rest = intervalMs - (performance.now() - tick);
    if (rest > 0) await new Promise((resolve) => setTimeout(resolve, rest));
  }
  const got = await Promise.all(reports);
  await Promise.all(children.map(stop));
  const after = await scrapeMetrics(server.url);
  await stop(server.child);
  rmSync(dataDir, { recursive: true, force: true });

  const sum = (kind) => {
    const all = {};
    for (const report of got) for (const [outcome, n] of Object.entries(report[kind])) all[outcome] = (all[outcome] ?? 0) + n;
    return all;
  };
  const entry = sum("entry");
  const guess = sum("guess");
  const count = (outcomes) => Object.values(outcomes).reduce((a, b) => a + b, 0);
  const ms = (value) => (Number.isNaN(value) ? "-" : `${value.toFixed(1)} ms`);
  const line = (name, values) => {
    const sorted = [...values].sort((a, b) => a - b);
    return `${name}: p50 ${ms(quantile(sorted, 0.5))}, p99 ${ms(quantile(sorted, 0.99))}, max ${ms(sorted.at(-1) ?? Number.NaN)} (${sorted.length})`;
  };
  const rejected = (code) =>
    metricSum(after, `golem_stream_attachment_rejections_total{code="${code}",operation="upgrade"}`) -
    metricSum(before, `golem_stream_attachment_rejections_total{code="${code}",operation="upgrade"}`);
  const worst = Math.max(0, ...connects, ...starts);
  console.log(
    `node ${process.version}, ${cpus().length} cores, load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")} at the end, bufferutil ${bufferutilStatus()}`,
  );
  console.log(
    `golem-stream serve with its default limits (open-files limit ${limit}); ${seconds} s; ${attackers} attacker processes x ${concurrency} loops`,
  );
  console.log(
    `  bearer-entry upgrades, no Origin, close never answered (${addresses} addresses in 127.1.0.0/16): ${count(entry)} (${Math.round(count(entry) / seconds)}/s), answers ${JSON.stringify(entry)}`,
  );
  console.log(
    `  failed authentications from 127.0.2.1: ${count(guess)} (${Math.round(count(guess) / seconds)}/s), answers ${JSON.stringify(guess)}`,
  );
  console.log(
    `  server counted: refused unauthenticated ${rejected("unauthenticated")}, overloaded ${rejected("overloaded")}; ` +
      `RSS at the end ${(metricSum(after, "process_resident_memory_bytes") / 2 ** 20).toFixed(0)} MiB; ` +
      `event-loop delay over the attack p50 ${loopDelayMs(after, "p50").toFixed(1)} ms, p99 ${loopDelayMs(after, "p99").toFixed(1)} ms, max ${loopDelayMs(after, "max").toFixed(1)} ms`,
  );
  console.log(
    `valid client from 127.0.0.1 every ${intervalMs} ms: ${connects.length} connects, ${refusals.length} refused${refusals.length > 0 ? ` ${JSON.stringify(tally(refusals))}` : ""}`,
  );
  console.log(`  ${line("connect (TCP connect to upgrade open)", connects)}`);
  console.log(`  ${line("start (to invocationAccepted)", starts)}`);
  const met = refusals.length === 0 && worst < 1000;
  console.log(`goal (never refused, every connect and start under 1 s): ${met ? "met" : "NOT met"}`);
}
