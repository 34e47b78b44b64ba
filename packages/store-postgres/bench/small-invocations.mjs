#!/usr/bin/env node
/**
 * The fixed cost of an invocation on PostgreSQL: the rows of the client bench's
 * `small-invocations.mjs` (`tally` of one item and of ten, one after another from one client,
 * then of one item from 32 callers at once) against a node on a PostgresSessionStore (cluster
 * mode, a cluster of one), with the node's and PostgreSQL's CPU counted together per invocation.
 *
 *   pnpm build && node bench/small-invocations.mjs          # in packages/store-postgres
 *   BENCH_PG_BEFORE=<other build>/packages/store-postgres/dist/index.js node bench/small-invocations.mjs
 *                                               # a second node on that build's store, taking turns
 *   BENCH_ROUNDS=6 BENCH_INVOCATIONS=150 BENCH_PG_FSYNC=on node bench/small-invocations.mjs   # the defaults
 *
 * PostgreSQL is a throwaway server from `startLocalPostgres()` with fsync and synchronous_commit
 * on, as in `bench/run.mjs`: every durable step of an invocation waits for a commit on disk.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startLocalPostgres } from "@golem-stream/store-postgres/local";
import { postgresCpu } from "./postgres-cpu.mjs";
import { measureSmallInvocations } from "../../client/bench/small-invocation-rows.mjs";
import { bufferutilStatus, startPeer } from "../../client/bench/throughput.mjs";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const INVOCATIONS = Number(process.env.BENCH_INVOCATIONS ?? 150);
const before = process.env.BENCH_PG_BEFORE;

const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-bench-pg-small-"));
const postgres = await startLocalPostgres({ settings: { fsync: process.env.BENCH_PG_FSYNC ?? "on", synchronous_commit: "on" } });
const database = postgresCpu(postgres.directory);
const storeModule = new URL("./store.mjs", import.meta.url).href;
/** A node of its own schema (a cluster of one): the embedded server (demo host) on a PostgresSessionStore of `module`'s build. */
const startNode = (name, module) =>
  startPeer(
    "store",
    join(dataDir, name),
    storeModule,
    JSON.stringify({ url: postgres.url, schema: `bench_small_${name}`, nodeId: name, module }),
  );
const counted = (node) => (database === undefined ? [node] : [node, database]);
const servers = [{ name: "this build", peers: counted(await startNode("here")) }];
if (before !== undefined) servers.push({ name: "other build", peers: counted(await startNode("before", before)) });

console.log(
  `node ${process.version}, ${bufferutilStatus()}; PostgreSQL with fsync ${process.env.BENCH_PG_FSYNC ?? "on"}; ` +
    `${ROUNDS} rounds of ${INVOCATIONS} invocations per row, one client; milliseconds; server CPU is the node's and PostgreSQL's together`,
);
try {
  await measureSmallInvocations(servers, {
    rounds: ROUNDS,
    invocations: INVOCATIONS,
    small: Number(process.env.BENCH_SMALL_ITEMS ?? 10),
    concurrency: Number(process.env.BENCH_CONCURRENCY ?? 32),
  });
} finally {
  await Promise.all(servers.map(({ peers }) => peers[0].close()));
  await postgres.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
