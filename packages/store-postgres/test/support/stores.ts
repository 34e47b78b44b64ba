/**
 * Stores for the tests: each on the database the global setup provides, in
 * a schema of its own (dropped after the file's tests) unless a test names
 * one, with a small read pool.
 */
import { randomBytes } from "node:crypto";
import { inject } from "vitest";
import pg from "pg";
import { PostgresSessionStore, type PostgresSessionStoreOptions } from "../../src/index.js";

const schemas = new Set<string>();
const open = new Set<PostgresSessionStore>();

export function pgUrl(): string {
  return inject("pgUrl");
}

/** A new schema name (not created: the store's migrations create it). */
export function freshSchema(): string {
  const schema = `t_${randomBytes(6).toString("hex")}`;
  schemas.add(schema);
  return schema;
}

export async function connect(options: Partial<PostgresSessionStoreOptions> = {}): Promise<PostgresSessionStore> {
  const store = await PostgresSessionStore.connect({ connectionString: pgUrl(), schema: options.schema ?? freshSchema(), pool: { max: 4 }, ...options });
  open.add(store);
  return store;
}

/** A plain client on the test database, for inspecting tables or killing connections. */
export async function admin(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: pgUrl() });
  await client.connect();
  return client;
}

/** For `afterAll`: closes the stores still open and drops the schemas made. */
export async function cleanUp(): Promise<void> {
  await Promise.all([...open].map((store) => store.close().catch(() => undefined)));
  open.clear();
  const client = await admin();
  try {
    for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    schemas.clear();
  } finally {
    await client.end();
  }
}
