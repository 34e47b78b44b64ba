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
  const store = await PostgresSessionStore.connect({
    connectionString: pgUrl(),
    schema: options.schema ?? freshSchema(),
    pool: { max: 4 },
    ...options,
  });
  open.add(store);
  return store;
}

/** A plain client on the test database, for inspecting tables or killing connections. */
export async function admin(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: pgUrl() });
  await client.connect();
  return client;
}

/** `work` with a plain client on the test database, ended afterwards. */
export async function withAdmin<R>(work: (client: pg.Client) => Promise<R>): Promise<R> {
  const client = await admin();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/**
 * Runs `work` with a connection string for a role that has every privilege a node's `open()`
 * needs on `schema`'s tables, and more (CREATE on the database and the schema), but does not own
 * them, so it cannot alter them; the role is dropped afterwards.
 */
export async function asRoleNotOwning<R>(schema: string, work: (connectionString: string) => Promise<R>): Promise<R> {
  const role = `r_${schema}`;
  const password = "not-the-owner";
  return withAdmin(async (client) => {
    const database = client.escapeIdentifier((await client.query<{ db: string }>("SELECT current_database() AS db")).rows[0]!.db);
    await client.query(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'; GRANT CREATE ON DATABASE ${database} TO ${role};
      GRANT USAGE, CREATE ON SCHEMA ${schema} TO ${role}; GRANT ALL ON ALL TABLES IN SCHEMA ${schema} TO ${role}`);
    try {
      const url = new URL(pgUrl());
      url.username = role;
      url.password = password;
      return await work(url.toString());
    } finally {
      await client.query(`DROP OWNED BY ${role}; DROP ROLE ${role}`);
    }
  });
}

/** Each log table's `toast_tuple_target` (undefined: PostgreSQL's default), by table name. */
export async function logTableTargets(schema: string): Promise<Record<string, string | undefined>> {
  return withAdmin(async (client) => {
    const { rows } = await client.query<{ relname: string; target: string | null }>(
      `SELECT c.relname, (SELECT split_part(o, '=', 2) FROM unnest(c.reloptions) AS o WHERE o LIKE 'toast_tuple_target=%') AS target
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = $1 AND c.relname IN ('input_chunks', 'output_events') ORDER BY c.relname`,
      [schema],
    );
    return Object.fromEntries(rows.map((row) => [row.relname, row.target ?? undefined]));
  });
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
