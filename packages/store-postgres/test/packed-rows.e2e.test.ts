/**
 * Packed log rows on PostgreSQL (schema version 2): a burst of small appends
 * of one stream goes into few rows, reads return the appends exactly as the
 * in-memory model does, a database of schema 1 is upgraded with its rows
 * intact, and nothing is packed while a live node of an earlier version
 * (which would read a packed row as one chunk) is in the `nodes` table.
 */
import { afterAll, expect, it } from "vitest";
import fc from "fast-check";
import { MemorySessionStore, type SessionStore } from "@golem-stream/server";
import { burstStreams, checkAgainstModel, expectSameBurstReads, writeBurst } from "@golem-stream/server/testing";
import type { PostgresSessionStore } from "../src/index.js";
import { admin, cleanUp, connect, freshSchema, logTableTargets } from "./support/stores.js";

afterAll(cleanUp);

async function rowCounts(schema: string): Promise<{ rows: number; packed: number }> {
  const client = await admin();
  try {
    const { rows } = await client.query<{ rows: string; packed: string }>(
      `SELECT (SELECT count(*) FROM ${schema}.input_chunks) + (SELECT count(*) FROM ${schema}.output_events) AS rows,
              (SELECT count(parts) FROM ${schema}.input_chunks) + (SELECT count(parts) FROM ${schema}.output_events) AS packed`,
    );
    return { rows: Number(rows[0]?.rows), packed: Number(rows[0]?.packed) };
  } finally {
    await client.end();
  }
}

it("writes a burst of small items in few rows and reads every range back as the appends were made", async () => {
  const schema = freshSchema();
  const real = await connect({ schema, maxPackedRowBytes: 1000 });
  const model = new MemorySessionStore();
  const ids = await burstStreams([real, model]);
  const n = 120;
  await Promise.all([writeBurst(real, ids, 0, n), writeBurst(model, ids, 0, n)]);
  const { rows, packed } = await rowCounts(schema);
  expect(rows).toBeLessThan((2 * n) / 8);
  expect(packed).toBe(rows);
  await expectSameBurstReads(expect, real, model, ids, n, 3);
  expect((await real.getStream(ids.input.streamId))?.count).toBe(BigInt(n));
});

it("packs nothing while a live node of an earlier version is in the cluster, and packs once it has left", async () => {
  const schema = freshSchema();
  const node = await connect({ schema, nodeId: "new-node" });
  const client = await admin();
  try {
    // What a node of schema 1 writes: no log_format.
    await client.query(
      `INSERT INTO ${schema}.nodes (node_id, lease_expires_at) VALUES ('old-node', clock_timestamp() + interval '1 hour')`,
    );
    await node.heartbeat(60_000);
    const ids = await burstStreams([node]);
    await writeBurst(node, ids, 0, 40);
    expect(await rowCounts(schema)).toEqual({ rows: 80, packed: 0 });
    await client.query(`DELETE FROM ${schema}.nodes WHERE node_id = 'old-node'`);
    await node.heartbeat(60_000);
    await writeBurst(node, ids, 40, 40);
    const after = await rowCounts(schema);
    expect(after.rows).toBeLessThan(80 + 80 / 8);
    expect(after.packed).toBe(after.rows - 80);
    expect((await node.readInput(ids.input.streamId, 0n, 80n)).map((c) => c.sequence)).toEqual(
      Array.from({ length: 80 }, (_, i) => BigInt(i)),
    );
  } finally {
    await client.end();
  }
});

it("upgrades a schema 1 database: its rows read as before, later bursts are packed", async () => {
  const schema = freshSchema();
  const old = await connect({ schema, maxPackedRowBytes: 0 });
  const model = new MemorySessionStore();
  const ids = await burstStreams([old, model]);
  await Promise.all([writeBurst(old, ids, 0, 30), writeBurst(model, ids, 0, 30)]);
  await old.close();
  const client = await admin();
  try {
    await client.query(`ALTER TABLE ${schema}.input_chunks DROP COLUMN parts; ALTER TABLE ${schema}.output_events DROP COLUMN parts;
      ALTER TABLE ${schema}.nodes DROP COLUMN log_format; DELETE FROM ${schema}.schema_migrations WHERE version >= 2;
      ALTER TABLE ${schema}.sessions DROP COLUMN owner_epoch; ALTER TABLE ${schema}.streams DROP COLUMN owner_epoch;
      DROP TABLE ${schema}.journal; DROP TABLE ${schema}.session_runs; DROP TABLE ${schema}.writer_groups;
      ALTER TABLE ${schema}.input_chunks RESET (toast_tuple_target); ALTER TABLE ${schema}.output_events RESET (toast_tuple_target)`);
  } finally {
    await client.end();
  }
  expect(await logTableTargets(schema)).toEqual({ input_chunks: undefined, output_events: undefined });
  const upgraded: PostgresSessionStore = await connect({ schema, maxPackedRowBytes: 1000 });
  // The log storage setting (log-storage.ts) comes with the upgrade.
  expect(await logTableTargets(schema)).toEqual({ input_chunks: "8160", output_events: "8160" });
  await Promise.all([writeBurst(upgraded, ids, 30, 60), writeBurst(model, ids, 30, 60)]);
  await expectSameBurstReads(expect, upgraded, model, ids, 90, 3);
  expect((await rowCounts(schema)).rows).toBeLessThan(60 + 120 / 8);
});

it("answers every read as the in-memory model after any writes and reopenings, with small packed rows", async () => {
  const schema = freshSchema();
  await checkAgainstModel({
    fc,
    expect,
    maxBurst: 12,
    open: () => connect({ schema, maxPackedRowBytes: 300 }),
    reopen: async (store) => {
      await store.close();
      return connect({ schema, maxPackedRowBytes: 300 });
    },
    numRuns: 25,
  });
});
