/**
 * The SQLite store's writes of several statements, and the transaction that
 * commits a group of writes (`group-commit.ts`).
 *
 * Each write of several statements is a transaction function built once
 * (building one per call cost more than the SQL it ran). Called inside the
 * group's transaction, each runs as a savepoint, so one that throws rolls
 * back alone. A group's appends are written in runs, stream by stream
 * between other writes (`write-order.ts`): a run of one stream shares one
 * count update, one savepoint and packed rows (`packed-rows.ts`).
 */
import type Database from "better-sqlite3";
import { runWrite, type CommitGroup, type LogAppend, type PendingWrite, type WriteOutcome } from "./group-commit.js";
import type { PendingPayload } from "./payload-files.js";
import { RowInserter } from "./row-inserter.js";
import type {
  AttachResult,
  AttemptRecord,
  CreateSessionResult,
  InputChunk,
  InputTerminal,
  JournalEntry,
  NewStream,
  OutputEvent,
  SessionRecord,
} from "./session-store.js";
import { APPENDED, INPUT_COLUMNS, OUTPUT_COLUMNS, inputRow, outputItemRow, outputTerminalRow, runRows } from "./sqlite-log-rows.js";
import { encodeInputTerminal, type SessionRow } from "./sqlite-rows.js";
import type { SqliteStatements } from "./sqlite-statements.js";
import { continuesRun, writeOrder } from "./write-order.js";

export class SqliteMutations {
  readonly #db: Database.Database;
  readonly #statements: SqliteStatements;
  readonly #maxPackedRowBytes: number;
  /** Every insert into the two logs: one row, or a run of appends with many rows per statement. */
  readonly #inputRows: RowInserter;
  readonly #outputRows: RowInserter;
  readonly #atomic;
  /** The group commit's transaction: runs a batch of writes, recording each outcome at its index. */
  readonly commitGroup: CommitGroup;

  constructor(db: Database.Database, statements: SqliteStatements, maxPackedRowBytes: number) {
    this.#db = db;
    this.#statements = statements;
    this.#maxPackedRowBytes = maxPackedRowBytes;
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
    // Outcomes stay at the writes' own indexes, so the group still settles in call order.
    this.commitGroup = db.transaction((batch: readonly PendingWrite[], outcomes: WriteOutcome[]) => {
      const appends = batch.map((write) => write.append);
      const order = writeOrder(appends);
      for (let at = 0; at < order.length;) {
        const first = appends[order[at] as number];
        let end = at + 1;
        if (first !== undefined) {
          while (end < order.length && continuesRun(appends[order[end - 1] as number] as LogAppend, appends[order[end] as number])) end++;
        }
        this.#writeRun(batch, order.slice(at, end), outcomes);
        at = end;
      }
    });
  }

  createSession(session: SessionRecord, streams: readonly NewStream[], attempt: AttemptRecord): CreateSessionResult {
    return this.#atomic.createSession(session, streams, attempt);
  }

  attach(attempt: AttemptRecord, sessionToken: string, expectedGeneration: bigint | undefined): AttachResult {
    return this.#atomic.attach(attempt, sessionToken, expectedGeneration);
  }

  acceptInput(chunk: InputChunk, introduced: readonly NewStream[], payload: PendingPayload | undefined): void {
    this.#atomic.acceptInput(chunk, introduced, payload);
  }

  /** Writes one append (that introduces no stream) atomically: its count update and its rows. */
  writeAppend(append: LogAppend): void {
    this.#atomic.appendRun([append]);
  }

  appendOutput(event: OutputEvent, introduced: readonly NewStream[], payload: PendingPayload | undefined): void {
    this.#atomic.appendOutput(event, introduced, payload);
  }

  setResult(sessionId: string, result: string, introduced: readonly NewStream[]): void {
    this.#atomic.setResult(sessionId, result, introduced);
  }

  /**
   * Inserts the entry if its position is free. A position that holds this very entry (the same
   * name and outcome: an earlier write of it committed) is done; another entry, or a session
   * that is not running, is refused.
   */
  appendJournal(entry: JournalEntry): void {
    const added = this.#statements.appendJournal.run(entry.position, entry.name, entry.outcome, entry.sessionId);
    if (added.changes === 1) return;
    const taken = this.#statements.journalEntry.get(entry.sessionId, entry.position) as { name: string; outcome: string } | undefined;
    if (taken !== undefined && taken.name === entry.name && taken.outcome === entry.outcome) return;
    throw new Error(taken === undefined ? "the session is not running" : "the journal position is already taken");
  }

