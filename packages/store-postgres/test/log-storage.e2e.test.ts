/**
 * The log tables keep packed rows whole and uncompressed (`toast_tuple_target`,
 * `src/log-storage.ts`): set on a fresh schema, set at `open()` on a database
 * made before it (whose compressed rows still read), without a schema
 * version of its own (a node of an earlier version still starts), and an
 * operator's own value is left alone. Rows too large for a page are
 * compressed with lz4 where the server has it, else as the server does.
 */
import { afterAll, expect, it } from "vitest";
import { MemorySessionStore } from "@golem-stream/server";
import { PostgresSessionStore } from "../src/index.js";
import { burstStreams, expectSameBurstReads, writeBurst } from "@golem-stream/server/testing";
import { serverHasLz4, writerSetup } from "../src/log-storage.js";
import { asRoleNotOwning, cleanUp, connect, freshSchema, logTableTargets as targets, pgUrl, withAdmin } from "./support/stores.js";

afterAll(cleanUp);

/** The log rows whose payload is over PostgreSQL's default threshold (2032), by how each is stored: `compressed` (pglz or lz4) or `plain`. */
const largeRows = (schema: string) =>
  withAdmin(async (client) => {
    const { rows } = await client.query<{ stored: string; rows: string }>(
      `SELECT CASE WHEN pg_column_compression(data) IS NULL THEN 'plain' ELSE 'compressed' END AS stored, count(*) AS rows FROM (
         SELECT data FROM ${schema}.input_chunks UNION ALL SELECT data FROM ${schema}.output_events) AS logs
       WHERE octet_length(data) > 2032 GROUP BY 1 ORDER BY 1`,
    );
    return Object.fromEntries(rows.map((row) => [row.stored, Number(row.rows)]));
  });

const resetTargets = (schema: string) =>
  withAdmin((client) =>
    client.query(
      `ALTER TABLE ${schema}.input_chunks RESET (toast_tuple_target); ALTER TABLE ${schema}.output_events RESET (toast_tuple_target)`,
    ),
  );

const versions = (schema: string) =>
  withAdmin(async (client) =>
    (await client.query<{ version: number }>(`SELECT version FROM ${schema}.schema_migrations ORDER BY version`)).rows.map(
      (r) => r.version,
    ),
  );

it("a fresh schema stores packed rows of the default size whole, not compressed", async () => {
  const schema = freshSchema();
  const store = await connect({ schema });
  expect(await targets(schema)).toEqual({ input_chunks: "8160", output_events: "8160" });
  const ids = await burstStreams([store]);
  await writeBurst(store, ids, 0, 600);
  const stored = await largeRows(schema);
  expect(stored.compressed).toBeUndefined();
  expect(stored.plain).toBeGreaterThanOrEqual(4);
});

it("items of one byte pack into rows whose part list fits too: whole, not compressed", async () => {
  // A part list entry is two bytes here, twice the item: sized by its data alone, a row of 7 KiB of
  // one-byte items was 21 KiB with its list, and went to TOAST.
  const schema = freshSchema();
  const store = await connect({ schema });
  const ids = await burstStreams([store]);
  const writes: Promise<void>[] = [];
  for (let i = 0; i < 20_000; i++) {
    writes.push(
      store.acceptInput(
        { streamId: ids.input.streamId, sequence: BigInt(i), itemCount: 1n, data: new Uint8Array([i & 0xff]), mimeType: undefined },
        [],
      ),
    );
  }
  await Promise.all(writes);
  // PostgreSQL compresses a row's largest column first: here the part list, so both are looked at.
  const stored = await withAdmin(async (client) => {
    const { rows } = await client.query<{ compressed: string; packed: string }>(
      `SELECT count(*) FILTER (WHERE pg_column_compression(data) IS NOT NULL OR pg_column_compression(parts) IS NOT NULL) AS compressed,
              count(*) FILTER (WHERE parts IS NOT NULL) AS packed
         FROM ${schema}.input_chunks`,
    );
    return { compressed: Number(rows[0]!.compressed), packed: Number(rows[0]!.packed) };
  });
  expect(stored.compressed).toBe(0);
  expect(stored.packed).toBeGreaterThanOrEqual(2);
  expect((await store.readInput(ids.input.streamId, 0n, 20_000n)).reduce((n, chunk) => n + Number(chunk.itemCount), 0)).toBe(20_000);
});

