/**
 * The embedded `SessionStore` on SQLite (better-sqlite3).
 *
 * Durability: WAL journal with `synchronous = FULL` by default, so a commit
 * is on disk before the promise resolves and before the runtime acknowledges
 * anything to a client. `synchronous: "normal"` trades the last commits
 * before a power loss (never a process crash) for speed; it is an option,
 * not the default.
 *
 * Every statement is prepared once. Mutations are group-committed: those
 * issued in one turn of the event loop share a transaction (and its sync),
 * each in its own savepoint.
 * Output and input logs are keyed by (stream, sequence) so replay from a
 * cursor and duplicate comparison are indexed range queries.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import type { ServerCancelReason, StreamDirection } from "@golem-stream/wire";
import type {
  AttachResult,
  AttemptOperation,
  AttemptRecord,
  CreateSessionResult,
  ElementKind,
  InputChunk,
  InputTerminal,
  NewStream,
  OutputEvent,
  SessionRecord,
  SessionState,
  SessionStore,
  StreamParent,
  StreamRecord,
} from "./session-store.js";

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
}

const DEFAULT_PAGE_SIZE = 16384;

function pageSizeOf(options: SqliteSessionStoreOptions): number {
  const size = options.pageSize ?? DEFAULT_PAGE_SIZE;
  if (!Number.isSafeInteger(size) || size < 4096 || size > 65536 || (size & (size - 1)) !== 0) {
    throw new TypeError("pageSize must be a power of two from 4096 to 65536");
  }
  return size;
}

/**
 * The logs are rowid tables whose primary key is a separate index. Not
 * WITHOUT ROWID: that stores whole rows, blobs included, in the key's
 * B-tree, and small rows inserted beside megabyte rows there cost up to
 * 45 times more (measured: 20 000 small chunks after 72 MiB of u8 input,
 * 3.3 s instead of 70 ms). Here a row's bytes sit in the rowid B-tree and
 * the key index holds only the key.
 */
const LOG_TABLES = `
CREATE TABLE IF NOT EXISTS input_chunks (
  stream_id TEXT NOT NULL REFERENCES streams(stream_id) ON DELETE CASCADE,
  sequence INTEGER NOT NULL, item_count INTEGER NOT NULL, data BLOB NOT NULL, mime_type TEXT,
  PRIMARY KEY (stream_id, sequence)
);
CREATE TABLE IF NOT EXISTS output_events (
  stream_id TEXT NOT NULL REFERENCES streams(stream_id) ON DELETE CASCADE,
  sequence INTEGER NOT NULL, event TEXT NOT NULL, item_count INTEGER NOT NULL,
  data BLOB, mime_type TEXT, outcome TEXT,
  PRIMARY KEY (stream_id, sequence, event)
);
`;

