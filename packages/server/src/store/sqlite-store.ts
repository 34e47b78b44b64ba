/**
 * The embedded `SessionStore` on SQLite (better-sqlite3).
 *
 * Durability: `synchronous: "full"` by default, so a commit is on disk before
 * the promise resolves and before the runtime acknowledges anything to a
 * client. It is kept without syncing on the event loop: SQLite commits at
 * NORMAL and the WAL file is synced from the thread pool before any write of
 * the commit resolves (group-commit.ts); reads resolve only once what they
 * could see is synced. `synchronous: "normal"` trades the last commits
 * before a power loss (never a process crash) for speed; it is an option,
 * not the default.
 *
 * Every statement is prepared once. Mutations are group-committed: those
 * issued in one turn of the event loop share a transaction (and its sync),
 * each in its own savepoint.
 * Output and input logs are keyed by (stream, sequence) so replay from a
 * cursor and duplicate comparison are indexed range queries. Large payloads
 * (packed u8 batches, binary items) live in per-session files beside the
 * database and are synced before the rows pointing at them commit
 * (`payload-files.ts`).
 */
import { closeSync, mkdirSync, openSync } from "node:fs";
import { join } from "node:path";
import { open, type FileHandle } from "node:fs/promises";
import type Database from "better-sqlite3";
import { betterSqlite3 } from "./better-sqlite3.js";
import { GroupCommit, runWrite, toError, type LogAppend, type PendingWrite, type WriteOutcome } from "./group-commit.js";
import { PayloadFiles, type PendingPayload } from "./payload-files.js";
import type {
  CommitListener,
  AttachResult,
  AttemptOperation,
  AttemptRecord,
  CreateSessionResult,
  InputChunk,
  InputTerminal,
  NewStream,
  OutputEvent,
  SessionRecord,
  SessionStore,
  StoredBytes,
  StreamRecord,
  JournalEntry,
} from "./session-store.js";
import { joinParts, packRun } from "./packed-rows.js";
import { continuesRun, writeOrder } from "./write-order.js";
import { FIRST_EPOCH, OwnershipLostError } from "./ownership.js";
import { migrate } from "./sqlite-schema.js";
import { checkOutageGraceMs, OutageGrace, SYSTEM_OUTAGE_CLOCK, type OutageClock, type StoreOutageListener } from "./outage-grace.js";
import { RowInserter } from "./row-inserter.js";
import {
  encodeInputTerminal,
  packedEvents,
  payloadLength,
  pushChunks,
  toEvent,
  toSession,
  toStream,
  type AttemptRow,
  type InputRow,
  type OutputRow,
  type PayloadReader,
  type SessionRow,
  type StreamRow,
} from "./sqlite-rows.js";

export interface SqliteSessionStoreOptions {
  /** Directory that holds `sessions.db`; created if missing. */
  readonly dataDir: string;
  /** `full` (default): every commit is synced. `normal`: WAL default durability. */
  readonly synchronous?: "full" | "normal";
  /**
   * Page size of a new database: a power of two from 4096 to 65536 (default
   * 16384). SQLite writes a blob page by page, one system call each, twice
   * (WAL, then checkpoint): larger pages make large input and output
   * (packed u8 batches, binary items) cheaper, while every commit writes at
   * least its modified pages whole. Ignored for an existing database.
   */
  readonly pageSize?: number;
  /**
   * Input chunks and output items of at least this many bytes (default
   * 65536) are kept in an append-only file per session under
   * `<dataDir>/payloads/` instead of in the database: written once, off the
   * event loop, and synced before the row that points at them commits
   * (SQLite would write them twice, WAL then checkpoint, blocking the event
   * loop). `Infinity` keeps every payload in the database.
   */
  readonly payloadFileThreshold?: number;
  /**
   * Small input chunks and output items of one stream committed in the same
   * group share one row of their log, up to this many bytes per row
   * (default 8192; 0 writes a row per append). A burst of 64-byte items then
   * costs SQLite one insert per row instead of one per item
   * (`packed-rows.ts`). Reads return the appends as they were made.
   */
  readonly maxPackedRowBytes?: number;
  /**
   * How long a group of writes that failed with a transient error (SQLite
   * busy or locked, an I/O error: `sqlite-errors.ts`) is retried, with
   * backoff and in order, before its writes fail (their invocations fail).
   * A full disk and a failed sync are reported at once. Default 30 000;
   * 0 fails at the first error.
   */
  readonly outageGraceMs?: number;
  /** The clock of the outage grace (tests). Default: the process's. */
  readonly outageClock?: OutageClock;
}

