#!/usr/bin/env node
/**
 * How long a client waits for new output after the process running its
 * replayable invocation is lost (kill -9), with real `golem-stream serve`
 * processes (docs/durable-execution.md, *What it costs*).
 *
 *   pnpm build && node bench/owner-loss.mjs      # in packages/cli
 *   BENCH_ROUNDS=3 BENCH_ITEMS=1000 node bench/owner-loss.mjs   # the defaults
 *   BENCH_ONLY=sqlite,sameId,claim1s,claim10s node bench/owner-loss.mjs
 *
 * The invocation is the demo's `count(10 000 000, 0)` (no delay: the figures are the
 * recovery's, not the method's sleeps). Once the client has received BENCH_ITEMS items the
 * owner is killed with SIGKILL; the figure is the time from the kill to the first item the
 * client receives whose value is at least the output count the store held at the kill: an
 * item the re-run produced, not one committed before the loss and delivered late. That
 * count is read from the store after the kill (SQLite: at once, a few ms inside the figure;
 * PostgreSQL: once it has not moved for 250 ms, a restart already under way). Rows:
 *
 *   sqlite    one node on SQLite (`serve --data-dir`), started again at once on the same data
 *             directory and port; the client reconnects there by itself (its reconnect policy
 *             retries every 10 ms).
 *   sameId    two nodes on PostgreSQL, the invocation started at A, the client attached at B;
 *             A started again at once with the same --node-id: it re-runs the invocation at start.
 *   claim10s  the same two nodes, A not restarted: B claims the invocation once A's lease
 *             (default --lease-ttl, 10 s) has lapsed, at its next orphan claim (every half
 *             lease), and re-runs it.
 *   claim1s   the same with --lease-ttl 1s on both nodes.
 *
 * A node claims only after it has seen the store available for a full lease, so B is up for
 * more than a lease before each kill. PostgreSQL is a throwaway server from
 * `startLocalPostgres()` on this machine, with fsync = on and synchronous_commit = on (its
 * defaults; a commit is on disk before it is acknowledged, as with SQLite at FULL). Every row
 * prints the median over the rounds, then each round's figure and the count at the kill.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { createClient } from "@golem-stream/client";
import { startLocalPostgres } from "@golem-stream/store-postgres/local";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const ITEMS = Number(process.env.BENCH_ITEMS ?? 1000);
const ONLY = process.env.BENCH_ONLY?.split(",");
const BIN = fileURLToPath(new URL("../dist/golem-stream.js", import.meta.url));
const TOKEN = "bench-token-0123456789";
const dir = mkdtempSync(join(tmpdir(), "golem-stream-bench-owner-loss-"));
// The SQLite driver the server's store uses, to read the count a killed server left.
const Database = createRequire(createRequire(import.meta.resolve("@golem-stream/server")).resolve("better-sqlite3"))("better-sqlite3");

const demo = {
  application: "demo",
  environment: "default",
  agentType: "echo",
  constructorParameters: { kind: "record", value: { fields: [{ kind: "string", value: "owner-loss" }] } },
};
const countParameters = {
  kind: "record",
  value: {
    fields: [
      { kind: "u32", value: 10_000_000 },
      { kind: "u32", value: 0 },
    ],
  },
};
const RECONNECT = { initialDelayMs: 10, maxDelayMs: 10, maxAttempts: 10_000 };

/** `golem-stream serve <args>`, resolved once it listens: `{ child, url, port, startedAt }`. */
function serve(args) {
  const child = spawn(process.execPath, [BIN, "serve", "--token", TOKEN, "--log-level", "error", ...args], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    let text = "";
    child.once("exit", (code) => reject(new Error(`serve ${args.join(" ")} exited ${code}`)));
    child.stdout.on("data", (chunk) => {
      text += chunk;
      const match = /^listening on (\S+)$/m.exec(text);
      if (match) resolve({ child, url: match[1], port: Number(new URL(match[1]).port), startedAt: performance.now() });
    });
  });
}

function kill(node) {
  const exited = new Promise((resolve) => node.child.once("exit", resolve));
  node.child.kill("SIGKILL");
  return exited;
}

/** The first stream of `call`'s result, read item by item. */
async function itemsOf(call) {
  const result = await call.result;
  return result.streams[0].values()[Symbol.asyncIterator]();
}

/**
 * One round: `count` started at `startAt` (the owner), read at `readAt` (a takeover there when
 * it is another node). After ITEMS items, `loss()` kills the owner and resolves with the count
 * the store held; the figure is the time from the kill to the first item at or beyond it.
 */
async function round({ startAt, readAt, key, loss }) {
  const call = createClient({ url: startAt.url, token: TOKEN, reconnect: RECONNECT }).invoke({
    ...demo,
    method: "count",
    methodParameters: countParameters,
    idempotencyKey: key,
  });
  let reading = call;
  let items = await itemsOf(call);
  if (readAt !== startAt) {
    await items.next();
    reading = createClient({ url: readAt.url, token: TOKEN, reconnect: RECONNECT }).takeover(call.detach());
    items = await itemsOf(reading);
  }
  for (let seen = 0; seen < ITEMS; seen++) await items.next();
  const killedAt = performance.now();
  const { committed, listenedAt, owner } = await loss();
  for (;;) {
    const { value, done } = await items.next();
    if (done) throw new Error("the stream ended");
    if (Number(value.value) >= committed) {
      const ms = performance.now() - killedAt;
      await reading.cancel().catch(() => undefined);
      return {
        ms,
        committed,
        listenedMs: listenedAt === undefined ? undefined : listenedAt - killedAt,
        claimedEarly: owner !== undefined && owner !== "node-a",
      };
    }
  }
}

