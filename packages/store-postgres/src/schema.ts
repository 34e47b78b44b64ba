/**
 * The store's tables, created and upgraded by numbered migrations.
 *
 * `migrate` runs in one transaction that first takes a transaction-scoped
 * advisory lock keyed by the schema name, so nodes starting at once apply
 * each migration exactly once (the others wait, then find it applied). The
 * applied versions are rows of `schema_migrations`. Storage settings that
 * change no row nor how rows are read are applied in the same transaction
 * without a version (`log-storage.ts`), so a node of an earlier version
 * still starts against the database.
 */
import type pg from "pg";
import { applyLogStorage } from "./log-storage.js";
import { createSchemaRefused, existing, INSUFFICIENT_PRIVILEGE, schemaRefused, upgradeRefused, type Grantee } from "./privileges.js";
import type { StoreFeatures } from "./store-context.js";

/** An identifier PostgreSQL takes unquoted: lower-case letters, digits, `_`, at most 63 bytes. */
const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

export function checkSchemaName(schema: string): string {
  if (typeof schema !== "string" || !IDENTIFIER.test(schema)) {
    throw new TypeError(`schema must be a lower-case SQL identifier (letters, digits, _; at most 63), got ${JSON.stringify(schema)}`);
  }
  return schema;
}

/** First key of the migration lock (the second is the hash of the schema name). */
const MIGRATION_LOCK = 0x676f6c65; // "gole"

interface Migration {
  readonly version: number;
  readonly sql: (s: string) => string;
}

/**
 * Version 1 mirrors the SQLite store (sessions, attempts, streams, the two
 * logs, tombstones) and adds cluster mode: `sessions.owner_node` and the
 * `nodes` lease table. Payloads are `bytea`; sequences, counts, generations
 * and millisecond times are `bigint`.
 */