const DEFAULT_PAGE_SIZE = 16384;
/** Under `dataDir`: one append-only payload file per session. */
const PAYLOAD_DIR = "payloads";
const EMPTY = new Uint8Array(0);
const DEFAULT_PAYLOAD_FILE_THRESHOLD = 65536;

function payloadFileThresholdOf(options: SqliteSessionStoreOptions): number {
  const threshold = options.payloadFileThreshold ?? DEFAULT_PAYLOAD_FILE_THRESHOLD;
  if (threshold !== Number.POSITIVE_INFINITY && (!Number.isSafeInteger(threshold) || threshold < 1)) {
    throw new TypeError("payloadFileThreshold must be a positive integer or Infinity");
  }
  return threshold;
}

const DEFAULT_MAX_PACKED_ROW_BYTES = 8192;

function maxPackedRowBytesOf(options: SqliteSessionStoreOptions): number {
  const bytes = options.maxPackedRowBytes ?? DEFAULT_MAX_PACKED_ROW_BYTES;
  if (!Number.isSafeInteger(bytes) || bytes < 0) throw new TypeError("maxPackedRowBytes must be a non-negative integer");
  return bytes;
}

function pageSizeOf(options: SqliteSessionStoreOptions): number {
  const size = options.pageSize ?? DEFAULT_PAGE_SIZE;
  if (!Number.isSafeInteger(size) || size < 4096 || size > 65536 || (size & (size - 1)) !== 0) {
    throw new TypeError("pageSize must be a power of two from 4096 to 65536");
  }
  return size;
}


export class SqliteSessionStore implements SessionStore {
  readonly #db: Database.Database;
  readonly #statements;
  readonly #payloads: PayloadFiles;
  readonly #payloadFileThreshold: number;
  readonly #maxPackedRowBytes: number;
  /** The write queue (`group-commit.ts`); its commit function is the transaction built in the constructor. */
  readonly #group: GroupCommit;
  #outageListener: StoreOutageListener | undefined;
  /**
   * Mutations of several statements, as transaction functions built once
   * (building one per call cost more than the SQL it ran). Called inside the
   * group commit's transaction, each runs as a savepoint, so one that throws
   * rolls back alone.
   */
  readonly #atomic;
  /** Every insert into the two logs: one row, or a run of appends with many rows per statement. */
  readonly #inputRows: RowInserter;
  readonly #outputRows: RowInserter;
  readonly #walPath: string;
  /** The WAL file, opened at the first sync (`synchronous: "full"`). */
  #wal: Promise<FileHandle> | undefined;

