/**
 * The SQLite store's statements, each prepared once when the store opens
 * (preparing per call cost more than many of the statements themselves).
 * Text only, and the SQL of each in one place; the store and its mutations
 * (`sqlite-mutations.ts`) run them.
 */
import type Database from "better-sqlite3";
import { ATTEMPT_RECORD_BYTES, SESSION_RECORD_BYTES } from "./record-bytes.js";

type Statement = Database.Statement<unknown[], unknown>;

/** The store's statements by name, each prepared once (`prepareStatements`). */
export interface SqliteStatements {
  readonly insertSession: Statement;
  readonly findByIdempotency: Statement;
  readonly getSession: Statement;
  readonly runningSessions: Statement;
  readonly insertAttempt: Statement;
  readonly getAttempt: Statement;
  readonly nextOrdinal: Statement;
  readonly insertStream: Statement;
  readonly listStreams: Statement;
  readonly getStream: Statement;
  readonly attach: Statement;
  readonly sessionOfStream: Statement;
  readonly sessionExists: Statement;
  readonly advanceInput: Statement;
  readonly advanceOutput: Statement;
  readonly readInput: Statement;
  readonly endInput: Statement;
  readonly inputEnded: Statement;
  readonly endOutput: Statement;
  readonly readOutput: Statement;
  readonly appendJournal: Statement;
  readonly journalEntry: Statement;
  readonly readJournal: Statement;
  readonly recordRun: Statement;
  readonly recordHandOver: Statement;
  readonly setResult: Statement;
  readonly finish: Statement;
  readonly purge: Statement;
  readonly tombstoneAttempts: Statement;
  readonly tombstoneIdempotency: Statement;
  readonly dropAttemptTombstones: Statement;
  readonly dropIdempotencyTombstones: Statement;
  readonly attemptTombstoned: Statement;
  readonly idempotencyTombstoned: Statement;
}

