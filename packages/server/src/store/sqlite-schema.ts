/**
 * The SQLite store's tables, and the upgrade of a database written by an
 * earlier version of this package. `PRAGMA user_version` holds the version.
 */
import type Database from "better-sqlite3";

/**
 * The logs are rowid tables whose primary key is a separate index. Not
 * WITHOUT ROWID: that stores whole rows, blobs included, in the key's
 * B-tree, and small rows inserted beside megabyte rows there cost up to
 * 45 times more (measured: 20 000 small chunks after 72 MiB of u8 input,
 * 3.3 s instead of 70 ms). Here a row's bytes sit in the rowid B-tree and
 * the key index holds only the key.
 *
 * `payload_offset`/`payload_length`, when set, say that the row's bytes are
 * in its session's payload file (`payload-files.ts`) and `data` is empty.
 * `parts`, when set, says that the row packs several appends
 * (`packed-rows.ts`). New columns go last: rows are inserted by position.
 */
const LOG_TABLES = `
CREATE TABLE IF NOT EXISTS input_chunks (
  stream_id TEXT NOT NULL REFERENCES streams(stream_id) ON DELETE CASCADE,
  sequence INTEGER NOT NULL, item_count INTEGER NOT NULL, data BLOB NOT NULL, mime_type TEXT,
  payload_offset INTEGER, payload_length INTEGER, parts BLOB,
  PRIMARY KEY (stream_id, sequence)
);
CREATE TABLE IF NOT EXISTS output_events (
  stream_id TEXT NOT NULL REFERENCES streams(stream_id) ON DELETE CASCADE,
  sequence INTEGER NOT NULL, event TEXT NOT NULL, item_count INTEGER NOT NULL,
  data BLOB, mime_type TEXT, outcome TEXT,
  payload_offset INTEGER, payload_length INTEGER, parts BLOB,
  PRIMARY KEY (stream_id, sequence, event)
);
`;

/**
 * 0: the first schema, whose logs were WITHOUT ROWID.
 * 1: rowid logs.
 * 2: logs may point into payload files.
 * 3: tombstones of purged sessions.
 * 4: a log row may pack several appends (`parts`).
 * 5: the journal of replayable invocations and their run counts (since joined,
 *    without a version, by how far the runs had got: `addRunProgressColumns`).
 * 6: a packed row may keep its bytes in the payload file (a run of small input:
 *    `InputAppendTask.placePayload`), which a server of version 5 would read as
 *    a damaged row; the tables are those of version 5.
 */
export const SCHEMA_VERSION = 6;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS sessions (
  session_id TEXT PRIMARY KEY,
  account TEXT NOT NULL, principal TEXT NOT NULL,
  application TEXT NOT NULL, environment TEXT NOT NULL, agent_type TEXT NOT NULL,
  agent_identity TEXT NOT NULL, method TEXT NOT NULL, idempotency_key TEXT NOT NULL,
  selector TEXT NOT NULL, config TEXT NOT NULL, parameters TEXT NOT NULL,
  generation INTEGER NOT NULL, session_token TEXT NOT NULL, stream_key_id TEXT NOT NULL,
  state TEXT NOT NULL, result TEXT, outcome TEXT,
  created_at INTEGER NOT NULL, finished_at INTEGER
);
CREATE UNIQUE INDEX IF NOT EXISTS sessions_idempotency ON sessions
  (account, application, environment, agent_type, agent_identity, idempotency_key);