  constructor(options: SqliteSessionStoreOptions) {
    const pageSize = pageSizeOf(options);
    this.#payloadFileThreshold = payloadFileThresholdOf(options);
    this.#maxPackedRowBytes = maxPackedRowBytesOf(options);
    const outageGraceMs = checkOutageGraceMs(options.outageGraceMs);
    mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
    const path = join(options.dataDir, "sessions.db");
    const db = openDatabase(path);
    try {
      db.defaultSafeIntegers(true);
      // Takes effect only while the file is new (before WAL is on).
      db.pragma(`page_size = ${pageSize}`);
      // One process per data directory: live sessions are held in memory and payload files are
      // laid out by this process alone. Exclusive locking keeps a second store out (it waits
      // for better-sqlite3's busy timeout, 5 s, then fails) and needs no shared-memory index.
      db.pragma("locking_mode = EXCLUSIVE");
      db.pragma("journal_mode = WAL");
      // `full` durability without a sync on the event loop: commits run at NORMAL (in WAL mode no
      // sync but at checkpoints) and the group commit syncs the WAL file from the thread pool
      // before any write of the group resolves (`#syncWal`).
      db.pragma("synchronous = NORMAL");
      // Statement journals (the undo of one savepoint: each write runs in its own inside the group's
      // transaction) in memory. On disk they spilled past 64 KiB, four 16 KiB pages, into a temp
      // file: about one pwrite per small item, more than the WAL itself took. Each holds the pages
      // one write touches, so the memory is bounded by the largest single write.
      db.pragma("temp_store = MEMORY");
      db.pragma("foreign_keys = ON");
      migrate(db);
    } catch (error) {
      db.close();
      if ((error as { code?: unknown }).code === "SQLITE_BUSY") {
        throw new Error(`${path} is in use by another store (one server process per data directory)`, { cause: error });
      }
      throw error;
    }
    this.#db = db;
    this.#payloads = new PayloadFiles(join(options.dataDir, PAYLOAD_DIR));
    this.#statements = {
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
      endInput: db.prepare("UPDATE streams SET input_terminal = ? WHERE stream_id = ? AND input_terminal IS NULL"),
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
      recordRun: db.prepare(`INSERT INTO session_runs (session_id, runs)
        SELECT session_id, 2 FROM sessions WHERE session_id = ? AND state = 'running'
        ON CONFLICT (session_id) DO UPDATE SET runs = runs + 1 RETURNING runs`).pluck(),
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
      idempotencyTombstoned: db.prepare(`SELECT 1 FROM idempotency_tombstones WHERE account = ? AND application = ?
        AND environment = ? AND agent_type = ? AND agent_identity = ? AND idempotency_key = ?`).pluck(),
    };
    this.#inputRows = new RowInserter(db, "input_chunks", INPUT_COLUMNS);
    this.#outputRows = new RowInserter(db, "output_events", OUTPUT_COLUMNS);
    this.#atomic = {
      createSession: db.transaction((session: SessionRecord, streams: readonly NewStream[], attempt: AttemptRecord) =>
        this.#createSession(session, streams, attempt),
      ),
      attach: db.transaction((attempt: AttemptRecord, sessionToken: string, expectedGeneration: bigint | undefined) =>
        this.#attach(attempt, sessionToken, expectedGeneration),
      ),
      acceptInput: db.transaction((chunk: InputChunk, introduced: readonly NewStream[], payload: PendingPayload | undefined) =>
        this.#acceptInput(chunk, introduced, payload),
      ),
      appendOutput: db.transaction((event: OutputEvent, introduced: readonly NewStream[], payload: PendingPayload | undefined) =>
        this.#appendOutput(event, introduced, payload),
      ),
      setResult: db.transaction((sessionId: string, result: string, introduced: readonly NewStream[]) =>
        this.#setResult(sessionId, result, introduced),
      ),
      appendRun: db.transaction((appends: readonly LogAppend[]) => this.#appendRun(appends)),
    };
    // The group commit's transaction: runs a batch of mutations, recording each outcome.
    // Appends are written in runs, stream by stream between other writes (write-order.ts); outcomes
    // stay at the writes' own indexes, so the group still settles in call order.
    const commitGroup = db.transaction((batch: readonly PendingWrite[], outcomes: WriteOutcome[]) => {
      const appends = batch.map((write) => write.append);
      const order = writeOrder(appends);
      for (let at = 0; at < order.length; ) {
        const first = appends[order[at] as number];
        let end = at + 1;
        if (first !== undefined) {
          while (end < order.length && continuesRun(appends[order[end - 1] as number] as LogAppend, appends[order[end] as number])) end++;
        }
        this.#writeRun(batch, order.slice(at, end), outcomes);
        at = end;
      }
    });
    this.#walPath = `${path}-wal`;
    const outage = new OutageGrace(outageGraceMs, options.outageClock ?? SYSTEM_OUTAGE_CLOCK, () => this.#outageListener);
    this.#group = new GroupCommit(commitGroup, this.#payloads, options.synchronous === "normal" ? undefined : () => this.#syncWal(), outage);
    // Files of sessions purged just before a crash (the purge committed, the unlink did not run).
    this.#payloads.sweep((sessionId) => this.#statements.sessionExists.get(sessionId) !== undefined);
  }