/** `PRAGMA user_version` of this schema. 0: the first one, whose logs were WITHOUT ROWID. */
const SCHEMA_VERSION = 1;

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
${LOG_TABLES}`;

interface SessionRow {
  session_id: string;
  account: string;
  principal: string;
  application: string;
  environment: string;
  agent_type: string;
  agent_identity: string;
  method: string;
  idempotency_key: string;
  selector: string;
  config: string;
  parameters: string;
  generation: bigint;
  session_token: string;
  stream_key_id: string;
  state: string;
  result: string | null;
  outcome: string | null;
  created_at: bigint;
  finished_at: bigint | null;
}

interface StreamRow {
  stream_id: string;
  session_id: string;
  ordinal: bigint;
  direction: string;
  element_kind: string;
  element_graph: string;
  coordinate: string;
  provisional_ref: string | null;
  parent_kind: string;
  parent_stream_id: string | null;
  parent_sequence: bigint | null;
  token: string;
  count: bigint;
  input_terminal: string | null;
  output_terminal: bigint;
}

interface AttemptRow {
  attempt_id: string;
  operation: string;
  descriptor_digest: string;
  session_id: string;
  generation: bigint;
}

interface InputRow {
  stream_id: string;
  sequence: bigint;
  item_count: bigint;
  data: Buffer;
  mime_type: string | null;
}

interface OutputRow {
  stream_id: string;
  sequence: bigint;
  event: string;
  item_count: bigint;
  data: Buffer | null;
  mime_type: string | null;
  outcome: string | null;
}

function toSession(row: SessionRow): SessionRecord {
  return {
    sessionId: row.session_id,
    account: row.account,
    principal: row.principal,
    application: row.application,
    environment: row.environment,
    agentType: row.agent_type,
    agentIdentity: row.agent_identity,
    method: row.method,
    idempotencyKey: row.idempotency_key,
    selector: row.selector,
    config: row.config,
    parameters: row.parameters,
    generation: row.generation,
    sessionToken: row.session_token,
    streamKeyId: row.stream_key_id,
    state: row.state as SessionState,
    result: row.result ?? undefined,
    outcome: row.outcome ?? undefined,
    createdAt: Number(row.created_at),
    finishedAt: row.finished_at === null ? undefined : Number(row.finished_at),
  };
}

function toParent(row: StreamRow): StreamParent {
  if (row.parent_kind === "item" && row.parent_stream_id !== null && row.parent_sequence !== null) {
    return { kind: "item", streamId: row.parent_stream_id, sequence: row.parent_sequence };
  }
  return row.parent_kind === "result" ? { kind: "result" } : { kind: "params" };
}

function toStream(row: StreamRow): StreamRecord {
  return {
    streamId: row.stream_id,
    sessionId: row.session_id,
    ordinal: Number(row.ordinal),
    direction: row.direction as StreamDirection,
    elementKind: row.element_kind as ElementKind,
    elementGraph: row.element_graph,
    coordinate: row.coordinate,
    provisionalRef: row.provisional_ref ?? undefined,
    parent: toParent(row),
    token: row.token,
    count: row.count,
    inputTerminal: row.input_terminal === null ? undefined : decodeInputTerminal(row.input_terminal),
    outputTerminal: row.output_terminal !== 0n,
  };
}

function encodeInputTerminal(terminal: InputTerminal): string {
  return terminal.kind === "end" ? "end" : `cancelled:${terminal.by}:${terminal.reason}`;
}

function decodeInputTerminal(text: string): InputTerminal {
  if (text === "end") return { kind: "end" };
  const [, by, reason] = text.split(":");
  return { kind: "cancelled", by: by === "client" ? "client" : "server", reason: reason as ServerCancelReason };
}

function toChunk(row: InputRow): InputChunk {
  return {
    streamId: row.stream_id,
    sequence: row.sequence,
    itemCount: row.item_count,
    data: new Uint8Array(row.data.buffer, row.data.byteOffset, row.data.byteLength),
    mimeType: row.mime_type ?? undefined,
  };
}

function toEvent(row: OutputRow): OutputEvent {
  if (row.event === "terminal") {
    return { event: "terminal", streamId: row.stream_id, sequence: row.sequence, outcome: row.outcome ?? "" };
  }
  const data = row.data ?? Buffer.alloc(0);
  return {
    event: "item",
    streamId: row.stream_id,
    sequence: row.sequence,
    itemCount: row.item_count,
    data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
    mimeType: row.mime_type ?? undefined,
  };
}

interface PendingWrite {
  readonly work: () => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: Error) => void;
  /** Set when the write only appends one row at the end of a log (see `#commitBatch`). */
  readonly append?: LogAppend;
}

/** An input chunk or output item that introduces no stream: one row at the end of its log. */
interface LogAppend {
  readonly log: "input" | "output";
  readonly streamId: string;
  readonly sequence: bigint;
  readonly itemCount: bigint;
  /** Inserts the row (the count is advanced by the caller). */
  readonly insert: () => void;
}

type WriteOutcome = { ok: true; value: unknown } | { ok: false; error: Error };

export class SqliteSessionStore implements SessionStore {
  readonly #db: Database.Database;
  readonly #statements;
  readonly #queue: PendingWrite[] = [];
  #flushScheduled = false;
  /**
   * Mutations of several statements, as transaction functions built once
   * (building one per call cost more than the SQL it ran). Called inside the
   * group commit's transaction, each runs as a savepoint, so one that throws
   * rolls back alone.
   */
  readonly #atomic;
  /** The group commit's transaction: runs a batch of mutations, recording each outcome. */
  readonly #commitBatch: (batch: readonly PendingWrite[], outcomes: WriteOutcome[]) => void;