  /** `SessionStore.endInput`: with `count`, an input without a terminal that does not hold that many items is refused. */
  endInput(streamId: string, terminal: InputTerminal, count: bigint | undefined): void {
    const ended = this.#statements.endInput.run({ terminal: encodeInputTerminal(terminal), stream: streamId, count: count ?? null });
    if (ended.changes === 1 || count === undefined) return;
    const stream = this.#statements.inputEnded.get(streamId) as { ended: bigint } | undefined;
    if (stream !== undefined && stream.ended === 0n) throw new Error("input end does not follow the stream's items");
  }

  /** `SessionStore.purgeFinished`'s rows: old tombstones dropped, the purged sessions' attempts and keys tombstoned; the purged ids. */
  purgeFinished(finishedBefore: number, now: number, tombstonesBefore: number): string[] {
    const statements = this.#statements;
    statements.dropAttemptTombstones.run(tombstonesBefore);
    statements.dropIdempotencyTombstones.run(tombstonesBefore);
    statements.tombstoneAttempts.run(now, finishedBefore);
    statements.tombstoneIdempotency.run(now, finishedBefore);
    return statements.purge.all(finishedBefore) as string[];
  }

  /** `SessionStore.recordHandOver`: the next re-run counts as one that found progress. */
  recordHandOver(sessionId: string): void {
    if (this.#statements.recordHandOver.run(sessionId).changes === 0) throw new Error("the session is not running");
  }

  /**
   * Writes `batch[indexes]`: one write that is not an append, or a run of
   * appends of one stream that continue one another, which share one count
   * update and one savepoint, so a burst costs one statement per item
   * instead of four. A run that fails as a whole is written one append at a
   * time, so each failure stays its own.
   */
  #writeRun(batch: readonly PendingWrite[], indexes: readonly number[], outcomes: WriteOutcome[]): void {
    if (indexes.length > 1) {
      const failure = this.#tryAppendRun(indexes.map((i) => batch[i]?.append as LogAppend));
      if (failure === undefined) {
        for (const i of indexes) outcomes[i] = APPENDED;
        return;
      }
      this.#failGroupIfRolledBack(failure);
    }
    for (const i of indexes) {
      const outcome = runWrite(batch[i]);
      outcomes[i] = outcome;
      if (!outcome.ok) this.#failGroupIfRolledBack(outcome.error);
    }
  }

  /**
   * SQLite rolls a whole transaction back on some failures of one statement (a full disk, no
   * memory), not only the statement's savepoint: the group's earlier writes are then gone, and
   * the next one would run outside any transaction and commit on its own. The group fails as
   * one, with that failure (GroupCommit rejects all its writes).
   */
  #failGroupIfRolledBack(failure: unknown): void {
    if (!this.#db.inTransaction) throw failure;
  }

  /** Writes a run of appends atomically; undefined, or what failed (and nothing written). */
  #tryAppendRun(run: readonly LogAppend[]): unknown {
    try {
      this.#atomic.appendRun(run);
      return undefined;
    } catch (error) {
      return error ?? new Error("the run failed");
    }
  }

  #appendRun(appends: readonly LogAppend[]): void {
    const first = appends[0];
    if (first === undefined) return;
    const total = appends.reduce((sum, append) => sum + append.itemCount, 0n);
    const input = first.log === "input";
    const advance = input ? this.#statements.advanceInput : this.#statements.advanceOutput;
    if (advance.run(total, first.streamId, first.sequence).changes !== 1) throw new Error("the run does not continue its stream");
    (input ? this.#inputRows : this.#outputRows).insertAll(runRows(appends, this.#maxPackedRowBytes));
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

  #createSession(session: SessionRecord, streams: readonly NewStream[], attempt: AttemptRecord): CreateSessionResult {
    if (this.#statements.getAttempt.get(attempt.attemptId) !== undefined) return { kind: "attempt-exists" };
    const scope = [
      session.account,
      session.application,
      session.environment,
      session.agentType,
      session.agentIdentity,
      session.idempotencyKey,
    ];
    if (
      this.#statements.attemptTombstoned.get(attempt.attemptId) !== undefined ||
      this.#statements.idempotencyTombstoned.get(...scope) !== undefined
    ) {
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

  #acceptInput(chunk: InputChunk, introduced: readonly NewStream[], payload: PendingPayload | undefined): void {
    const moved = this.#statements.advanceInput.run(chunk.itemCount, chunk.streamId, chunk.sequence);
    if (moved.changes !== 1) throw new Error("input chunk does not continue the stream");
    this.#inputRows.insertAll([inputRow(chunk, payload?.ref)]);
    this.#insertStreams(introduced);
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

  #setResult(sessionId: string, result: string, introduced: readonly NewStream[]): void {
    const set = this.#statements.setResult.run(result, sessionId);
    if (set.changes !== 1) throw new Error("the invocation result was already recorded");
    this.#insertStreams(introduced);
  }
}