it("a database made before the setting gets it at open, reads its compressed rows, and keeps its schema version", async () => {
  const schema = freshSchema();
  const model = new MemorySessionStore();
  const old = await connect({ schema });
  const ids = await burstStreams([old, model]);
  const before = await versions(schema);
  // As a database made by an earlier version: PostgreSQL's default, so packed rows are compressed.
  await resetTargets(schema);
  await Promise.all([writeBurst(old, ids, 0, 600), writeBurst(model, ids, 0, 600)]);
  expect((await largeRows(schema)).compressed).toBeGreaterThanOrEqual(4);
  await old.close();

  const reopened = await connect({ schema });
  expect(await targets(schema)).toEqual({ input_chunks: "8160", output_events: "8160" });
  // No version of its own: a node that knows only the versions before still starts.
  expect(await versions(schema)).toEqual(before);
  await Promise.all([writeBurst(reopened, ids, 600, 600), writeBurst(model, ids, 600, 600)]);
  await expectSameBurstReads(expect, reopened, model, ids, 1200, 150);
  const stored = await largeRows(schema);
  expect(stored.plain).toBeGreaterThanOrEqual(4);
});

it("leaves a toast_tuple_target the operator set", async () => {
  const schema = freshSchema();
  const store = await connect({ schema });
  await store.close();
  await withAdmin((client) => client.query(`ALTER TABLE ${schema}.output_events SET (toast_tuple_target = 2032)`));
  await connect({ schema });
  expect(await targets(schema)).toEqual({ input_chunks: "8160", output_events: "2032" });
});

it("the writer asks for lz4 only when told to and the server has it", () => {
  expect(writerSetup("lz4", true)).toBe("SET default_toast_compression = lz4");
  expect(writerSetup("lz4", false)).toBeUndefined();
  expect(writerSetup("server", true)).toBeUndefined();
  expect(() => new PostgresSessionStore({ connectionString: pgUrl(), logCompression: "zstd" as "lz4" })).toThrow(TypeError);
});

it("compresses a 1 MiB batch with lz4 where the server has it, else with the server's method, and reads it back", async () => {
  const lz4 = await withAdmin((client) => serverHasLz4(client));
  const serverDefault = await withAdmin(
    async (client) => (await client.query<{ m: string }>("SELECT current_setting('default_toast_compression') AS m")).rows[0]?.m,
  );
  const batch = new Uint8Array(1024 * 1024).fill(7);
  for (const [logCompression, expected] of [
    ["lz4", lz4 ? "lz4" : serverDefault],
    ["server", serverDefault],
  ] as const) {
    const schema = freshSchema();
    const store = await connect({ schema, logCompression });
    const ids = await burstStreams([store]);
    await store.acceptInput({ streamId: ids.input.streamId, sequence: 0n, itemCount: 1n, data: batch, mimeType: undefined }, []);
    const stored = await withAdmin(
      async (client) => (await client.query<{ m: string }>(`SELECT pg_column_compression(data) AS m FROM ${schema}.input_chunks`)).rows,
    );
    expect(stored).toEqual([{ m: expected }]);
    const [chunk] = await store.readInput(ids.input.streamId, 0n, 1n);
    expect(Buffer.from(chunk!.data).equals(Buffer.from(batch))).toBe(true);
  }
});

it("a node whose role does not own the log tables starts without setting it, and works", async () => {
  const schema = freshSchema();
  const owner = await connect({ schema });
  await owner.close();
  await resetTargets(schema);
  await asRoleNotOwning(schema, async (connectionString) => {
    const node = await connect({ schema, connectionString });
    expect(await targets(schema)).toEqual({ input_chunks: undefined, output_events: undefined });
    const ids = await burstStreams([node]);
    await writeBurst(node, ids, 0, 20);
    expect((await node.readInput(ids.input.streamId, 0n, 20n)).length).toBe(20);
    await node.close();
  });
});