  constructor(options: SqliteSessionStoreOptions) {
    const pageSize = pageSizeOf(options);
    mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
    const db = new Database(join(options.dataDir, "sessions.db"));
    db.defaultSafeIntegers(true);
    // Takes effect only while the file is new (before WAL is on).
    db.pragma(`page_size = ${pageSize}`);
    db.pragma("journal_mode = WAL");
    db.pragma(`synchronous = ${options.synchronous === "normal" ? "NORMAL" : "FULL"}`);
    db.pragma("foreign_keys = ON");
    migrate(db);
    this.#db = db;
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
      insertInput: db.prepare("INSERT INTO input_chunks VALUES (?, ?, ?, ?, ?)"),
      // A log only grows at its end, and never past its terminal.
      advanceInput: db.prepare(`UPDATE streams SET count = count + ? WHERE stream_id = ? AND count = ?
        AND direction = 'input' AND input_terminal IS NULL`),
      advanceOutput: db.prepare(`UPDATE streams SET count = count + ? WHERE stream_id = ? AND count = ?
        AND direction = 'output' AND output_terminal = 0`),
      readInput: db.prepare(`SELECT * FROM input_chunks WHERE stream_id = ? AND sequence < ?
        AND sequence + item_count > ? ORDER BY sequence`),
      endInput: db.prepare("UPDATE streams SET input_terminal = ? WHERE stream_id = ? AND input_terminal IS NULL"),
      insertOutput: db.prepare("INSERT INTO output_events VALUES (?, ?, ?, ?, ?, ?, ?)"),
      endOutput: db.prepare(`UPDATE streams SET output_terminal = 1 WHERE stream_id = ? AND count = ?
        AND direction = 'output' AND output_terminal = 0`),
      readOutput: db.prepare(`SELECT * FROM output_events WHERE stream_id = ? AND sequence >= ?
        ORDER BY sequence, event DESC LIMIT ?`),
      setResult: db.prepare("UPDATE sessions SET result = ? WHERE session_id = ? AND result IS NULL"),
      finish: db.prepare(`UPDATE sessions SET state = 'finished', outcome = ?, finished_at = ?
        WHERE session_id = ? AND state = 'running'`),
      purge: db.prepare("DELETE FROM sessions WHERE state = 'finished' AND finished_at < ?"),
    };
    this.#atomic = {
      createSession: db.transaction((session: SessionRecord, streams: readonly NewStream[], attempt: AttemptRecord) =>
        this.#createSession(session, streams, attempt),
      ),
      attach: db.transaction((attempt: AttemptRecord, sessionToken: string, expectedGeneration: bigint | undefined) =>
        this.#attach(attempt, sessionToken, expectedGeneration),
      ),
      acceptInput: db.transaction((chunk: InputChunk, introduced: readonly NewStream[]) => this.#acceptInput(chunk, introduced)),
      appendOutput: db.transaction((event: OutputEvent, introduced: readonly NewStream[]) => this.#appendOutput(event, introduced)),
      setResult: db.transaction((sessionId: string, result: string, introduced: readonly NewStream[]) =>
        this.#setResult(sessionId, result, introduced),
      ),
      appendRun: db.transaction((appends: readonly LogAppend[]) => this.#appendRun(appends)),
    };
    this.#commitBatch = db.transaction((batch: readonly PendingWrite[], outcomes: WriteOutcome[]) => {
      for (let at = 0; at < batch.length; ) {
        if (batch[at]?.append === undefined) {
          outcomes[at] = runWrite(batch[at]);
          at++;
          continue;
        }
        let end = at + 1;
        while (batch[end]?.append !== undefined) end++;
        this.#appendSegment(batch, at, end, outcomes);
        at = end;
      }
    });
  }

  /**
   * Writes `batch[from..to)`, all appends, in runs: the appends of one stream
   * that continue one another share one count update and one savepoint, so
   * a burst costs one statement per item instead of four. Appends of
   * different streams touch different rows, so taking one stream's run
   * before another's changes nothing; one stream's appends keep their order.
   * A run that fails as a whole is written one append at a time, so each
   * failure stays its own.
   */
  #appendSegment(batch: readonly PendingWrite[], from: number, to: number, outcomes: WriteOutcome[]): void {
    const byStream = new Map<string, number[]>();
    for (let i = from; i < to; i++) {
      const append = batch[i]?.append as LogAppend;
      const key = `${append.log}:${append.streamId}`;
      const indexes = byStream.get(key);
      if (indexes === undefined) byStream.set(key, [i]);
      else indexes.push(i);
    }
    for (const indexes of byStream.values()) {
      let start = 0;
      for (let k = 1; k <= indexes.length; k++) {
        const previous = batch[indexes[k - 1] as number]?.append as LogAppend;
        const next = k < indexes.length ? batch[indexes[k] as number]?.append : undefined;
        if (next !== undefined && next.sequence === previous.sequence + previous.itemCount) continue;
        const run = indexes.slice(start, k);
        if (run.length > 1 && this.#tryAppendRun(run.map((i) => batch[i]?.append as LogAppend))) {
          for (const i of run) outcomes[i] = { ok: true, value: undefined };
        } else {
          for (const i of run) outcomes[i] = runWrite(batch[i]);
        }
        start = k;
      }
    }
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
    const advance = first.log === "input" ? this.#statements.advanceInput : this.#statements.advanceOutput;
    if (advance.run(total, first.streamId, first.sequence).changes !== 1) throw new Error("the run does not continue its stream");
    for (const append of appends) append.insert();
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
    return this.#write(() => this.#atomic.createSession(session, streams, attempt));
  }

  #createSession(session: SessionRecord, streams: readonly NewStream[], attempt: AttemptRecord): CreateSessionResult {
    if (this.#statements.getAttempt.get(attempt.attemptId) !== undefined) return { kind: "attempt-exists" };
    const bound = this.#statements.findByIdempotency.get(
      session.account,
      session.application,
      session.environment,
      session.agentType,
      session.agentIdentity,
      session.idempotencyKey,
    );
    if (bound !== undefined) return { kind: "idempotency-conflict" };
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
    return this.#write(() => this.#atomic.attach(attempt, sessionToken, expectedGeneration));
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

  acceptInput(chunk: InputChunk, introduced: readonly NewStream[]): Promise<void> {
    const append: LogAppend | undefined =
      introduced.length > 0
        ? undefined
        : {
            log: "input",
            streamId: chunk.streamId,
            sequence: chunk.sequence,
            itemCount: chunk.itemCount,
            insert: () => this.#insertInput(chunk),
          };
    return this.#write(() => this.#atomic.acceptInput(chunk, introduced), append);
  }

  #acceptInput(chunk: InputChunk, introduced: readonly NewStream[]): void {
    const moved = this.#statements.advanceInput.run(chunk.itemCount, chunk.streamId, chunk.sequence);
    if (moved.changes !== 1) throw new Error("input chunk does not continue the stream");
    this.#insertInput(chunk);
    this.#insertStreams(introduced);
  }

  #insertInput(chunk: InputChunk): void {
    this.#statements.insertInput.run(chunk.streamId, chunk.sequence, chunk.itemCount, chunk.data, chunk.mimeType ?? null);
  }

  readInput(streamId: string, from: bigint, to: bigint): Promise<InputChunk[]> {
    return this.#run(() => (this.#statements.readInput.all(streamId, to, from) as InputRow[]).map(toChunk));
  }

  endInput(streamId: string, terminal: InputTerminal): Promise<void> {
    return this.#write(() => {
      this.#statements.endInput.run(encodeInputTerminal(terminal), streamId);
    });
  }

  appendOutput(event: OutputEvent, introduced: readonly NewStream[]): Promise<void> {
    const append: LogAppend | undefined =
      event.event !== "item" || introduced.length > 0
        ? undefined
        : {
            log: "output",
            streamId: event.streamId,
            sequence: event.sequence,
            itemCount: event.itemCount,
            insert: () => this.#insertOutputItem(event),
          };
    return this.#write(() => this.#atomic.appendOutput(event, introduced), append);
  }

  #appendOutput(event: OutputEvent, introduced: readonly NewStream[]): void {
    if (event.event === "item") {
      const moved = this.#statements.advanceOutput.run(event.itemCount, event.streamId, event.sequence);
      if (moved.changes !== 1) throw new Error("output event does not continue the stream");
      this.#insertOutputItem(event);
    } else {
      const ended = this.#statements.endOutput.run(event.streamId, event.sequence);
      if (ended.changes !== 1) throw new Error("output terminal does not continue the stream");
      this.#statements.insertOutput.run(event.streamId, event.sequence, "terminal", 0, null, null, event.outcome);
    }
    this.#insertStreams(introduced);
  }

  #insertOutputItem(event: Extract<OutputEvent, { event: "item" }>): void {
    this.#statements.insertOutput.run(event.streamId, event.sequence, "item", event.itemCount, event.data, event.mimeType ?? null, null);
  }

  readOutput(streamId: string, from: bigint, limit: number): Promise<OutputEvent[]> {
    return this.#run(() => (this.#statements.readOutput.all(streamId, from, limit) as OutputRow[]).map(toEvent));
  }

  setResult(sessionId: string, result: string, introduced: readonly NewStream[]): Promise<void> {
    return this.#write(() => this.#atomic.setResult(sessionId, result, introduced));
  }

  #setResult(sessionId: string, result: string, introduced: readonly NewStream[]): void {
    const set = this.#statements.setResult.run(result, sessionId);
    if (set.changes !== 1) throw new Error("the invocation result was already recorded");
    this.#insertStreams(introduced);
  }

  finish(sessionId: string, outcome: string, at: number): Promise<void> {
    return this.#write(() => {
      this.#statements.finish.run(outcome, at, sessionId);
    });
  }

  listRunningSessions(): Promise<SessionRecord[]> {
    return this.#run(() => (this.#statements.runningSessions.all() as SessionRow[]).map(toSession));
  }

  purgeFinished(finishedBefore: number): Promise<number> {
    return this.#write(() => this.#statements.purge.run(finishedBefore).changes);
  }

  close(): Promise<void> {
    return this.#run(() => {
      this.#flush();
      if (this.#db.open) this.#db.close();
    });
  }

  /**
   * Group commit: mutations issued in the same turn of the event loop share
   * one transaction, so one sync covers many of them. Each is atomic on its
   * own (a single statement, or one of the `#atomic` savepoints), so one that
   * fails (a stale sequence, say) rolls back alone. Every promise resolves
   * only after the shared commit.
   */
  #write<T>(work: () => T, append?: LogAppend): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ work, resolve: resolve as (value: unknown) => void, reject, ...(append === undefined ? {} : { append }) });
      if (!this.#flushScheduled) {
        this.#flushScheduled = true;
        setImmediate(() => this.#flush());
      }
    });
  }

  #flush(): void {
    this.#flushScheduled = false;
    const batch = this.#queue.splice(0);
    if (batch.length === 0) return;
    const outcomes: WriteOutcome[] = [];
    try {
      this.#commitBatch(batch, outcomes);
    } catch (error) {
      // The commit itself failed: nothing of this batch is durable.
      for (const item of batch) item.reject(toError(error));
      return;
    }
    batch.forEach((item, index) => {
      const outcome = outcomes[index];
      if (outcome?.ok === true) item.resolve(outcome.value);
      else item.reject(outcome?.error ?? new Error("store write lost"));
    });
  }

  /** Runs synchronous SQLite work and reports its outcome as a promise. */
  #run<T>(work: () => T): Promise<T> {
    try {
      return Promise.resolve(work());
    } catch (error) {
      return Promise.reject(toError(error));
    }
  }
}

