/**
 * The embedded `SessionStore` on SQLite (better-sqlite3): the entry point,
 * its reads, and the wiring of its parts.
 *
 * Durability: `synchronous: "full"` by default, so a commit is on disk before
 * the promise resolves and before the runtime acknowledges anything to a
 * client. It is kept without syncing on the event loop: SQLite commits at
 * NORMAL and the WAL file is synced from the thread pool before any write of
 * the commit resolves (group-commit.ts, sqlite-database.ts); reads resolve
 * only once what they could see is synced. `synchronous: "normal"` trades the
 * last commits before a power loss (never a process crash) for speed; it is
 * an option, not the default.
 *
 * Every statement is prepared once (`sqlite-statements.ts`). Mutations are
 * group-committed: those issued in one turn of the event loop share a
 * transaction (and its sync), each in its own savepoint (`sqlite-mutations.ts`).
 * Output and input logs are keyed by (stream, sequence) so replay from a
 * cursor and duplicate comparison are indexed range queries
 * (`sqlite-log-rows.ts`). Large payloads (packed u8 batches, binary items)
 * live in per-session files beside the database and are synced before the
 * rows pointing at them commit (`payload-files.ts`). Options: `sqlite-options.ts`.
 */
import { join } from "node:path";
import type Database from "better-sqlite3";
import { GroupCommit, toError } from "./group-commit.js";
import { makeDirectorySync } from "./make-directory.js";
import { PayloadFiles } from "./payload-files.js";
import { PayloadReads } from "./payload-reads.js";
import type {
  CommitListener,
  AttachResult,
  AttemptOperation,
  AttemptRecord,
  CreateSessionResult,
  InputChunk,
  InputCommitWatcher,
  InputTerminal,
  NewStream,
  OutputEvent,
  RecordedRun,
  SessionRecord,
  SessionStore,
  StoredBytes,
  StreamRecord,
  JournalEntry,
} from "./session-store.js";
import { FIRST_EPOCH, OwnershipLostError } from "./ownership.js";
import { checkOutageGraceMs, OutageGrace, SYSTEM_OUTAGE_CLOCK, type StoreOutageListener } from "./outage-grace.js";
import { FileSync, openSessionDatabase } from "./sqlite-database.js";
import { WalCheckpoints } from "./wal-checkpoints.js";
import { InputAppendTask, RecordAppend } from "./sqlite-log-rows.js";
import { PayloadPlacement } from "./payload-placement.js";
import { SqliteMutations } from "./sqlite-mutations.js";
import { checkpointPagesOf, maxPackedRowBytesOf, pageSizeOf, payloadFileThresholdOf } from "./sqlite-options.js";
import type { SqliteSessionStoreOptions } from "./sqlite-options.js";
import { prepareStatements, PURGEABLE_BYTES_SQL, STORED_BYTES_SQL, type SqliteStatements } from "./sqlite-statements.js";
import {
  packedEvents,
  payloadLength,
  pushChunks,
  toEvent,
  toJournalEntry,
  toSession,
  toStream,
  type AttemptRow,
  type InputRow,
  type JournalRow,
  type OutputRow,
  type PayloadReader,
  type SessionRow,
  type StreamRow,
} from "./sqlite-rows.js";

export type { SqliteSessionStoreOptions } from "./sqlite-options.js";

/** Under `dataDir`: one append-only payload file per session. */
const PAYLOAD_DIR = "payloads";

export class SqliteSessionStore implements SessionStore {
  readonly #db: Database.Database;
  readonly #statements: SqliteStatements;
  readonly #payloads: PayloadFiles;
  /** Which bytes go to the payload files (`payload-placement.ts`). */
  readonly #placement: PayloadPlacement;
  /** The bound on a packed row (`maxPackedRowBytes`): chunks that join a queued write are packed to it as they come. */
  readonly #maxPackedRowBytes: number;
  /** The write queue (`group-commit.ts`); its commit function is the mutations' group transaction. */
  readonly #group: GroupCommit;
  /** Writes of several statements, each a savepoint inside the group's transaction. */
  readonly #mutations: SqliteMutations;
  /** Syncs of the WAL file (each group's, at `synchronous: "full"`) and of the database file (after a checkpoint). */
  readonly #wal: FileSync;
  readonly #database: FileSync;
  /** `synchronous: "normal"`: a write resolves at its commit, before the WAL is synced. */
  readonly #commitsBeforeSync: boolean;
  #outageListener: StoreOutageListener | undefined;