  /**
   * Writes `batch[indexes]`: one write that is not an append, or a run of
   * appends of one stream that continue one another, which share one count
   * update and one savepoint, so a burst costs one statement per item
   * instead of four. A run that fails as a whole is written one append at a
   * time, so each failure stays its own.
   */
  #writeRun(batch: readonly PendingWrite[], indexes: readonly number[], outcomes: WriteOutcome[]): void {
    if (indexes.length > 1 && this.#tryAppendRun(indexes.map((i) => batch[i]?.append as LogAppend))) {
      for (const i of indexes) outcomes[i] = APPENDED;
      return;
    }
    for (const i of indexes) outcomes[i] = runWrite(batch[i]);
  }

  /** Writes a run of appends atomically; false (and nothing written) if any of it fails. */
  #tryAppendRun(run: readonly LogAppend[]): boolean {
    try {
      this.#atomic.appendRun(run);
      return true;
    } catch {
      return false;
    }
  }

  #appendRun(appends: readonly LogAppend[]): void {
    const first = appends[0];
    if (first === undefined) return;
    const total = appends.reduce((sum, append) => sum + append.itemCount, 0n);
    const input = first.log === "input";
    const advance = input ? this.#statements.advanceInput : this.#statements.advanceOutput;
    if (advance.run(total, first.streamId, first.sequence).changes !== 1) throw new Error("the run does not continue its stream");
    const rows = packRun(appends, this.#maxPackedRowBytes).map(([start, end]) => {
      if (end - start === 1) return (appends[start] as LogAppend).row();
      const part = appends[start] as LogAppend;
      const { data, parts, itemCount } = joinParts(appends, start, end);
      return input ? packedInputRow(part.streamId, part.sequence, itemCount, data, parts) : packedOutputRow(part.streamId, part.sequence, itemCount, data, parts);
    });
    (input ? this.#inputRows : this.#outputRows).insertAll(rows);
  }

  #insertStreams(streams: readonly NewStream[]): void {
    for (const stream of streams) {
      const next = (this.#statements.nextOrdinal.get(stream.sessionId) as { next: bigint }).next;
      const parent = stream.parent;
      this.#statements.insertStream.run({
        stream_id: stream.streamId,
        session_id: stream.sessionId,
        ordinal: next,
        direction: stream.direction,
        element_kind: stream.elementKind,
        element_graph: stream.elementGraph,
        coordinate: stream.coordinate,
        provisional_ref: stream.provisionalRef ?? null,
        parent_kind: parent.kind,
        parent_stream_id: parent.kind === "item" ? parent.streamId : null,
        parent_sequence: parent.kind === "item" ? parent.sequence : null,
        token: stream.token,
      });
    }
  }

  createSession(session: SessionRecord, streams: readonly NewStream[], attempt: AttemptRecord): Promise<CreateSessionResult> {
    return this.#group.write(() => this.#atomic.createSession(session, streams, attempt));
  }

  #createSession(session: SessionRecord, streams: readonly NewStream[], attempt: AttemptRecord): CreateSessionResult {
    if (this.#statements.getAttempt.get(attempt.attemptId) !== undefined) return { kind: "attempt-exists" };
    const scope = [session.account, session.application, session.environment, session.agentType, session.agentIdentity, session.idempotencyKey];
    if (this.#statements.attemptTombstoned.get(attempt.attemptId) !== undefined || this.#statements.idempotencyTombstoned.get(...scope) !== undefined) {
      return { kind: "purged" };
    }
    if (this.#statements.findByIdempotency.get(...scope) !== undefined) return { kind: "idempotency-conflict" };
    this.#statements.insertSession.run({
      session_id: session.sessionId,
      account: session.account,
      principal: session.principal,
      application: session.application,
      environment: session.environment,
      agent_type: session.agentType,
      agent_identity: session.agentIdentity,
      method: session.method,
      idempotency_key: session.idempotencyKey,
      selector: session.selector,
      config: session.config,
      parameters: session.parameters,
      generation: session.generation,
      session_token: session.sessionToken,
      stream_key_id: session.streamKeyId,
      state: session.state,
      result: session.result ?? null,
      outcome: session.outcome ?? null,
      created_at: session.createdAt,
      finished_at: session.finishedAt ?? null,
    });
    this.#insertAttempt(attempt);
    this.#insertStreams(streams);
    return { kind: "created" };
  }

  #insertAttempt(attempt: AttemptRecord): void {
    this.#statements.insertAttempt.run({
      attempt_id: attempt.attemptId,
      operation: attempt.operation,
      descriptor_digest: attempt.descriptorDigest,
      session_id: attempt.sessionId,
      generation: attempt.generation,
    });
  }

  getAttempt(attemptId: string): Promise<AttemptRecord | undefined> {
    return this.#run(() => {
      const row = this.#statements.getAttempt.get(attemptId) as AttemptRow | undefined;
      if (row === undefined) return undefined;
      return {
        attemptId: row.attempt_id,
        operation: row.operation as AttemptOperation,
        descriptorDigest: row.descriptor_digest,
        sessionId: row.session_id,
        generation: row.generation,
      };
    });
  }

  getSession(sessionId: string): Promise<SessionRecord | undefined> {
    return this.#run(() => {
      const row = this.#statements.getSession.get(sessionId) as SessionRow | undefined;
      return row === undefined ? undefined : toSession(row);
    });
  }

  listStreams(sessionId: string): Promise<StreamRecord[]> {
    return this.#run(() => (this.#statements.listStreams.all(sessionId) as StreamRow[]).map(toStream));
  }

  getStream(streamId: string): Promise<StreamRecord | undefined> {
    return this.#run(() => {
      const row = this.#statements.getStream.get(streamId) as StreamRow | undefined;
      return row === undefined ? undefined : toStream(row);
    });
  }

  attach(attempt: AttemptRecord, sessionToken: string, expectedGeneration: bigint | undefined): Promise<AttachResult> {
    return this.#group.write(() => this.#atomic.attach(attempt, sessionToken, expectedGeneration));
  }

  #attach(attempt: AttemptRecord, sessionToken: string, expectedGeneration: bigint | undefined): AttachResult {
    if (this.#statements.getAttempt.get(attempt.attemptId) !== undefined) return { kind: "attempt-exists" };
    const row = this.#statements.getSession.get(attempt.sessionId) as SessionRow | undefined;
    if (row === undefined) return { kind: "superseded" };
    if (expectedGeneration !== undefined && row.generation !== expectedGeneration) return { kind: "superseded" };
    if (attempt.generation !== row.generation + 1n) return { kind: "superseded" };
    this.#statements.attach.run(attempt.generation, sessionToken, attempt.sessionId);
    this.#insertAttempt(attempt);
    return { kind: "attached", generation: attempt.generation };
  }

  acceptInput(chunk: InputChunk, introduced: readonly NewStream[], epoch?: bigint): Promise<void> {
    if (epoch !== undefined && epoch !== FIRST_EPOCH) return this.#fenced(chunk.streamId, epoch);
    const payload = this.#reservePayload(chunk.streamId, chunk.data);
    const append = introduced.length > 0 ? undefined : new RecordAppend("input", chunk, payload);
    return this.#group.write(() => this.#atomic.acceptInput(chunk, introduced, payload), append, payload);
  }

  #acceptInput(chunk: InputChunk, introduced: readonly NewStream[], payload: PendingPayload | undefined): void {
    const moved = this.#statements.advanceInput.run(chunk.itemCount, chunk.streamId, chunk.sequence);
    if (moved.changes !== 1) throw new Error("input chunk does not continue the stream");
    this.#inputRows.insertAll([inputRow(chunk, payload)]);
    this.#insertStreams(introduced);
  }

  readInput(streamId: string, from: bigint, to: bigint): Promise<InputChunk[]> {
    return this.#run(() => {
      const read = this.#payloadReader(streamId);
      const chunks: InputChunk[] = [];
      for (const row of this.#statements.readInput.all({ stream: streamId, from, to }) as InputRow[]) pushChunks(row, read, from, to, chunks);
      return chunks;
    });
  }

  endInput(streamId: string, terminal: InputTerminal, epoch?: bigint): Promise<void> {
    if (epoch !== undefined && epoch !== FIRST_EPOCH) return this.#fenced(streamId, epoch);
    return this.#group.write(() => {
      this.#statements.endInput.run(encodeInputTerminal(terminal), streamId);
    });
  }

  appendOutput(event: OutputEvent, introduced: readonly NewStream[], epoch?: bigint): Promise<void> {
    if (epoch !== undefined && epoch !== FIRST_EPOCH) return this.#fenced(event.streamId, epoch);
    const payload = event.event === "item" ? this.#reservePayload(event.streamId, event.data) : undefined;
    const append = event.event !== "item" || introduced.length > 0 ? undefined : new RecordAppend("output", event, payload);
    return this.#group.write(() => this.#atomic.appendOutput(event, introduced, payload), append, payload);
  }

  #appendOutput(event: OutputEvent, introduced: readonly NewStream[], payload: PendingPayload | undefined): void {
    if (event.event === "item") {
      const moved = this.#statements.advanceOutput.run(event.itemCount, event.streamId, event.sequence);
      if (moved.changes !== 1) throw new Error("output event does not continue the stream");
      this.#outputRows.insertAll([outputItemRow(event, payload)]);
    } else {
      const ended = this.#statements.endOutput.run(event.streamId, event.sequence);
      if (ended.changes !== 1) throw new Error("output terminal does not continue the stream");
      this.#outputRows.insertAll([outputTerminalRow(event)]);
    }
    this.#insertStreams(introduced);
  }

  readOutput(streamId: string, from: bigint, limit: number, maxBytes = Number.POSITIVE_INFINITY): Promise<OutputEvent[]> {
    return this.#run(() => {
      // Rows first, payloads after: the connection is busy while the iterator
      // is open, and a row past the byte bound is never read at all (an inline
      // row carries its payload).
      // A packed row is split at once (its bytes are in it); other rows wait for their payloads.
      const taken: (OutputRow | OutputEvent)[] = [];
      if (limit < 1) return [];
      let bytes = 0;
      // One row more than `limit`: the first may hold only items before `from`.
      rows: for (const row of this.#statements.readOutput.iterate({ stream: streamId, from, limit: limit + 1 }) as IterableIterator<OutputRow>) {
        if (row.parts === null) {
          if (row.sequence < from) continue;
          taken.push(row);
          bytes += payloadLength(row);
          if (taken.length >= limit || bytes >= maxBytes) break;
          continue;
        }
        for (const event of packedEvents(row, row.parts, from)) {
          taken.push(event);
          bytes += event.data.byteLength;
          if (taken.length >= limit || bytes >= maxBytes) break rows;
        }
      }
      const read = this.#payloadReader(streamId);
      return taken.map((entry) => ("stream_id" in entry ? toEvent(entry, read) : entry));
    });
  }

  /**
   * Gives a large payload its place in its session's file. Small payloads,
   * and those of a stream not committed yet (its session is not known
   * here), stay in the row.
   */
  #reservePayload(streamId: string, data: Uint8Array): PendingPayload | undefined {
    if (data.byteLength < this.#payloadFileThreshold) return undefined;
    const sessionId = this.#statements.sessionOfStream.get(streamId) as string | undefined;
    if (sessionId === undefined || !this.#payloads.accepts(sessionId)) return undefined;
    return this.#payloads.reserve(sessionId, data);
  }

  /** Reads the file payloads of one stream's rows (the session is looked up once, if at all). */
  #payloadReader(streamId: string): PayloadReader {
    let sessionId: string | undefined;
    return (row) => {
      if (row.payload_offset === null || row.payload_length === null) return undefined;
      sessionId ??= this.#statements.sessionOfStream.get(streamId) as string;
      return this.#payloads.read({ sessionId, offset: Number(row.payload_offset), length: Number(row.payload_length) });
    };
  }

  setResult(sessionId: string, result: string, introduced: readonly NewStream[], epoch?: bigint): Promise<void> {
    if (epoch !== undefined && epoch !== FIRST_EPOCH) return Promise.reject(new OwnershipLostError(sessionId, epoch, FIRST_EPOCH));
    return this.#group.write(() => this.#atomic.setResult(sessionId, result, introduced));
  }

  #setResult(sessionId: string, result: string, introduced: readonly NewStream[]): void {
    const set = this.#statements.setResult.run(result, sessionId);
    if (set.changes !== 1) throw new Error("the invocation result was already recorded");
    this.#insertStreams(introduced);
  }

  finish(sessionId: string, outcome: string, at: number, epoch?: bigint): Promise<void> {
    if (epoch !== undefined && epoch !== FIRST_EPOCH) return Promise.reject(new OwnershipLostError(sessionId, epoch, FIRST_EPOCH));
    return this.#group.write(() => {
      this.#statements.finish.run(outcome, at, sessionId);
    });
  }

  /**
   * One node: every session stays at `FIRST_EPOCH` (nothing claims it), so a
   * write with another epoch is refused before it is queued (ownership.ts).
   */
  #fenced(streamId: string, epoch: bigint): Promise<never> {
    return Promise.reject(new OwnershipLostError(this.#statements.sessionOfStream.get(streamId) as string | undefined, epoch, FIRST_EPOCH));
  }

  listRunningSessions(): Promise<SessionRecord[]> {
    return this.#run(() => (this.#statements.runningSessions.all() as SessionRow[]).map(toSession));
  }

  appendJournal(entry: JournalEntry, epoch?: bigint): Promise<void> {
    if (epoch !== undefined && epoch !== FIRST_EPOCH) return Promise.reject(new OwnershipLostError(entry.sessionId, epoch, FIRST_EPOCH));
    return this.#group.write(() => {
      const added = this.#statements.appendJournal.run(entry.position, entry.name, entry.outcome, entry.sessionId);
      if (added.changes === 1) return;
      const taken = this.#statements.journalEntry.get(entry.sessionId, entry.position) as { name: string; outcome: string } | undefined;
      // The same entry: written before and committed (a retried write), so it is done.
      if (taken !== undefined && taken.name === entry.name && taken.outcome === entry.outcome) return;
      throw new Error(taken === undefined ? "the session is not running" : "the journal position is already taken");
    });
  }

  readJournal(sessionId: string): Promise<JournalEntry[]> {
    return this.#run(() =>
      (this.#statements.readJournal.all(sessionId) as JournalRow[]).map((row) => ({
        sessionId: row.session_id,
        position: Number(row.position),
        name: row.name,
        outcome: row.outcome,
      })),
    );
  }

  recordRun(sessionId: string, epoch?: bigint): Promise<number> {
    if (epoch !== undefined && epoch !== FIRST_EPOCH) return Promise.reject(new OwnershipLostError(sessionId, epoch, FIRST_EPOCH));
    return this.#group.write(() => {
      const runs = this.#statements.recordRun.get(sessionId) as bigint | undefined;
      if (runs === undefined) throw new Error("the session is not running");
      return Number(runs);
    });
  }

  async purgeFinished(finishedBefore: number, now: number, tombstonesBefore: number): Promise<number> {
    const purged = await this.#group.write(() => {
      const statements = this.#statements;
      statements.dropAttemptTombstones.run(tombstonesBefore);
      statements.dropIdempotencyTombstones.run(tombstonesBefore);
      statements.tombstoneAttempts.run(now, finishedBefore);
      statements.tombstoneIdempotency.run(now, finishedBefore);
      return statements.purge.all(finishedBefore) as string[];
    });
    // After the commit: a crash before this leaves files that the next open sweeps.
    await this.#payloads.remove(purged);
    return purged.length;
  }

  /**
   * A row's bytes are in its payload file (`payload_length`) or inline; a
   * packed row's data is its parts' bytes. Every sum scans both logs once,
   * summed per stream before the joins (measured: 1 million 64-byte rows,
   * 0.9 s instead of 5 s joined per row); it runs at start only. The sum of
   * the sessions a purge is about to delete reads only their streams' rows.
   */
  storedBytesByPrincipal(finishedBefore?: number): Promise<StoredBytes[]> {
    const sql =
      finishedBefore === undefined
        ? `SELECT s.account, s.principal, SUM(logs.bytes) AS bytes FROM (
             SELECT stream_id, SUM(COALESCE(payload_length, length(data))) AS bytes FROM input_chunks GROUP BY stream_id
             UNION ALL
             SELECT stream_id, SUM(COALESCE(payload_length, length(data), 0)) FROM output_events WHERE event = 'item' GROUP BY stream_id
           ) logs JOIN streams t ON t.stream_id = logs.stream_id JOIN sessions s ON s.session_id = t.session_id
           GROUP BY s.account, s.principal HAVING SUM(logs.bytes) > 0`
        : `SELECT s.account, s.principal, SUM(
             (SELECT COALESCE(SUM(COALESCE(c.payload_length, length(c.data))), 0) FROM input_chunks c WHERE c.stream_id = t.stream_id)
             + (SELECT COALESCE(SUM(COALESCE(o.payload_length, length(o.data), 0)), 0) FROM output_events o WHERE o.stream_id = t.stream_id AND o.event = 'item')
           ) AS bytes
           FROM sessions s JOIN streams t ON t.session_id = s.session_id
           WHERE s.state = 'finished' AND s.finished_at < ?
           GROUP BY s.account, s.principal HAVING bytes > 0`;
    const statement = this.#db.prepare(sql).safeIntegers(false);
    return this.#run(() => (finishedBefore === undefined ? statement.all() : statement.all(finishedBefore)) as StoredBytes[]);
  }

  observeCommits(listener: CommitListener): void {
    this.#group.observe(listener);
  }

  /** Metrics and log lines: transient failures retried, the store answering again, writes failed past the grace. */
  observeOutages(listener: StoreOutageListener): void {
    this.#outageListener = listener;
  }

  async ping(): Promise<void> {
    if (!this.#db.open) throw new Error("the store is closed");
    this.#db.prepare("SELECT 1").get();
  }

  async close(): Promise<void> {
    await this.#group.drain();
    const wal = this.#wal;
    this.#wal = undefined;
    await wal?.then((handle) => handle.close()).catch(() => undefined);
    if (this.#db.open) this.#db.close();
  }

  /**
   * Makes every committed WAL frame durable: `fdatasync` of the WAL file, in
   * libuv's thread pool. In WAL mode a commit only appends frames (the
   * database file changes only at checkpoints, which SQLite syncs itself at
   * NORMAL), so this is what FULL does at each commit, once for many commits
   * and without blocking the event loop. With exclusive locking the WAL file
   * lives until the database closes (it is reset, never replaced), so one
   * handle serves.
   */
  #syncWal(): Promise<void> {
    if (this.#wal === undefined) {
      const opening = open(this.#walPath, "r+");
      this.#wal = opening;
      opening.catch(() => {
        if (this.#wal === opening) this.#wal = undefined; // the next sync tries again
      });
    }
    return this.#wal.then((handle) => handle.datasync());
  }

  /**
   * Runs synchronous SQLite work and reports its outcome as a promise,
   * released once every commit the work could have read is synced: a
   * client is never shown what a power failure could still take away.
   */
  #run<T>(work: () => T): Promise<T> {
    let value: T;
    try {
      value = work();
    } catch (error) {
      return Promise.reject(toError(error));
    }
    return this.#group.durable().then(() => value);
  }
}

/** The outcome of every append written in a run (one shared object: a burst of small items allocated one each). */
const APPENDED: WriteOutcome = Object.freeze({ ok: true, value: undefined });

const INPUT_COLUMNS = 8;
const OUTPUT_COLUMNS = 10;

/** An input chunk's row of `input_chunks`, in column order (a payload in a file leaves the row's data empty). */
function inputRow(chunk: InputChunk, payload: PendingPayload | undefined): unknown[] {
  return [
    chunk.streamId,
    chunk.sequence,
    chunk.itemCount,
    payload === undefined ? chunk.data : EMPTY,
    chunk.mimeType ?? null,
    payload?.ref.offset ?? null,
    payload?.ref.length ?? null,
    null,
  ];
}

/** A row of `input_chunks` holding several appends (`packed-rows.ts`). */
function packedInputRow(streamId: string, sequence: bigint, itemCount: bigint, data: Uint8Array, parts: Uint8Array): unknown[] {
  return [streamId, sequence, itemCount, data, null, null, null, parts];
}

type OutputItemEvent = Extract<OutputEvent, { event: "item" }>;

/** An input chunk or output item that introduces no stream, as the group commit writes it (its row made only if it is not packed). */
class RecordAppend implements LogAppend {
  readonly streamId: string;
  readonly sequence: bigint;
  readonly itemCount: bigint;
  readonly packable: Uint8Array | undefined;

  constructor(
    readonly log: "input" | "output",
    private readonly record: InputChunk | OutputItemEvent,
    private readonly payload: PendingPayload | undefined,
  ) {
    this.streamId = record.streamId;
    this.sequence = record.sequence;
    this.itemCount = record.itemCount;
    this.packable = payload === undefined && record.mimeType === undefined ? record.data : undefined;
  }

  row(): unknown[] {
    return this.log === "input" ? inputRow(this.record as InputChunk, this.payload) : outputItemRow(this.record as OutputItemEvent, this.payload);
  }
}

/** A row of `output_events` holding several items (`packed-rows.ts`). */
function packedOutputRow(streamId: string, sequence: bigint, itemCount: bigint, data: Uint8Array, parts: Uint8Array): unknown[] {
  return [streamId, sequence, "item", itemCount, data, null, null, null, null, parts];
}

/** An output item's row of `output_events`, in column order. */
function outputItemRow(event: Extract<OutputEvent, { event: "item" }>, payload: PendingPayload | undefined): unknown[] {
  return [
    event.streamId,
    event.sequence,
    "item",
    event.itemCount,
    payload === undefined ? event.data : EMPTY,
    event.mimeType ?? null,
    null,
    payload?.ref.offset ?? null,
    payload?.ref.length ?? null,
    null,
  ];
}

/** An output terminal's row of `output_events`, in column order. */
function outputTerminalRow(event: Extract<OutputEvent, { event: "terminal" }>): unknown[] {
  return [event.streamId, event.sequence, "terminal", 0, null, null, event.outcome, null, null, null];
}

/**
 * Opens (or creates) the database file, readable by this user only: it holds small values and
 * inputs, like the payload files beside it. A new file is created 0600 before SQLite opens it;
 * SQLite gives its -wal and -shm files the database file's permissions. An existing file keeps
 * its own. A failure names the file (SQLite's "unable to open database file" does not).
 */
function openDatabase(path: string): Database.Database {
  try {
    const Sqlite = betterSqlite3();
    closeSync(openSync(path, "a", 0o600));
    return new Sqlite(path);
  } catch (error) {
    const reason = error instanceof Error ? error.message.replace(/, open '.*'$/, "") : String(error);
    // No `code` of its own: callers read one as the listening socket's (EACCES, EADDRINUSE).
    throw new Error(`cannot open the session database ${path}: ${reason}`, { cause: error });
  }
}

interface JournalRow {
  readonly session_id: string;
  readonly position: bigint;
  readonly name: string;
  readonly outcome: string;
}