/** Runs one write, capturing its outcome (it rolled back alone if it threw). */
function runWrite(item: PendingWrite | undefined): WriteOutcome {
  if (item === undefined) return { ok: false, error: new Error("store write lost") };
  try {
    return { ok: true, value: item.work() };
  } catch (error) {
    return { ok: false, error: toError(error) };
  }
}

/**
 * Creates the schema, or brings a database of an earlier version to this
 * one, in one transaction (a crash half-way leaves the old version whole).
 */
function migrate(db: Database.Database): void {
  db.transaction(() => {
    const version = Number(db.pragma("user_version", { simple: true }));
    if (version === SCHEMA_VERSION) return;
    if (version > SCHEMA_VERSION) throw new Error(`sessions.db has schema version ${version}; this server knows ${SCHEMA_VERSION}`);
    // Version 0 logs were WITHOUT ROWID: copy them into rowid tables.
    const logs = ["input_chunks", "output_events"].filter((name) => db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined);
    for (const name of logs) db.exec(`ALTER TABLE ${name} RENAME TO ${name}_v0`);
    db.exec(SCHEMA);
    for (const name of logs) db.exec(`INSERT INTO ${name} SELECT * FROM ${name}_v0; DROP TABLE ${name}_v0;`);
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
  })();
}

function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