const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    sql: (s) => `
CREATE TABLE ${s}.sessions (
  session_id text PRIMARY KEY,
  account text NOT NULL, principal text NOT NULL,
  application text NOT NULL, environment text NOT NULL, agent_type text NOT NULL,
  agent_identity text NOT NULL, method text NOT NULL, idempotency_key text NOT NULL,
  selector text NOT NULL, config text NOT NULL, parameters text NOT NULL,
  generation bigint NOT NULL, session_token text NOT NULL, stream_key_id text NOT NULL,
  state text NOT NULL CHECK (state IN ('running', 'finished')), result text, outcome text,
  created_at bigint NOT NULL, finished_at bigint,
  owner_node text,
  CONSTRAINT sessions_idempotency UNIQUE (account, application, environment, agent_type, agent_identity, idempotency_key)
);
CREATE INDEX sessions_finished ON ${s}.sessions (finished_at) WHERE state = 'finished';
CREATE INDEX sessions_running ON ${s}.sessions (owner_node) WHERE state = 'running';
CREATE TABLE ${s}.attempts (
  attempt_id text PRIMARY KEY,
  operation text NOT NULL, descriptor_digest text NOT NULL,
  session_id text NOT NULL REFERENCES ${s}.sessions (session_id) ON DELETE CASCADE,
  generation bigint NOT NULL
);
CREATE INDEX attempts_session ON ${s}.attempts (session_id);
CREATE TABLE ${s}.streams (
  stream_id text PRIMARY KEY,
  session_id text NOT NULL REFERENCES ${s}.sessions (session_id) ON DELETE CASCADE,
  ordinal integer NOT NULL, direction text NOT NULL, element_kind text NOT NULL,
  element_graph text NOT NULL, coordinate text NOT NULL, provisional_ref text,
  parent_kind text NOT NULL, parent_stream_id text, parent_sequence bigint,
  token text NOT NULL, count bigint NOT NULL DEFAULT 0,
  input_terminal text, output_terminal boolean NOT NULL DEFAULT false,
  UNIQUE (session_id, ordinal)
);
CREATE TABLE ${s}.input_chunks (
  stream_id text NOT NULL REFERENCES ${s}.streams (stream_id) ON DELETE CASCADE,
  sequence bigint NOT NULL, item_count bigint NOT NULL, data bytea NOT NULL, mime_type text,
  PRIMARY KEY (stream_id, sequence)
);
CREATE TABLE ${s}.output_events (
  stream_id text NOT NULL REFERENCES ${s}.streams (stream_id) ON DELETE CASCADE,
  sequence bigint NOT NULL, event text NOT NULL CHECK (event IN ('item', 'terminal')), item_count bigint NOT NULL,
  data bytea, mime_type text, outcome text,
  PRIMARY KEY (stream_id, sequence, event)
);
-- kind 'attempt': key is the attempt id; kind 'idempotency': key is the JSON array
-- [account, application, environment, agent_type, agent_identity, idempotency_key].
CREATE TABLE ${s}.tombstones (
  kind text NOT NULL CHECK (kind IN ('attempt', 'idempotency')),
  key text NOT NULL,
  stamped_at bigint NOT NULL,
  PRIMARY KEY (kind, key)
);
CREATE INDEX tombstones_stamped ON ${s}.tombstones (stamped_at);
CREATE TABLE ${s}.nodes (
  node_id text PRIMARY KEY,
  lease_expires_at timestamptz NOT NULL
);
`,
  },
  {
    // Packed log rows (@golem-stream/server's packRun/splitPacked): `parts` is NULL in every row
    // written before. `nodes.log_format` is what each live node can read: a node of version 1
    // leaves it NULL, and while one is live nobody packs (membership.ts, `packing`).
    version: 2,
    sql: (s) => `
ALTER TABLE ${s}.input_chunks ADD COLUMN parts bytea;
ALTER TABLE ${s}.output_events ADD COLUMN parts bytea;
ALTER TABLE ${s}.nodes ADD COLUMN log_format integer;
`,
  },
  {
    // Fencing (@golem-stream/server's ownership.ts): each session's ownership epoch, 1 at its
    // creation and one more at each claim. Every stream carries its session's epoch too, set in
    // the claim's transaction, so an owner's append checks it on the row it updates anyway.
    // Existing sessions and streams start at 1 (a constant default: no table rewrite).
    version: 3,
    sql: (s) => `
ALTER TABLE ${s}.sessions ADD COLUMN owner_epoch bigint NOT NULL DEFAULT 1;
ALTER TABLE ${s}.streams ADD COLUMN owner_epoch bigint NOT NULL DEFAULT 1;
`,
  },
  {
    // The journal of replayable invocations and their run counts (@golem-stream/server's
    // docs/durable-execution.md); both go with their session (purge, cascade).
    version: 4,
    sql: (s) => `
CREATE TABLE ${s}.journal (
  session_id text NOT NULL REFERENCES ${s}.sessions (session_id) ON DELETE CASCADE,
  position integer NOT NULL, name text NOT NULL, outcome text NOT NULL,
  PRIMARY KEY (session_id, position)
);
CREATE TABLE ${s}.session_runs (
  session_id text PRIMARY KEY REFERENCES ${s}.sessions (session_id) ON DELETE CASCADE,
  runs integer NOT NULL
);
`,
  },
  {
    // Commit markers (lost-commit.ts): one row per writer (a store instance), set by each of its
    // groups of several statements inside the group's transaction, so a group whose COMMIT
    // answer was lost is known committed or not even after a crash handed its transaction id out
    // again. Rows are deleted when their store closes, or swept once unused for a day.
    version: 5,
    sql: (s) => `
CREATE TABLE ${s}.writer_groups (
  writer text PRIMARY KEY,
  group_seq bigint NOT NULL,
  written_at timestamptz NOT NULL DEFAULT now()
);
`,
  },
];

export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * Creates the schema or brings it to `SCHEMA_VERSION`, in one transaction under the migration lock;
 * resolves to what the database has beyond its version (`addUnversionedColumns`).
 */