/** Every statement of the store on `db`, prepared. */
export function prepareStatements(db: Database.Database): SqliteStatements {
  return {
    insertSession: db.prepare(`INSERT INTO sessions VALUES (@session_id, @account, @principal,
      @application, @environment, @agent_type, @agent_identity, @method, @idempotency_key,
      @selector, @config, @parameters, @generation, @session_token, @stream_key_id, @state,
      @result, @outcome, @created_at, @finished_at)`),
    findByIdempotency: db.prepare(`SELECT session_id FROM sessions WHERE account = ? AND application = ?
      AND environment = ? AND agent_type = ? AND agent_identity = ? AND idempotency_key = ?`),
    getSession: db.prepare("SELECT * FROM sessions WHERE session_id = ?"),
    runningSessions: db.prepare("SELECT * FROM sessions WHERE state = 'running'"),
    insertAttempt: db.prepare(`INSERT INTO attempts VALUES (@attempt_id, @operation,
      @descriptor_digest, @session_id, @generation)`),
    getAttempt: db.prepare("SELECT * FROM attempts WHERE attempt_id = ?"),
    nextOrdinal: db.prepare("SELECT COALESCE(MAX(ordinal), -1) + 1 AS next FROM streams WHERE session_id = ?"),
    insertStream: db.prepare(`INSERT INTO streams (stream_id, session_id, ordinal, direction,
      element_kind, element_graph, coordinate, provisional_ref, parent_kind, parent_stream_id,
      parent_sequence, token) VALUES (@stream_id, @session_id, @ordinal, @direction, @element_kind,
      @element_graph, @coordinate, @provisional_ref, @parent_kind, @parent_stream_id,
      @parent_sequence, @token)`),
    listStreams: db.prepare("SELECT * FROM streams WHERE session_id = ? ORDER BY ordinal"),
    getStream: db.prepare("SELECT * FROM streams WHERE stream_id = ?"),
    attach: db.prepare(`UPDATE sessions SET generation = ?, session_token = ? WHERE session_id = ?`),
    sessionOfStream: db.prepare("SELECT session_id FROM streams WHERE stream_id = ?").pluck(),
    sessionExists: db.prepare("SELECT 1 FROM sessions WHERE session_id = ?").pluck(),
    // A log only grows at its end, and never past its terminal.
    advanceInput: db.prepare(`UPDATE streams SET count = count + ? WHERE stream_id = ? AND count = ?
      AND direction = 'input' AND input_terminal IS NULL`),
    advanceOutput: db.prepare(`UPDATE streams SET count = count + ? WHERE stream_id = ? AND count = ?
      AND direction = 'output' AND output_terminal = 0`),
    // The chunks that overlap [from, to). The lower bound is where the chunk holding `from` starts
    // (one index seek): bounded by `sequence < to` alone, the scan began at the stream's first
    // chunk, so a resend's duplicate check near the end of a long stream read the whole stream
    // (18.8 ms per call 200 000 items in; bench/read-input.mjs).
    readInput: db.prepare(`SELECT * FROM input_chunks WHERE stream_id = @stream
      AND sequence >= COALESCE((SELECT MAX(sequence) FROM input_chunks WHERE stream_id = @stream AND sequence <= @from), 0)
      AND sequence < @to AND sequence + item_count > @from ORDER BY sequence`),
    // @count: a client's natural end, recorded only where the input holds exactly that many items.
    endInput: db.prepare(`UPDATE streams SET input_terminal = @terminal WHERE stream_id = @stream AND input_terminal IS NULL
      AND (@count IS NULL OR count = @count)`),
    // An end the update above did not record: whether the input had ended already.
    inputEnded: db.prepare("SELECT input_terminal IS NOT NULL AS ended FROM streams WHERE stream_id = ?"),
    endOutput: db.prepare(`UPDATE streams SET output_terminal = 1 WHERE stream_id = ? AND count = ?
      AND direction = 'output' AND output_terminal = 0`),
    // From the row holding `from`, which may be a packed row that starts before it.
    readOutput: db.prepare(`SELECT * FROM output_events WHERE stream_id = @stream
      AND sequence >= COALESCE((SELECT MAX(sequence) FROM output_events WHERE stream_id = @stream AND sequence <= @from), @from)
      ORDER BY sequence, event DESC LIMIT @limit`),
    // Only while the session runs: a finished invocation's journal is closed. A taken position
    // inserts nothing: the caller then reads what holds it (journalEntry).
    appendJournal: db.prepare(`INSERT INTO journal (session_id, position, name, outcome)
      SELECT session_id, ?, ?, ? FROM sessions WHERE session_id = ? AND state = 'running'
      ON CONFLICT (session_id, position) DO NOTHING`),
    journalEntry: db.prepare("SELECT name, outcome FROM journal WHERE session_id = ? AND position = ?"),
    readJournal: db.prepare("SELECT * FROM journal WHERE session_id = ? ORDER BY position"),
    // A re-run whose progress passes the last one's starts `stalled` again at 0; a row an earlier
    // server left (no progress recorded) starts it too. A NULL progress is never past it.
    recordRun: db.prepare(
      `INSERT INTO session_runs (session_id, runs, progress, stalled)
      SELECT session_id, 2, @progress, CASE WHEN @progress > 0 THEN 0 ELSE 1 END FROM sessions
        WHERE session_id = @sessionId AND state = 'running'
      ON CONFLICT (session_id) DO UPDATE SET runs = runs + 1,
        stalled = CASE WHEN excluded.progress > coalesce(progress, -1) THEN 0 ELSE coalesce(stalled, 0) + 1 END,
        progress = CASE WHEN excluded.progress > coalesce(progress, -1) THEN excluded.progress ELSE progress END
      RETURNING runs, stalled`,
    ),
    // A progress below any a re-run measures (`recordHandOver`): the next re-run finds progress.
    // The run count stays; a session not re-run yet gets its row with the first run's count.
    recordHandOver: db.prepare(
      `INSERT INTO session_runs (session_id, runs, progress, stalled)
      SELECT session_id, 1, -1, 0 FROM sessions WHERE session_id = ? AND state = 'running'
      ON CONFLICT (session_id) DO UPDATE SET progress = -1, stalled = 0`,
    ),
    setResult: db.prepare("UPDATE sessions SET result = ? WHERE session_id = ? AND result IS NULL"),
    finish: db.prepare(`UPDATE sessions SET state = 'finished', outcome = ?, finished_at = ?
      WHERE session_id = ? AND state = 'running'`),
    // RETURNING: the deleted ids, for their payload files, from the one statement.
    purge: db.prepare("DELETE FROM sessions WHERE state = 'finished' AND finished_at < ? RETURNING session_id").pluck(),
    // Tombstones are written before the purge deletes what they name.
    tombstoneAttempts: db.prepare(`INSERT OR REPLACE INTO attempt_tombstones (attempt_id, stamped_at)
      SELECT attempt_id, ? FROM attempts JOIN sessions USING (session_id) WHERE state = 'finished' AND finished_at < ?`),
    tombstoneIdempotency: db.prepare(`INSERT OR REPLACE INTO idempotency_tombstones
      SELECT account, application, environment, agent_type, agent_identity, idempotency_key, ?
      FROM sessions WHERE state = 'finished' AND finished_at < ?`),
    dropAttemptTombstones: db.prepare("DELETE FROM attempt_tombstones WHERE stamped_at < ?"),
    dropIdempotencyTombstones: db.prepare("DELETE FROM idempotency_tombstones WHERE stamped_at < ?"),
    attemptTombstoned: db.prepare("SELECT 1 FROM attempt_tombstones WHERE attempt_id = ?").pluck(),
    idempotencyTombstoned: db
      .prepare(
        `SELECT 1 FROM idempotency_tombstones WHERE account = ? AND application = ?
      AND environment = ? AND agent_type = ? AND agent_identity = ? AND idempotency_key = ?`,
      )
      .pluck(),
  };
}

