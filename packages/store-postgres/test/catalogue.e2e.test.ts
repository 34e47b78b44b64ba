/**
 * The catalogue fingerprints of a cluster's nodes on PostgreSQL: each node
 * records its own beside its lease, reads those of the other live nodes, and
 * a database made before the column existed gets it when a node opens it.
 */
import { afterAll, expect, it } from "vitest";
import { admin, cleanUp, connect, freshSchema } from "./support/stores.js";

afterAll(cleanUp);

it("a node reads the fingerprint every other live node recorded (none for a node that recorded none), and not a node that left", async () => {
  const schema = freshSchema();
  const a = await connect({ schema, nodeId: "node-a" });
  const b = await connect({ schema, nodeId: "node-b" });
  const c = await connect({ schema, nodeId: "node-c" });
  await a.heartbeat(60_000);
  await a.setCatalogue("f".repeat(64));
  await b.heartbeat(60_000);
  expect(await c.liveCatalogues()).toEqual([
    { nodeId: "node-a", fingerprint: "f".repeat(64) },
    { nodeId: "node-b", fingerprint: undefined },
  ]);
  // Its own row is not among them, and a heartbeat keeps what was recorded.
  await a.heartbeat(60_000);
  expect(await a.liveCatalogues()).toEqual([{ nodeId: "node-b", fingerprint: undefined }]);
  expect((await b.liveCatalogues())[0]).toEqual({ nodeId: "node-a", fingerprint: "f".repeat(64) });
  await a.leave();
  expect(await c.liveCatalogues()).toEqual([{ nodeId: "node-b", fingerprint: undefined }]);
});

it("a node whose lease lapsed is not live", async () => {
  const schema = freshSchema();
  const a = await connect({ schema, nodeId: "node-a" });
  const b = await connect({ schema, nodeId: "node-b" });
  await a.heartbeat(60_000);
  await a.setCatalogue("a".repeat(64));
  expect(await b.liveCatalogues()).toHaveLength(1);
  // As if it stopped heartbeating a while ago: its lease is in the past by the database's clock.
  const client = await admin();
  try {
    await client.query(`UPDATE ${schema}.nodes SET lease_expires_at = clock_timestamp() - interval '1 second' WHERE node_id = 'node-a'`);
  } finally {
    await client.end();
  }
  expect(await b.liveCatalogues()).toEqual([]);
});

it("a database whose node table has no catalogue column gets it at open, and keeps its schema version", async () => {
  const schema = freshSchema();
  const first = await connect({ schema, nodeId: "node-a" });
  await first.close();
  const client = await admin();
  try {
    await client.query(`ALTER TABLE ${schema}.nodes DROP COLUMN catalogue`);
    const versions = async () =>
      (await client.query<{ version: number }>(`SELECT version FROM ${schema}.schema_migrations ORDER BY version`)).rows;
    const before = await versions();
    const again = await connect({ schema, nodeId: "node-b" });
    await again.heartbeat(60_000);
    await again.setCatalogue("b".repeat(64));
    expect((await client.query(`SELECT catalogue FROM ${schema}.nodes WHERE node_id = 'node-b'`)).rows).toEqual([
      { catalogue: "b".repeat(64) },
    ]);
    expect(await versions()).toEqual(before);
  } finally {
    await client.end();
  }
});

it("a second process of the node id that leaves takes the row with it, and the next heartbeat of the one still running writes its fingerprint back", async () => {
  const schema = freshSchema();
  const running = await connect({ schema, nodeId: "node-a" });
  const second = await connect({ schema, nodeId: "node-a" });
  const other = await connect({ schema, nodeId: "node-b" });
  await running.heartbeat(60_000);
  await running.setCatalogue("a".repeat(64));
  await second.heartbeat(60_000);
  await second.leave();
  expect(await other.liveCatalogues()).toEqual([]);
  await running.heartbeat(60_000);
  expect(await other.liveCatalogues()).toEqual([{ nodeId: "node-a", fingerprint: "a".repeat(64) }]);
});

it("a heartbeat before any fingerprint was recorded keeps the one in the row", async () => {
  const schema = freshSchema();
  const first = await connect({ schema, nodeId: "node-a" });
  const other = await connect({ schema, nodeId: "node-b" });
  await first.heartbeat(60_000);
  await first.setCatalogue("c".repeat(64));
  // A process of the node id that has not recorded one yet (a restart, before its check).
  const restarted = await connect({ schema, nodeId: "node-a" });
  await restarted.heartbeat(60_000);
  expect(await other.liveCatalogues()).toEqual([{ nodeId: "node-a", fingerprint: "c".repeat(64) }]);
});