async function sqliteRounds() {
  const dataDir = join(dir, "sqlite");
  let node = await serve(["--port", "0", "--data-dir", dataDir]);
  const results = [];
  for (let r = 0; r < ROUNDS; r++) {
    const key = `sqlite-${r}`;
    results.push(
      await round({
        startAt: node,
        readAt: node,
        key,
        loss: async () => {
          await kill(node);
          const db = new Database(join(dataDir, "sessions.db"), { readonly: true });
          const { count } = db
            .prepare(
              "SELECT st.count FROM sessions se JOIN streams st USING (session_id) WHERE se.idempotency_key = ? AND st.direction = 'output'",
            )
            .get(key);
          db.close();
          node = await serve(["--port", String(node.port), "--data-dir", dataDir]);
          return { committed: Number(count), listenedAt: node.startedAt };
        },
      }),
    );
  }
  await kill(node);
  return results;
}

/**
 * The output count the store holds for `key` and its owner, once the count has not moved for
 * 250 ms: a statement the killed node had sent may still commit after its death. (A restarted
 * node starts in more than that, and a claim comes two thirds of a lease after the kill at the
 * earliest; the owner shows when A's lease had lapsed while it ran, a load-delayed heartbeat.)
 */
async function settledCount(db, key) {
  const read = async () =>
    (
      await db.query(
        "SELECT st.count, se.owner_node FROM golem_stream.sessions se JOIN golem_stream.streams st USING (session_id) WHERE se.idempotency_key = $1 AND st.direction = 'output'",
        [key],
      )
    ).rows[0];
  let last = await read();
  for (let still = 0; still < 10;) {
    await new Promise((resolve) => setTimeout(resolve, 25));
    const now = await read();
    still = now.count === last.count ? still + 1 : 0;
    last = now;
  }
  return { count: Number(last.count), owner: last.owner_node };
}

/** Two nodes on a fresh database of `postgres`; `restart` starts A again with the same id at once. */
async function clusterRounds(postgres, name, leaseTtl, restart) {
  const url = await postgres.createDatabase(name);
  const keyring = join(dir, `${name}.keyring.json`);
  const nodeArgs = (id) => [
    "--port",
    "0",
    "--store",
    url,
    "--keyring",
    keyring,
    "--node-id",
    id,
    ...(leaseTtl === undefined ? [] : ["--lease-ttl", leaseTtl]),
  ];
  const leaseMs = leaseTtl === undefined ? 10_000 : Number.parseFloat(leaseTtl) * 1000;
  let a = await serve(nodeArgs("node-a"));
  const b = await serve(nodeArgs("node-b"));
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  const results = [];
  try {
    for (let r = 0; r < ROUNDS; r++) {
      const key = `${name}-${r}`;
      // B may claim only once it has seen the store available for a full lease.
      const wait = b.startedAt + leaseMs + 1000 - performance.now();
      if (!restart && wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      results.push(
        await round({
          startAt: a,
          readAt: b,
          key,
          loss: async () => {
            await kill(a);
            const restarted = restart ? serve(nodeArgs("node-a")) : undefined;
            const { count, owner } = await settledCount(db, key);
            if (restarted !== undefined) a = await restarted;
            return { committed: count, listenedAt: restart ? a.startedAt : undefined, owner };
          },
        }),
      );
      if (!restart) a = await serve(nodeArgs("node-a"));
    }
  } finally {
    await db.end();
    await Promise.all([kill(a), kill(b)]);
  }
  return results;
}

const median = (list) => [...list].sort((x, y) => x - y)[Math.floor(list.length / 2)];
function print(label, results) {
  const ms = results.map((result) => result.ms);
  console.log(
    `  ${label.padEnd(62)} ${median(ms).toFixed(0).padStart(6)} ms   (${results
      .map(
        (result) =>
          `${result.ms.toFixed(0)} ms at ${result.committed}${result.listenedMs === undefined ? "" : `, listening after ${result.listenedMs.toFixed(0)} ms`}${result.claimedEarly ? ", CLAIMED BEFORE THE KILL (A's lease lapsed while it ran)" : ""}`,
      )
      .join("; ")})`,
  );
}

const rows = [
  ["sqlite", "one node, SQLite, restarted at once", () => sqliteRounds()],
  [
    "sameId",
    "two nodes, PostgreSQL, A restarted at once with its --node-id",
    (postgres) => clusterRounds(postgres, "bench_same_id", undefined, true),
  ],
  ["claim1s", "two nodes, PostgreSQL, B claims, --lease-ttl 1s", (postgres) => clusterRounds(postgres, "bench_claim_1s", "1s", false)],
  [
    "claim10s",
    "two nodes, PostgreSQL, B claims, --lease-ttl 10s (default)",
    (postgres) => clusterRounds(postgres, "bench_claim_10s", undefined, false),
  ],
].filter(([id]) => ONLY === undefined || ONLY.includes(id));

let postgres;
try {
  if (rows.some(([id]) => id !== "sqlite")) postgres = await startLocalPostgres({ settings: { fsync: "on", synchronous_commit: "on" } });
  console.log(
    `owner loss (kill -9) to the first new item at the client: count(10 000 000, 0), killed after ${ITEMS} items; median of ${ROUNDS} rounds (each: ms, the store's count at the kill, when a restarted node listened)`,
  );
  for (const [, label, run] of rows) print(label, await run(postgres));
  // A process's start dominates the restart rows, and it slows with the machine's load.
  console.log(
    `load average at the end: ${loadavg()
      .map((load) => load.toFixed(1))
      .join(", ")}`,
  );
} finally {
  await postgres?.stop();
  rmSync(dir, { recursive: true, force: true });
}