export async function migrate(client: pg.ClientBase, schema: string): Promise<StoreFeatures> {
  const s = checkSchemaName(schema);
  await client.query("BEGIN");
  let who: Grantee | undefined;
  try {
    await client.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [MIGRATION_LOCK, s]);
    const found = await existing(client, s);
    who = found;
    // Each only when missing: CREATE … IF NOT EXISTS asks for CREATE on the database (the schema)
    // or the schema (the table) even when it exists, and a role that does not own them needs neither.
    if (!found.schema) {
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`).catch((error: unknown) => {
        throw createSchemaRefused(error, s, found);
      });
    }
    if (!found.migrations) {
      await client.query(`CREATE TABLE IF NOT EXISTS ${s}.schema_migrations (
        version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    }
    const { rows } = await client.query<{ version: number | null }>(`SELECT max(version) AS version FROM ${s}.schema_migrations`);
    const current = rows[0]?.version ?? 0;
    if (current > SCHEMA_VERSION) {
      throw new Error(`schema ${s} has version ${current}; this @golem-stream/store-postgres knows up to ${SCHEMA_VERSION}`);
    }
    for (const migration of MIGRATIONS) {
      if (migration.version <= current) continue;
      await client.query(migration.sql(s)).catch((error: unknown) => {
        throw upgradeRefused(error, s, found);
      });
      await client.query(`INSERT INTO ${s}.schema_migrations (version) VALUES ($1)`, [migration.version]);
    }
    // A storage setting, not a migration: the schema version stays (log-storage.ts).
    await applyLogStorage(client, s);
    const features = await addUnversionedColumns(client, s);
    await client.query("COMMIT");
    return features;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw who === undefined ? error : schemaRefused(error, s, who);
  }
}

/**
 * `nodes.catalogue`: the fingerprint of the catalogue each node serves, for
 * the cluster's catalogue check (`ClusterSessionStore.setCatalogue`);
 * `nodes.incarnation`: which process last renewed the lease, so that two
 * processes with one node id notice each other (`HeartbeatReport`); and
 * `session_runs.progress` and `stalled`: how far an invocation's runs had got
 * at its last re-run and the re-runs in a row that found nothing more
 * (`SessionStore.recordRun`). Not a numbered migration: nullable columns
 * that no statement of an earlier version names, so such a node still starts
 * and runs against a database that has them (its rows leave them NULL, and
 * a run count it writes goes on). A role that does not own the tables cannot
 * add them: the node starts, and the catalogue check and the node-id check
 * are off, and every re-run counts as one without progress, until an owner's
 * node has added the columns.
 */
async function addUnversionedColumns(client: pg.ClientBase, s: string): Promise<StoreFeatures> {
  // Only what is missing: ALTER TABLE takes its table's ACCESS EXCLUSIVE lock even when every
  // column exists, and a node's start would then wait behind the others' writes to it.
  const missing = await missingColumns(client, s);
  if (missing.length > 0) {
    await client.query("SAVEPOINT unversioned_columns");
    try {
      for (const { table, column, type } of missing)
        await client.query(`ALTER TABLE ${s}.${table} ADD COLUMN IF NOT EXISTS ${column} ${type}`);
      await client.query("RELEASE SAVEPOINT unversioned_columns");
    } catch (error) {
      if ((error as { code?: unknown }).code !== INSUFFICIENT_PRIVILEGE) throw error;
      await client.query("ROLLBACK TO SAVEPOINT unversioned_columns");
    }
  }
  // Another role's node may have added them; a role that cannot has none of them.
  const absent = missing.length === 0 ? [] : await missingColumns(client, s);
  return { runProgress: !absent.some((c) => c.table === "session_runs") };
}

const UNVERSIONED_COLUMNS = [
  { table: "nodes", column: "catalogue", type: "text" },
  { table: "nodes", column: "incarnation", type: "text" },
  { table: "session_runs", column: "progress", type: "bigint" },
  { table: "session_runs", column: "stalled", type: "integer" },
] as const;

/** The unversioned columns the database does not have (yet). */
async function missingColumns(client: pg.ClientBase, s: string): Promise<(typeof UNVERSIONED_COLUMNS)[number][]> {
  const { rows } = await client.query<{ table_name: string; column_name: string }>(
    `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name IN ('nodes', 'session_runs')`,
    [s],
  );
  const present = new Set(rows.map((row) => `${row.table_name}.${row.column_name}`));
  return UNVERSIONED_COLUMNS.filter(({ table, column }) => !present.has(`${table}.${column}`));
}