/** A session's own record as counted (store/record-bytes.ts): its fixed part and its texts, in UTF-8 bytes. */
const SESSION_RECORD_SQL = `${SESSION_RECORD_BYTES} + length(CAST(s.agent_identity AS BLOB)) + length(CAST(s.idempotency_key AS BLOB))
    + length(CAST(s.selector AS BLOB)) + length(CAST(s.config AS BLOB)) + length(CAST(s.parameters AS BLOB))
    + COALESCE(length(CAST(s.result AS BLOB)), 0)`;

/**
 * The bytes each principal keeps (`SessionStore.storedBytesByPrincipal`): its logs' payload
 * bytes, summed per stream before the joins (measured: 1 million 64-byte rows, 0.9 s instead of
 * 5 s joined per row; a row's bytes are in its payload file, `payload_length`, or inline), its
 * sessions' records and their attempts (store/record-bytes.ts). Prepared when asked (it runs at
 * start only).
 */
export const STORED_BYTES_SQL = `SELECT s.account, s.principal, SUM(kept.bytes) AS bytes FROM (
    SELECT t.session_id, logs.bytes FROM (
      SELECT stream_id, SUM(COALESCE(payload_length, length(data))) AS bytes FROM input_chunks GROUP BY stream_id
      UNION ALL
      SELECT stream_id, SUM(COALESCE(payload_length, length(data), 0)) FROM output_events WHERE event = 'item' GROUP BY stream_id
    ) logs JOIN streams t ON t.stream_id = logs.stream_id
    UNION ALL
    SELECT session_id, COUNT(*) * ${ATTEMPT_RECORD_BYTES} FROM attempts GROUP BY session_id
    UNION ALL
    SELECT s.session_id, ${SESSION_RECORD_SQL} FROM sessions s
  ) kept JOIN sessions s ON s.session_id = kept.session_id
  GROUP BY s.account, s.principal HAVING SUM(kept.bytes) > 0`;

/** The same of the sessions finished before `?` (a purge about to delete them): only their rows are read. */
export const PURGEABLE_BYTES_SQL = `WITH purged AS (SELECT session_id, account, principal FROM sessions WHERE state = 'finished' AND finished_at < ?)
  SELECT p.account, p.principal, SUM(kept.bytes) AS bytes FROM (
    SELECT t.session_id,
      (SELECT COALESCE(SUM(COALESCE(c.payload_length, length(c.data))), 0) FROM input_chunks c WHERE c.stream_id = t.stream_id)
      + (SELECT COALESCE(SUM(COALESCE(o.payload_length, length(o.data), 0)), 0) FROM output_events o WHERE o.stream_id = t.stream_id AND o.event = 'item')
      AS bytes
    FROM streams t WHERE t.session_id IN (SELECT session_id FROM purged)
    UNION ALL
    SELECT session_id, COUNT(*) * ${ATTEMPT_RECORD_BYTES} FROM attempts WHERE session_id IN (SELECT session_id FROM purged) GROUP BY session_id
    UNION ALL
    SELECT s.session_id, ${SESSION_RECORD_SQL} FROM sessions s WHERE s.session_id IN (SELECT session_id FROM purged)
  ) kept JOIN purged p ON p.session_id = kept.session_id
  GROUP BY p.account, p.principal HAVING SUM(kept.bytes) > 0`;