  constructor(options: SqliteSessionStoreOptions) {
    const pageSize = pageSizeOf(options);
    const maxPackedRowBytes = maxPackedRowBytesOf(options);
    this.#maxPackedRowBytes = maxPackedRowBytes;
    const outageGraceMs = checkOutageGraceMs(options.outageGraceMs);
    const checkpointPages = checkpointPagesOf(options);
    makeDirectorySync(options.dataDir, 0o700);
    const path = join(options.dataDir, "sessions.db");
    const db = openSessionDatabase(path, pageSize);
    this.#db = db;
    this.#payloads = new PayloadFiles(join(options.dataDir, PAYLOAD_DIR), { directIo: options.payloadDirectIo });
    this.#placement = new PayloadPlacement(
      this.#payloads,
      payloadFileThresholdOf(options),
      (streamId) => this.#statements.sessionOfStream.get(streamId) as string | undefined,
    );
    this.#statements = prepareStatements(db);
    this.#mutations = new SqliteMutations(db, this.#statements, maxPackedRowBytes);
    this.#wal = new FileSync(`${path}-wal`);
    this.#database = new FileSync(path);
    this.#commitsBeforeSync = options.synchronous === "normal";
    const outage = new OutageGrace(outageGraceMs, options.outageClock ?? SYSTEM_OUTAGE_CLOCK, () => this.#outageListener);
    this.#group = new GroupCommit(
      this.#mutations.commitGroup,
      this.#payloads,
      this.#commitsBeforeSync ? undefined : () => this.#wal.sync(),
      outage,
      new WalCheckpoints(
        db,
        () => this.#wal.sync(),
        () => this.#database.sync(),
        checkpointPages,
      ),
    );
    // Files of sessions purged just before a crash (the purge committed, the unlink did not run).
    this.#payloads.sweep((sessionId) => this.#statements.sessionExists.get(sessionId) !== undefined);
  }

  createSession(session: SessionRecord, streams: readonly NewStream[], attempt: AttemptRecord): Promise<CreateSessionResult> {
    return this.#group.write(() => this.#mutations.createSession(session, streams, attempt));
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
    return this.#group.write(() => this.#mutations.attach(attempt, sessionToken, expectedGeneration));
  }

  acceptInput(chunk: InputChunk, introduced: readonly NewStream[], epoch?: bigint): Promise<void> {
    if (epoch !== undefined && epoch !== FIRST_EPOCH) return this.#fenced(chunk.streamId, epoch);
    const payload = this.#placement.forAppend(chunk.streamId, chunk.data);
    const append = introduced.length > 0 ? undefined : new RecordAppend("input", chunk, payload);
    return this.#group.write(() => this.#mutations.acceptInput(chunk, introduced, payload), append, payload);
  }

  /** A chunk that introduces no stream (and those that joined it), written on its own: one function for every `InputAppendTask`. */
  readonly #writeInput = (task: InputAppendTask): void => this.#mutations.writeAppend(task);

  /** `acceptInput` of a chunk that introduces no stream, without a promise (session-store.ts). */
  acceptInputWatched(chunk: InputChunk, epoch: bigint | undefined, watcher: InputCommitWatcher): void {
    if (epoch !== undefined && epoch !== FIRST_EPOCH) {
      // Refused through the queue, so that it is told in its place among the watched writes.
      const refusal = new OwnershipLostError(
        this.#statements.sessionOfStream.get(chunk.streamId) as string | undefined,
        epoch,
        FIRST_EPOCH,
      );
      this.#group.writeWatched(() => {
        throw refusal;
      }, watcher);
      return;
    }
    const payload = this.#placement.forAppend(chunk.streamId, chunk.data);
    const task = new InputAppendTask(this.#writeInput, chunk, payload, this.#maxPackedRowBytes, this.#placement.forRun);
    this.#group.writeWatched(task, watcher, task, payload);
  }

  /** `SessionStore.joinInputWatched`: the chunk joins the queued write `watcher` watches, when it may (`InputAppendTask.join`). */
  joinInputWatched(chunk: InputChunk, epoch: bigint | undefined, watcher: InputCommitWatcher): boolean {
    if (epoch !== undefined && epoch !== FIRST_EPOCH) return false;
    // Bytes that go to a payload file have their own place reserved: they never join.
    if (this.#placement.isLarge(chunk.data.byteLength)) return false;
    const work = this.#group.queuedWorkOf(watcher);
    return work instanceof InputAppendTask && work.join(chunk);
  }

  readInput(streamId: string, from: bigint, to: bigint): Promise<InputChunk[]> {
    return this.#runReading(streamId, (read) => {
      const chunks: InputChunk[] = [];
      for (const row of this.#statements.readInput.all({ stream: streamId, from, to }) as InputRow[])
        pushChunks(row, read, from, to, chunks);
      return chunks;
    });
  }

  endInput(streamId: string, terminal: InputTerminal, epoch?: bigint, count?: bigint): Promise<void> {
    if (epoch !== undefined && epoch !== FIRST_EPOCH) return this.#fenced(streamId, epoch);
    return this.#group.write(() => this.#mutations.endInput(streamId, terminal, count));
  }

  appendOutput(event: OutputEvent, introduced: readonly NewStream[], epoch?: bigint): Promise<void> {
    if (epoch !== undefined && epoch !== FIRST_EPOCH) return this.#fenced(event.streamId, epoch);
    const payload = event.event === "item" ? this.#placement.forAppend(event.streamId, event.data) : undefined;
    const append = event.event !== "item" || introduced.length > 0 ? undefined : new RecordAppend("output", event, payload);
    return this.#group.write(() => this.#mutations.appendOutput(event, introduced, payload), append, payload);
  }

  readOutput(streamId: string, from: bigint, limit: number, maxBytes = Number.POSITIVE_INFINITY): Promise<OutputEvent[]> {
    return this.#runReading(streamId, (read) => {
      // Rows first, payloads after: the connection is busy while the iterator
      // is open, and a row past the byte bound is never read at all (an inline
      // row carries its payload).
      // A packed row is split at once (its bytes are in it); other rows wait for their payloads.
      const taken: (OutputRow | OutputEvent)[] = [];
      if (limit < 1) return [];
      let bytes = 0;
      // One row more than `limit`: the first may hold only items before `from`.
      rows: for (const row of this.#statements.readOutput.iterate({
        stream: streamId,
        from,
        limit: limit + 1,
      }) as IterableIterator<OutputRow>) {
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
      return taken.map((entry) => ("stream_id" in entry ? toEvent(entry, read) : entry));
    });
  }

  /** `work` over one stream's rows, their file payloads read from the thread pool before the promise resolves (`payload-reads.ts`). */
  #runReading<T>(streamId: string, work: (read: PayloadReader) => T): Promise<T> {
    const reads = new PayloadReads();
    return this.#run(
      () => work(reads.reader),
      () => reads.start(this.#payloads, () => this.#statements.sessionOfStream.get(streamId) as string),
    );
  }

  setResult(sessionId: string, result: string, introduced: readonly NewStream[], epoch?: bigint): Promise<void> {
    return this.#sessionWrite(sessionId, epoch, () => this.#mutations.setResult(sessionId, result, introduced));
  }

  finish(sessionId: string, outcome: string, at: number, epoch?: bigint): Promise<void> {
    return this.#sessionWrite(sessionId, epoch, () => void this.#statements.finish.run(outcome, at, sessionId));
  }

  finishWithResult(sessionId: string, result: string, outcome: string, at: number, epoch?: bigint): Promise<void> {
    // One write, so one savepoint: a result that cannot be recorded takes the outcome back with it.
    return this.#sessionWrite(sessionId, epoch, () => {
      this.#mutations.setResult(sessionId, result, []);
      this.#statements.finish.run(outcome, at, sessionId);
    });
  }

  /** A write of the session's own rows at `epoch`, refused before it is queued unless it is `FIRST_EPOCH` (see `#fenced`). */
  #sessionWrite<T>(sessionId: string, epoch: bigint | undefined, work: () => T): Promise<T> {
    if (epoch !== undefined && epoch !== FIRST_EPOCH) return Promise.reject(new OwnershipLostError(sessionId, epoch, FIRST_EPOCH));
    return this.#group.write(work);
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
    return this.#sessionWrite(entry.sessionId, epoch, () => this.#mutations.appendJournal(entry));
  }

  readJournal(sessionId: string): Promise<JournalEntry[]> {
    return this.#run(() => (this.#statements.readJournal.all(sessionId) as JournalRow[]).map(toJournalEntry));
  }

  recordRun(sessionId: string, epoch?: bigint, progress?: bigint): Promise<RecordedRun> {
    return this.#sessionWrite(sessionId, epoch, () => {
      const row = this.#statements.recordRun.get({ sessionId, progress: progress ?? null }) as
        { runs: bigint; stalled: bigint } | undefined;
      if (row === undefined) throw new Error("the session is not running");
      return { run: Number(row.runs), withoutProgress: Number(row.stalled) };
    });
  }

  recordHandOver(sessionId: string, epoch?: bigint): Promise<void> {
    return this.#sessionWrite(sessionId, epoch, () => this.#mutations.recordHandOver(sessionId));
  }

  async purgeFinished(finishedBefore: number, now: number, tombstonesBefore: number): Promise<number> {
    const purged = await this.#group.write(() => this.#mutations.purgeFinished(finishedBefore, now, tombstonesBefore));
    // Only once the purge is on disk: at `synchronous: "normal"` its commit is not yet, and a power
    // loss could roll the purge back but keep the unlinks, its rows then pointing into missing
    // files. (A checkpoint since the commit synced the database file before the WAL was reused.)
    if (purged.length > 0 && this.#commitsBeforeSync) await this.#wal.sync();
    // After the commit: a crash before this leaves files that the next open sweeps.
    await this.#payloads.remove(purged);
    return purged.length;
  }

  /**
   * A row's bytes are in its payload file (`payload_length`) or inline; a
   * packed row's data is its parts' bytes. Every sum scans both logs once,
   * summed per stream before the joins (measured: 1 million 64-byte rows,
   * 0.9 s instead of 5 s joined per row), and adds the sessions' records and
   * attempts (record-bytes.ts); it runs at start only. The sum of the
   * sessions a purge is about to delete reads only their rows.
   */
  storedBytesByPrincipal(finishedBefore?: number): Promise<StoredBytes[]> {
    const statement = this.#db.prepare(finishedBefore === undefined ? STORED_BYTES_SQL : PURGEABLE_BYTES_SQL).safeIntegers(false);
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
    // A store that takes no more writes is not ready, whatever a read would answer.
    const failure = this.#group.failure;
    if (failure !== undefined) throw failure;
    this.#db.prepare("SELECT 1").get();
  }

  async close(): Promise<void> {
    await this.#group.drain();
    await this.#payloads.close();
    await this.#wal.close();
    await this.#database.close();
    // Closing, SQLite checkpoints what the WAL still holds, with its own syncs, and removes it.
    if (this.#db.open) this.#db.close();
  }

  /**
   * Runs synchronous SQLite work; its promise resolves once every commit the work could have read is synced (a client
   * is never shown what a power failure could take away) and the reads `startReads` began in the same turn are done.
   */
  #run<T>(work: () => T, startReads?: () => Promise<void> | undefined): Promise<T> {
    let value: T;
    let reading: Promise<void> | undefined;
    try {
      value = work();
      reading = startReads?.();
    } catch (error) {
      return Promise.reject(toError(error));
    }
    const durable = this.#group.durable();
    return (reading === undefined ? durable : Promise.all([durable, reading])).then(() => value);
  }
}
