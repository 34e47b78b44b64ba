/**
 * Every SQL statement of `PostgresSessionStore` but the writer's transaction control
 * (`control-statements.ts`), the group statement (`append-group.ts`), the session reads'
 * combined query (`session-reads.ts`) and the migrations (`schema.ts`): text only, built once
 * per store for its schema, so each reads as SQL in one place.
 */
import { ATTEMPT_RECORD_BYTES, SESSION_RECORD_BYTES } from "@golem-stream/server/store";

/** The store's statements, schema-qualified (`s`: a name `checkSchemaName` accepted). */
export type Statements = ReturnType<typeof statements>;

/** Every statement, schema-qualified. */
export function statements(s: string) {
  /** A session's own record as counted (the server's store/record-bytes.ts): its fixed part and its texts, in UTF-8 bytes. */
  const sessionRecordSql = `${SESSION_RECORD_BYTES}::bigint + octet_length(s.agent_identity) + octet_length(s.idempotency_key)
    + octet_length(s.selector) + octet_length(s.config) + octet_length(s.parameters) + COALESCE(octet_length(s.result), 0)`;
  const scope = "json_build_array($2::text, $3::text, $4::text, $5::text, $6::text, $7::text)::text";
  return {
    // attempt-exists, then purged (attempt id or idempotency scope tombstoned), then idempotency-conflict.
    createCheck: `SELECT CASE
        WHEN EXISTS (SELECT 1 FROM ${s}.attempts WHERE attempt_id = $1) THEN 'attempt-exists'
        WHEN EXISTS (SELECT 1 FROM ${s}.tombstones WHERE (kind = 'attempt' AND key = $1) OR (kind = 'idempotency' AND key = ${scope})) THEN 'purged'
        WHEN EXISTS (SELECT 1 FROM ${s}.sessions WHERE account = $2 AND application = $3 AND environment = $4
          AND agent_type = $5 AND agent_identity = $6 AND idempotency_key = $7) THEN 'idempotency-conflict'
      END AS verdict`,
    insertSession: `INSERT INTO ${s}.sessions (session_id, account, principal, application, environment, agent_type,
        agent_identity, method, idempotency_key, selector, config, parameters, generation, session_token,
        stream_key_id, state, result, outcome, created_at, finished_at, owner_node)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)
      ON CONFLICT DO NOTHING`,
    insertAttempt: `INSERT INTO ${s}.attempts (attempt_id, operation, descriptor_digest, session_id, generation)
      VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
    getAttempt: `SELECT * FROM ${s}.attempts WHERE attempt_id = $1`,
    getSession: `SELECT * FROM ${s}.sessions WHERE session_id = $1`,
    runningSessions: `SELECT * FROM ${s}.sessions WHERE state = 'running' ORDER BY created_at, session_id`,
    // Payload bytes per stream before the joins, then each session's record and its attempts
    // (record-bytes.ts of the server's store), summed per principal.
    storedBytes: `SELECT s.account, s.principal, SUM(kept.bytes)::text AS bytes FROM (
        SELECT t.session_id, logs.bytes FROM (
          SELECT stream_id, SUM(octet_length(data)::bigint) AS bytes FROM ${s}.input_chunks GROUP BY stream_id
          UNION ALL
          SELECT stream_id, SUM(COALESCE(octet_length(data), 0)::bigint) FROM ${s}.output_events WHERE event = 'item' GROUP BY stream_id
        ) logs JOIN ${s}.streams t ON t.stream_id = logs.stream_id
        UNION ALL
        SELECT session_id, COUNT(*) * ${ATTEMPT_RECORD_BYTES} FROM ${s}.attempts GROUP BY session_id
        UNION ALL
        SELECT s.session_id, ${sessionRecordSql} FROM ${s}.sessions s
      ) kept JOIN ${s}.sessions s ON s.session_id = kept.session_id
      GROUP BY s.account, s.principal HAVING SUM(kept.bytes) > 0`,
    purgeableBytes: `WITH purged AS (SELECT session_id, account, principal FROM ${s}.sessions WHERE state = 'finished' AND finished_at < $1)
      SELECT p.account, p.principal, SUM(kept.bytes)::text AS bytes FROM (
        SELECT t.session_id,
          (SELECT COALESCE(SUM(octet_length(c.data)::bigint), 0) FROM ${s}.input_chunks c WHERE c.stream_id = t.stream_id)
          + (SELECT COALESCE(SUM(COALESCE(octet_length(o.data), 0)::bigint), 0) FROM ${s}.output_events o WHERE o.stream_id = t.stream_id AND o.event = 'item')
          AS bytes
        FROM ${s}.streams t WHERE t.session_id IN (SELECT session_id FROM purged)
        UNION ALL
        SELECT session_id, COUNT(*) * ${ATTEMPT_RECORD_BYTES} FROM ${s}.attempts WHERE session_id IN (SELECT session_id FROM purged) GROUP BY session_id
        UNION ALL
        SELECT s.session_id, ${sessionRecordSql} FROM ${s}.sessions s WHERE s.session_id IN (SELECT session_id FROM purged)
      ) kept JOIN purged p ON p.session_id = kept.session_id
      GROUP BY p.account, p.principal HAVING SUM(kept.bytes) > 0`,
    lockSessions: `SELECT 1 FROM ${s}.sessions WHERE session_id = ANY($1::text[]) ORDER BY session_id FOR UPDATE`,
    // A new stream takes its session's ownership epoch (the session row is locked: lockSessions).
    insertStream: `INSERT INTO ${s}.streams (stream_id, session_id, ordinal, direction, element_kind, element_graph,
        coordinate, provisional_ref, parent_kind, parent_stream_id, parent_sequence, token, owner_epoch)
      SELECT $1, $2, COALESCE(MAX(ordinal) + 1, 0), $3, $4, $5, $6, $7, $8, $9, $10, $11,
        (SELECT owner_epoch FROM ${s}.sessions WHERE session_id = $2) FROM ${s}.streams WHERE session_id = $2`,
    listStreams: `SELECT * FROM ${s}.streams WHERE session_id = $1 ORDER BY ordinal`,
    getStream: `SELECT * FROM ${s}.streams WHERE stream_id = $1`,
    lockGeneration: `SELECT generation FROM ${s}.sessions WHERE session_id = $1 FOR UPDATE`,
    attach: `UPDATE ${s}.sessions SET generation = $1, session_token = $2 WHERE session_id = $3`,
    // A log only grows at its end, and never past its terminal; an owner's write ($4, else NULL)
    // only at its ownership epoch (fencing).
    advanceInput: `UPDATE ${s}.streams SET count = count + $1 WHERE stream_id = $2 AND count = $3
      AND direction = 'input' AND input_terminal IS NULL AND ($4::bigint IS NULL OR owner_epoch = $4) RETURNING session_id`,
    advanceOutput: `UPDATE ${s}.streams SET count = count + $1 WHERE stream_id = $2 AND count = $3
      AND direction = 'output' AND NOT output_terminal AND ($4::bigint IS NULL OR owner_epoch = $4) RETURNING session_id`,
    streamEpoch: `SELECT session_id, owner_epoch FROM ${s}.streams WHERE stream_id = $1`,
    sessionEpoch: `SELECT session_id, owner_epoch FROM ${s}.sessions WHERE session_id = $1`,
    // A run of appends (write-queue.ts): the count moves by their sum only if it is where the
    // first starts; the rows go in only if it moved (no error, so no savepoint is spoiled).
    inputRun: `WITH moved AS (
        UPDATE ${s}.streams SET count = count + $1 WHERE stream_id = $2 AND count = $3
          AND direction = 'input' AND input_terminal IS NULL AND ($9::bigint IS NULL OR owner_epoch = $9) RETURNING session_id
      ), rows AS (
        INSERT INTO ${s}.input_chunks (stream_id, sequence, item_count, data, mime_type, parts)
        SELECT $2, r.sequence, r.item_count, r.data, r.mime_type, r.parts
        FROM unnest($4::bigint[], $5::bigint[], $6::bytea[], $7::text[], $8::bytea[]) AS r(sequence, item_count, data, mime_type, parts), moved
      )
      SELECT session_id FROM moved`,
    outputRun: `WITH moved AS (
        UPDATE ${s}.streams SET count = count + $1 WHERE stream_id = $2 AND count = $3
          AND direction = 'output' AND NOT output_terminal AND ($9::bigint IS NULL OR owner_epoch = $9) RETURNING session_id
      ), rows AS (
        INSERT INTO ${s}.output_events (stream_id, sequence, event, item_count, data, mime_type, outcome, parts)
        SELECT $2, r.sequence, 'item', r.item_count, r.data, r.mime_type, NULL, r.parts
        FROM unnest($4::bigint[], $5::bigint[], $6::bytea[], $7::text[], $8::bytea[]) AS r(sequence, item_count, data, mime_type, parts), moved
      )
      SELECT session_id FROM moved`,
    insertInput: `INSERT INTO ${s}.input_chunks (stream_id, sequence, item_count, data, mime_type) VALUES ($1, $2, $3, $4, $5)`,
    // Lower bound: where the chunk holding `from` starts (one index probe). With `sequence < to`
    // alone the index scan began at the stream's first chunk: a resend's duplicate check near
    // the end of a long stream read the whole stream.
    readInput: `SELECT * FROM ${s}.input_chunks WHERE stream_id = $1
      AND sequence >= COALESCE((SELECT max(sequence) FROM ${s}.input_chunks WHERE stream_id = $1 AND sequence <= $3), 0)
      AND sequence < $2 AND sequence + item_count > $3 ORDER BY sequence`,
    // $4: a client's natural end, recorded only where the input holds exactly that many items.
    endInput: `UPDATE ${s}.streams SET input_terminal = $1 WHERE stream_id = $2 AND input_terminal IS NULL
      AND ($3::bigint IS NULL OR owner_epoch = $3) AND ($4::bigint IS NULL OR count = $4) RETURNING session_id`,
    inputEnded: `SELECT input_terminal IS NOT NULL AS ended FROM ${s}.streams WHERE stream_id = $1`,
    insertOutput: `INSERT INTO ${s}.output_events (stream_id, sequence, event, item_count, data, mime_type, outcome)
      VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    endOutput: `UPDATE ${s}.streams SET output_terminal = true WHERE stream_id = $1 AND count = $2
      AND direction = 'output' AND NOT output_terminal AND ($3::bigint IS NULL OR owner_epoch = $3) RETURNING session_id`,
    // Up to $3 rows from $2 (one more when the row holding $2 starts before it: a packed row
    // with items on both sides), whose preceding payload bytes are below $4 (NULL: no bound), a
    // row starting before $2 counting none: sizes first (octet_length reads no TOAST), payloads
    // only of the rows kept.
    readOutput: `WITH start AS (
        SELECT COALESCE(max(sequence), $2) AS at FROM ${s}.output_events WHERE stream_id = $1 AND sequence <= $2
      )
      SELECT o.stream_id, o.sequence, o.event, o.item_count, o.data, o.mime_type, o.outcome, o.parts
      FROM (
        SELECT sequence, event, COALESCE(SUM(size) OVER (ORDER BY sequence, event DESC
          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
        FROM (SELECT sequence, event, CASE WHEN sequence < $2 THEN 0 ELSE COALESCE(octet_length(data), 0) END AS size
              FROM ${s}.output_events
              WHERE stream_id = $1 AND sequence >= (SELECT at FROM start)
              ORDER BY sequence, event DESC LIMIT $3 + (SELECT CASE WHEN at < $2 THEN 1 ELSE 0 END FROM start)) AS head
      ) AS k
      JOIN ${s}.output_events o ON o.stream_id = $1 AND o.sequence = k.sequence AND o.event = k.event
      WHERE $4::bigint IS NULL OR k.before < $4
      ORDER BY o.sequence, o.event DESC`,
    // Only while the session runs, and at the owner's epoch when given (fencing): a finished
    // invocation's journal is closed. A taken position inserts nothing (no error, so the
    // savepoint stays usable): the caller then reads what holds it (journalEntry). FOR SHARE:
    // the epoch read holds the session row until this transaction ends, so a claim (which locks
    // it FOR UPDATE, skipping rows it cannot lock) leaves the session to a later claim, which
    // then reads the entry, or goes first and this inserts nothing: a claim never passes between
    // this statement and its commit.
    appendJournal: `INSERT INTO ${s}.journal (session_id, position, name, outcome)
      SELECT session_id, $2, $3, $4 FROM ${s}.sessions WHERE session_id = $1 AND state = 'running'
        AND ($5::bigint IS NULL OR owner_epoch = $5) FOR SHARE
      ON CONFLICT (session_id, position) DO NOTHING`,
    journalEntry: `SELECT name, outcome FROM ${s}.journal WHERE session_id = $1 AND position = $2`,
    readJournal: `SELECT position, name, outcome FROM ${s}.journal WHERE session_id = $1 ORDER BY position`,
    // FOR SHARE, as appendJournal's: a claim cannot pass between the epoch's check and the commit.
    recordRun: `INSERT INTO ${s}.session_runs (session_id, runs)
      SELECT session_id, 2 FROM ${s}.sessions WHERE session_id = $1 AND state = 'running'
        AND ($2::bigint IS NULL OR owner_epoch = $2) FOR SHARE
      ON CONFLICT (session_id) DO UPDATE SET runs = ${s}.session_runs.runs + 1 RETURNING runs`,
    // With the progress columns: a re-run whose progress ($3) passes the last one's starts `stalled`
    // again at 0; a row an earlier node left (no progress recorded) starts it too; a NULL progress
    // is never past it.
    recordRunWithProgress: `INSERT INTO ${s}.session_runs AS r (session_id, runs, progress, stalled)
      SELECT session_id, 2, $3::bigint, CASE WHEN $3::bigint > 0 THEN 0 ELSE 1 END FROM ${s}.sessions
        WHERE session_id = $1 AND state = 'running' AND ($2::bigint IS NULL OR owner_epoch = $2) FOR SHARE
      ON CONFLICT (session_id) DO UPDATE SET runs = r.runs + 1,
        stalled = CASE WHEN EXCLUDED.progress > coalesce(r.progress, -1) THEN 0 ELSE coalesce(r.stalled, 0) + 1 END,
        progress = CASE WHEN EXCLUDED.progress > coalesce(r.progress, -1) THEN EXCLUDED.progress ELSE r.progress END
      RETURNING runs, stalled`,
    // A progress below any a re-run measures (`SessionStore.recordHandOver`): the next re-run finds
    // progress. The run count stays; a session not re-run yet gets its row with the first run's count.
    // Without the progress columns a hand-over marks nothing, but is refused as the mark would be.
    runningAtEpoch: `SELECT 1 FROM ${s}.sessions
      WHERE session_id = $1 AND state = 'running' AND ($2::bigint IS NULL OR owner_epoch = $2) FOR SHARE`,
    recordHandOver: `INSERT INTO ${s}.session_runs AS r (session_id, runs, progress, stalled)
      SELECT session_id, 1, -1, 0 FROM ${s}.sessions
        WHERE session_id = $1 AND state = 'running' AND ($2::bigint IS NULL OR owner_epoch = $2) FOR SHARE
      ON CONFLICT (session_id) DO UPDATE SET progress = -1, stalled = 0`,
    setResult: `UPDATE ${s}.sessions SET result = $1 WHERE session_id = $2 AND result IS NULL AND ($3::bigint IS NULL OR owner_epoch = $3)`,
    finish: `UPDATE ${s}.sessions SET state = 'finished', outcome = $1, finished_at = $2 WHERE session_id = $3 AND state = 'running'
      AND ($4::bigint IS NULL OR owner_epoch = $4)`,
    // One statement per batch, the longest finished first (the index sessions_finished): at most
    // $3 sessions, and no more once the items of their streams before reach $4 (each at least one
    // session; a row holds an item or more, a stream's end aside, so rows are bounded too). The sessions go, their
    // attempt ids and idempotency scopes stay as tombstones (every part sees the rows as they were
    // before the DELETE and its cascades). `more`: sessions were left for another batch.
    purge: `WITH candidates AS (
        SELECT x.session_id, x.finished_at,
          (SELECT COALESCE(sum(t.count), 0) FROM ${s}.streams AS t WHERE t.session_id = x.session_id) AS items
        FROM ${s}.sessions AS x WHERE x.state = 'finished' AND x.finished_at < $1 ORDER BY x.finished_at, x.session_id LIMIT $3
      ), batch AS (
        SELECT session_id FROM (
          SELECT session_id, sum(items) OVER (ORDER BY finished_at, session_id) - items AS items_before FROM candidates
        ) AS w WHERE items_before < $4
      ), purged AS (
        DELETE FROM ${s}.sessions WHERE session_id IN (SELECT session_id FROM batch) AND state = 'finished'
        RETURNING session_id, account, application, environment, agent_type, agent_identity, idempotency_key
      ), attempt_stones AS (
        INSERT INTO ${s}.tombstones (kind, key, stamped_at)
        SELECT 'attempt', a.attempt_id, $2 FROM ${s}.attempts a JOIN purged p ON p.session_id = a.session_id
        ON CONFLICT (kind, key) DO UPDATE SET stamped_at = EXCLUDED.stamped_at
      ), key_stones AS (
        INSERT INTO ${s}.tombstones (kind, key, stamped_at)
        SELECT 'idempotency', json_build_array(account, application, environment, agent_type, agent_identity, idempotency_key)::text, $2 FROM purged
        ON CONFLICT (kind, key) DO UPDATE SET stamped_at = EXCLUDED.stamped_at
      )
      SELECT (SELECT count(*) FROM purged) AS purged,
        (SELECT count(*) FROM candidates) = $3 OR (SELECT count(*) FROM candidates) > (SELECT count(*) FROM batch) AS more`,
    // At most $2 per statement, the oldest first (the index tombstones_stamped).
    dropTombstones: `DELETE FROM ${s}.tombstones WHERE (kind, key) IN (
        SELECT kind, key FROM ${s}.tombstones WHERE stamped_at < $1 ORDER BY stamped_at LIMIT $2)`,
    ownerOf: `SELECT owner_node FROM ${s}.sessions WHERE session_id = $1`,
    ownership: `SELECT owner_node, owner_epoch FROM ${s}.sessions WHERE session_id = $1`,
    heartbeat: `INSERT INTO ${s}.nodes (node_id, lease_expires_at, log_format) VALUES ($1, clock_timestamp() + $2 * interval '1 millisecond', $3)
      ON CONFLICT (node_id) DO UPDATE SET lease_expires_at = EXCLUDED.lease_expires_at, log_format = EXCLUDED.log_format`,
    // The heartbeat, saying which process renewed the lease before this one (the row as it was:
    // a data-modifying statement's CTEs see the snapshot from before it). It writes this node's
    // catalogue fingerprint too ($5, when it has recorded one): a row another process of the node
    // id deleted (its `leave`) is written anew with it, not without, which the catalogue check
    // would skip for good.
    heartbeatAs: `WITH before AS (SELECT incarnation FROM ${s}.nodes WHERE node_id = $1)
      INSERT INTO ${s}.nodes AS n (node_id, lease_expires_at, log_format, incarnation, catalogue)
        VALUES ($1, clock_timestamp() + $2 * interval '1 millisecond', $3, $4, $5)
      ON CONFLICT (node_id) DO UPDATE SET lease_expires_at = EXCLUDED.lease_expires_at, log_format = EXCLUDED.log_format,
        incarnation = EXCLUDED.incarnation, catalogue = COALESCE(EXCLUDED.catalogue, n.catalogue)
      RETURNING (SELECT incarnation FROM before) AS previous`,
    // Only sessions whose row and every stream row this claim can lock now (SKIP LOCKED): one a
    // stalled former owner (or another claimer) holds a lock on is left for a later claim, and
    // no claim waits behind it; the rest of the orphans are claimed at once. The stream rows are
    // locked here too, so moving them to the new epoch (claimStreams) waits for nothing. A
    // stream another transaction is creating has its session row locked (insertStream).
    claimOrphans: `WITH candidates AS (
        SELECT x.session_id FROM ${s}.sessions AS x
        WHERE x.state = 'running' AND x.owner_node IS DISTINCT FROM $1
          AND EXISTS (SELECT 1 FROM ${s}.nodes me WHERE me.node_id = $1 AND me.lease_expires_at > clock_timestamp())
          AND NOT EXISTS (SELECT 1 FROM ${s}.nodes n WHERE n.node_id = x.owner_node AND n.lease_expires_at > clock_timestamp())
        FOR UPDATE OF x SKIP LOCKED
      ), held AS (
        SELECT t.session_id FROM ${s}.streams AS t WHERE t.session_id IN (SELECT session_id FROM candidates)
        FOR UPDATE OF t SKIP LOCKED
      ), claimable AS (
        SELECT c.session_id FROM candidates AS c
        WHERE (SELECT count(*) FROM ${s}.streams AS t WHERE t.session_id = c.session_id)
          = (SELECT count(*) FROM held AS h WHERE h.session_id = c.session_id)
      )
      UPDATE ${s}.sessions AS x SET owner_node = $1, owner_epoch = x.owner_epoch + 1
      FROM claimable AS c WHERE x.session_id = c.session_id
      RETURNING x.session_id, x.owner_epoch`,
    claimStreams: `UPDATE ${s}.streams AS t SET owner_epoch = c.epoch
      FROM unnest($1::text[], $2::bigint[]) AS c(session_id, epoch) WHERE t.session_id = c.session_id`,
    // Of the sessions a claim whose COMMIT got no answer took ($1, at epochs $2), those node $3
    // still owns at that epoch, running (lost-claims.ts).
    claimedStillOwned: `SELECT x.session_id FROM ${s}.sessions AS x
      JOIN unnest($1::text[], $2::bigint[]) AS c(session_id, epoch) ON x.session_id = c.session_id
      WHERE x.owner_node = $3 AND x.owner_epoch = c.epoch AND x.state = 'running'`,
    // Waits for a lock the former process of this node id holds (a write stalled on its way):
    // the write either commits first and is kept, or is refused for its epoch after.
    reclaim: `UPDATE ${s}.sessions SET owner_epoch = owner_epoch + 1
      WHERE session_id = $1 AND owner_node = $2 AND state = 'running' RETURNING owner_epoch`,
    leave: `DELETE FROM ${s}.nodes WHERE node_id = $1`,
    // The rows of nodes whose lease lapsed over $1 seconds ago and that own no running session
    // (membership.ts, sweepGoneNodes). A heartbeat committed meanwhile moves the lease on, and the
    // row, re-read after its lock, stays.
    sweepGoneNodes: `DELETE FROM ${s}.nodes AS n WHERE n.lease_expires_at < clock_timestamp() - make_interval(secs => $1)
      AND NOT EXISTS (SELECT 1 FROM ${s}.sessions AS x WHERE x.owner_node = n.node_id AND x.state = 'running')`,
    setCatalogue: `UPDATE ${s}.nodes SET catalogue = $2 WHERE node_id = $1`,
    liveCatalogues: `SELECT node_id, catalogue FROM ${s}.nodes WHERE node_id <> $1 AND lease_expires_at > clock_timestamp() ORDER BY node_id`,
    // A node of an earlier version leaves log_format NULL.
    everyNodePacks: `SELECT NOT EXISTS (SELECT 1 FROM ${s}.nodes WHERE lease_expires_at > clock_timestamp()
      AND (log_format IS NULL OR log_format < $1)) AS packing`,
    notify: `SELECT pg_notify($1, $2)`,
    // After a group statement's answer was lost: where its streams are now, at which epoch, and
    // whether they still take appends (lost-commit.ts).
    streamCounts: `SELECT stream_id, count, owner_epoch, direction,
        CASE WHEN direction = 'input' THEN input_terminal IS NOT NULL ELSE output_terminal END AS terminal
      FROM ${s}.streams WHERE stream_id = ANY($1::text[])`,
  };
}