CREATE INDEX IF NOT EXISTS sessions_state ON sessions (state, finished_at);
CREATE TABLE IF NOT EXISTS attempts (
  attempt_id TEXT PRIMARY KEY,
  operation TEXT NOT NULL, descriptor_digest TEXT NOT NULL,
  session_id TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
  generation INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS attempts_session ON attempts (session_id);
CREATE TABLE IF NOT EXISTS streams (
  stream_id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
  ordinal INTEGER NOT NULL, direction TEXT NOT NULL, element_kind TEXT NOT NULL,
  element_graph TEXT NOT NULL, coordinate TEXT NOT NULL, provisional_ref TEXT,
  parent_kind TEXT NOT NULL, parent_stream_id TEXT, parent_sequence INTEGER,
  token TEXT NOT NULL, count INTEGER NOT NULL DEFAULT 0,
  input_terminal TEXT, output_terminal INTEGER NOT NULL DEFAULT 0,
  UNIQUE (session_id, ordinal)
);
${LOG_TABLES}
CREATE TABLE IF NOT EXISTS attempt_tombstones (
  attempt_id TEXT PRIMARY KEY, stamped_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS idempotency_tombstones (
  account TEXT NOT NULL, application TEXT NOT NULL, environment TEXT NOT NULL, agent_type TEXT NOT NULL,
  agent_identity TEXT NOT NULL, idempotency_key TEXT NOT NULL, stamped_at INTEGER NOT NULL,
  PRIMARY KEY (account, application, environment, agent_type, agent_identity, idempotency_key)
);
CREATE INDEX IF NOT EXISTS attempt_tombstones_stamped ON attempt_tombstones (stamped_at);
CREATE INDEX IF NOT EXISTS idempotency_tombstones_stamped ON idempotency_tombstones (stamped_at);
CREATE TABLE IF NOT EXISTS journal (
  session_id TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
  position INTEGER NOT NULL, name TEXT NOT NULL, outcome TEXT NOT NULL,
  PRIMARY KEY (session_id, position)
);
CREATE TABLE IF NOT EXISTS session_runs (
  session_id TEXT PRIMARY KEY REFERENCES sessions(session_id) ON DELETE CASCADE,
  runs INTEGER NOT NULL, progress INTEGER, stalled INTEGER
);`;

/** The columns the logs had before version 2, in table order. */
const V1_COLUMNS = {
  input_chunks: "stream_id, sequence, item_count, data, mime_type",
  output_events: "stream_id, sequence, event, item_count, data, mime_type, outcome",
} as const;

/**
 * Creates the schema, or brings a database of an earlier version to this
 * one, in one transaction (a crash half-way leaves the old version whole).
 */
export function migrate(db: Database.Database): void {
  db.transaction(() => {
    const version = Number(db.pragma("user_version", { simple: true }));
    if (version === SCHEMA_VERSION) {
      addRunProgressColumns(db);
      return;
    }
    if (version > SCHEMA_VERSION) throw new Error(`sessions.db has schema version ${version}; this server knows ${SCHEMA_VERSION}`);
    const logs = (["input_chunks", "output_events"] as const).filter(
      (name) => db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined,
    );
    if (version === 0) {
      // Version 0 logs were WITHOUT ROWID: copy them into rowid tables.
      for (const name of logs) db.exec(`ALTER TABLE ${name} RENAME TO ${name}_v0`);
      db.exec(SCHEMA);
      for (const name of logs) {
        db.exec(`INSERT INTO ${name} (${V1_COLUMNS[name]}) SELECT ${V1_COLUMNS[name]} FROM ${name}_v0; DROP TABLE ${name}_v0;`);
      }
    } else if (version === 1) {
      // Version 1: every payload is inline; the new columns stay NULL.
      for (const name of logs) {
        db.exec(`ALTER TABLE ${name} ADD COLUMN payload_offset INTEGER; ALTER TABLE ${name} ADD COLUMN payload_length INTEGER;`);
      }
      db.exec(SCHEMA);
      addPartsColumn(db, logs);
    } else if (version < 4) {
      // Versions 2 and 3: new tables, and the logs' `parts` column (NULL: every old row is one append).
      db.exec(SCHEMA);
      addPartsColumn(db, logs);
    } else if (version === 4) {
      // Version 4: new tables only.
      db.exec(SCHEMA);
    }
    // Version 5 has every table and column already: only the version moves, so that a server of
    // version 5 refuses what this one writes.
    addRunProgressColumns(db);
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
  })();
}

/**
 * `session_runs.progress` and `stalled`: how far the invocation's runs had got at its last re-run,
 * and the re-runs in a row that found nothing more (`SessionStore.recordRun`). Not a version:
 * nullable columns no statement of an earlier server names, so such a server still opens the
 * database (its re-runs leave them as they were); a row without them starts a new count.
 */
function addRunProgressColumns(db: Database.Database): void {
  const columns = db.prepare("SELECT name FROM pragma_table_info('session_runs')").pluck().all() as string[];
  if (!columns.includes("progress")) db.exec("ALTER TABLE session_runs ADD COLUMN progress INTEGER");
  if (!columns.includes("stalled")) db.exec("ALTER TABLE session_runs ADD COLUMN stalled INTEGER");
}

/** Adds `parts` to logs made before version 4 (the version 0 path recreates its logs with it). */
function addPartsColumn(db: Database.Database, logs: readonly string[]): void {
  for (const name of logs) db.exec(`ALTER TABLE ${name} ADD COLUMN parts BLOB`);
}
