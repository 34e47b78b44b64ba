/**
 * `SessionStore` and `ClusterSessionStore` on PostgreSQL (node-postgres).
 *
 * Writes go through one writer connection with group commit
 * (`write-queue.ts`): durable when their promise resolves (keep
 * `synchronous_commit` on), committed in call order, each in its own
 * savepoint. Reads use a pool. Committed changes are published with
 * `pg_notify` in the writing transaction and received by one LISTEN
 * connection per store (`change-feed.ts`).
 */
import { randomUUID } from "node:crypto";
import pg from "pg";
import { OwnershipLostError } from "@golem-stream/server/store";
import type {
  CommitListener,
  AttachResult,
  AttemptRecord,
  ClusterSessionStore,
  CreateSessionResult,
  InputChunk,
  InputTerminal,
  JournalEntry,
  NewStream,
  OutputEvent,
  SessionChange,
  SessionChangeListener,
  NodeCatalogue,
  Ownership,
  SessionRecord,
  StoredBytes,
  StoreOutageListener,
  StreamRecord,
} from "@golem-stream/server/store";
import { checkOutageGraceMs, OutageGrace, SYSTEM_OUTAGE_CLOCK, type OutageClock } from "@golem-stream/server/store";
import { appendGroupStatement } from "./append-group.js";
import { ChangeFeed, encodeNote } from "./change-feed.js";
import { connectionSettings, type ConnectionTimeouts } from "./connection-settings.js";
import { asStoreError, isUnavailable } from "./store-error.js";
import {
  encodeInputTerminal,
  toAttempt,
  eventsFrom,
  pushChunks,
  toSession,
  toStream,
  type AttemptRow,
  type InputRow,
  type OutputRow,
  type SessionRow,
  type StreamRow,
} from "./rows.js";
import { serverHasLz4, writerSetup, type LogCompression } from "./log-storage.js";
import { checkSchemaName, migrate } from "./schema.js";
import { SessionReads } from "./session-reads.js";
import { Rollback, WriteQueue, type LogAppend, type WriteContext } from "./write-queue.js";

/**
 * The timeouts (`connectTimeoutMs`, `statementTimeoutMs`, `queryTimeoutMs`,
 * `keepAliveInitialDelayMs`: `connection-settings.ts`) apply to every
 * connection; a call that runs into one rejects with a `PostgresStoreError`.
 */
export interface PostgresSessionStoreOptions extends ConnectionTimeouts {
  /** A libpq-style connection string, e.g. `postgres://user:pass@host:5432/db`. */
  readonly connectionString?: string;
  /**
   * Further node-postgres settings (host, user, password, ssl, `max` for the
   * read pool's size, ...), merged under `connectionString`. The writer and
   * the listener connections use the same settings. Its `pg` timeout
   * settings (`connectionTimeoutMillis`, `statement_timeout`, `query_timeout`,
   * `keepAliveInitialDelayMillis`) count where the store's own option of the
   * same meaning is not given.
   */
  readonly pool?: pg.PoolConfig;
  /** The schema holding the tables (created if missing). Default `golem_stream`. */
  readonly schema?: string;
  /** This node's id in cluster mode. Default: a random UUID per store. */
  readonly nodeId?: string;
  /** Called with errors that have no caller to reject (a dropped listener, a throwing subscriber). Default: ignored. */
  readonly onError?: (error: Error) => void;
  /**
   * Small input chunks and output items of one stream written in the same
   * group share one log row, up to this many bytes (default 7168; 0: a row
   * per append). Only while every live node reads packed rows: a node of an
   * earlier version (schema 1) keeps this node from packing until it has
   * left or its lease has expired (README, *Tables and migrations*).
   */
  readonly maxPackedRowBytes?: number;
  /**
   * How PostgreSQL compresses log rows too large for a page (1 MiB batches):
   * `lz4` (default) where the server was built with it, set for the writer
   * connection only, else the server's own `default_toast_compression`;
   * `server`: always the server's (README, *Log storage*).
   */
  readonly logCompression?: LogCompression;
  /**
   * How long the store waits out a PostgreSQL it cannot reach (refused or
   * lost connections, a server shutting down or starting up) before failing
   * the work: writes are retried in order, with backoff, and a COMMIT whose
   * answer was lost is checked first; reads are retried too. Past it the
   * writes waiting fail with `PostgresStoreError` code `unavailable` (their
   * invocations fail), and later ones at once until PostgreSQL answers. The
   * lease heartbeat, orphan claims and `ping` are never held (docs/cluster.md).
   * Default 30 000; 0 fails at the first error.
   */
  readonly outageGraceMs?: number;
  /** The clock of the outage grace (tests). Default: the process's. */
  readonly outageClock?: OutageClock;
}

/**
 * 7 KiB: a packed row then fits one 8 KiB page with its stream id and other columns, where the
 * log tables keep it uncompressed (`log-storage.ts`); one of 8 KiB spilled over and went through
 * `pglz`. The bound holds the row's data and its part list together (`packRun`).
 */
const DEFAULT_MAX_PACKED_ROW_BYTES = 7168;
/** The log format this version reads and writes: 2, packed rows (schema version 2). */
const LOG_FORMAT = 2;

export const DEFAULT_SCHEMA = "golem_stream";

type Event = Extract<OutputEvent, { event: "item" }>;

export class PostgresSessionStore implements ClusterSessionStore {
  readonly nodeId: string;
  /** The schema the tables live in. */
  readonly schema: string;
  /** The NOTIFY channel of this schema's change feed: `<schema>_changes`. */
  readonly channel: string;
  readonly #config: pg.ClientConfig;
  readonly #pool: pg.Pool;
  readonly #writes: WriteQueue;
  readonly #feed: ChangeFeed;
  readonly #sessionReads: SessionReads;
  readonly #onError: (error: Error) => void;
  readonly #sql;
  readonly #maxPackedRowBytes: number;
  readonly #logCompression: LogCompression;
  /** Run by the writer connection once connected (lz4 compression), decided at open. */
  #writerSetup: string | undefined;
  /** Whether no live node of an earlier version could read a packed row: checked at open and at each heartbeat. */
  #packing = false;
  #state: "new" | "opening" | "open" | "closed" = "new";
  readonly #outageGraceMs: number;
  readonly #outageClock: OutageClock;
  #outageListener: StoreOutageListener | undefined;
  #opening: Promise<void> | undefined;

  /**
   * Connects, brings the schema to this version (migrations under an
   * advisory lock) and starts listening for changes. The usual way to get a
   * store; equivalent to `new PostgresSessionStore(options)` then `open()`.
   */
  static async connect(options: PostgresSessionStoreOptions): Promise<PostgresSessionStore> {
    const store = new PostgresSessionStore(options);
    try {
      await store.open();
    } catch (error) {
      await store.close().catch(() => undefined);
      throw error;
    }
    return store;
  }

  /** Opens no connection: call `open()` before any other method (or use `connect`). */
  constructor(options: PostgresSessionStoreOptions) {
    this.schema = checkSchemaName(options.schema ?? DEFAULT_SCHEMA);
    this.channel = `${this.schema}_changes`;
    const nodeId = options.nodeId ?? randomUUID();
    if (typeof nodeId !== "string" || nodeId.length === 0 || nodeId.length > 200) throw new TypeError("nodeId must be a non-empty string of at most 200 characters");
    this.nodeId = nodeId;
    this.#onError = options.onError ?? (() => {});
    this.#config = {
      ...options.pool,
      ...connectionSettings(options, options.pool),
      ...(options.connectionString === undefined ? {} : { connectionString: options.connectionString }),
    };
    this.#pool = new pg.Pool({ ...this.#config });
    // An idle pooled connection that breaks is replaced by the pool; the error has no caller.
    this.#pool.on("error", (error) => this.#onError(error));
    const maxPackedRowBytes = options.maxPackedRowBytes ?? DEFAULT_MAX_PACKED_ROW_BYTES;
    if (!Number.isSafeInteger(maxPackedRowBytes) || maxPackedRowBytes < 0) throw new TypeError("maxPackedRowBytes must be a non-negative integer");
    this.#maxPackedRowBytes = maxPackedRowBytes;
    const logCompression = options.logCompression ?? "lz4";
    if (logCompression !== "lz4" && logCompression !== "server") throw new TypeError(`logCompression must be "lz4" or "server", got ${JSON.stringify(logCompression)}`);
    this.#logCompression = logCompression;
    this.#sql = statements(this.schema);
    this.#outageGraceMs = checkOutageGraceMs(options.outageGraceMs);
    this.#outageClock = options.outageClock ?? SYSTEM_OUTAGE_CLOCK;
    this.#writes = new WriteQueue(
      () => this.#writerClient(),
      this.channel,
      {
        input: this.#sql.inputRun,
        output: this.#sql.outputRun,
        group: appendGroupStatement(this.schema),
        packedRowBytes: () => (this.#packing ? this.#maxPackedRowBytes : 0),
        counts: this.#sql.streamCounts,
      },
      new OutageGrace(this.#outageGraceMs, this.#outageClock, () => this.#outageListener),
    );
    this.#sessionReads = new SessionReads((text, values) => this.#pool.query(text, values), this.#sql);
    this.#feed = new ChangeFeed({
      connect: () => this.#client(),
      channel: this.channel,
      onReconnect: (sessionIds) => this.#replay(sessionIds),
      onError: (error) => this.#onError(error),
    });
  }

  /** Runs the migrations and starts the change feed's listener. Idempotent. */
  open(): Promise<void> {
    if (this.#state === "closed") return Promise.reject(new Error("the PostgresSessionStore is closed"));
    this.#opening ??= (async () => {
      this.#state = "opening";
      try {
        const client = await this.#checkOut();
        let failure: unknown;
        try {
          await migrate(client.connection, this.schema);
          await this.#checkPacking(client.connection);
          this.#writerSetup = writerSetup(this.#logCompression, await serverHasLz4(client.connection));
        } catch (error) {
          failure = error;
          throw error;
        } finally {
          // A connection that failed (a timeout left it busy) is closed, not reused.
          client.release(failure instanceof Error ? failure : undefined);
        }
        await this.#feed.start();
      } catch (error) {
        throw asStoreError(error, "cannot open the PostgresSessionStore");
      }
      if (this.#state === "opening") this.#state = "open";
    })();
    return this.#opening;
  }

  /** Metrics: told after each committed group of writes (`write-queue.ts`). */
  observeCommits(listener: CommitListener): void {
    this.#writes.observe(listener);
  }

  /** Metrics and log lines: told when PostgreSQL becomes unavailable, of each retry, when it answers again, and of writes failed past the grace. */
  observeOutages(listener: StoreOutageListener): void {
    this.#outageListener = listener;
  }

  /** Readiness: one round trip to PostgreSQL on a pooled connection. */
  async ping(): Promise<void> {
    if (this.#state === "closed") throw new Error("the PostgresSessionStore is closed");
    await this.#pool.query("SELECT 1").catch((error: unknown) => {
      throw asStoreError(error);
    });
  }

  /** Commits the queued writes, stops the listener and ends every connection. */
  async close(): Promise<void> {
    if (this.#state === "closed") return;
    const wasOpen = this.#state !== "new";
    this.#state = "closed";
    if (wasOpen) await this.#opening?.catch(() => undefined);
    await this.#writes.close();
    await this.#feed.close();
    await this.#pool.end();
  }

  /**
   * Writes retried after PostgreSQL picked them as a deadlock victim (40P01)
   * or failed their serialization (40001): a write of this node that waits on
   * another node's lock can be one. Each is retried in order, a few times at most.
   */
  get transientRetries(): number {
    return this.#writes.transientRetries;
  }

  /** How often the change feed's connection was re-established. */
  get listenerReconnects(): number {
    return this.#feed.reconnects;
  }

  async #client(): Promise<pg.Client> {
    const client = new pg.Client({ ...this.#config });
    client.on("error", (error) => this.#onError(error));
    await client.connect().catch((error: unknown) => {
      throw asStoreError(error);
    });
    return client;
  }

  /** The writer's connection: every log row is written through it, so the compression setting goes here. */
  async #writerClient(): Promise<pg.Client> {
    const client = await this.#client();
    if (this.#writerSetup !== undefined) {
      await client.query(this.#writerSetup).catch(async (error: unknown) => {
        await client.end().catch(() => undefined);
        throw asStoreError(error);
      });
    }
    return client;
  }

  #checkOpen(): void {
    if (this.#state !== "open") {
      throw new Error(this.#state === "closed" ? "the PostgresSessionStore is closed" : "PostgresSessionStore: call open() (or use PostgresSessionStore.connect) first");
    }
  }

  async #read<R extends pg.QueryResultRow>(text: string, values: readonly unknown[]): Promise<R[]> {
    return this.#reading(async () => (await this.#pool.query<R>(text, values as unknown[])).rows);
  }

  /** A statement of the cluster's own bookkeeping (leases, claims, notifications): tried once, never held by an outage. */
  async #readOnce<R extends pg.QueryResultRow>(text: string, values: readonly unknown[]): Promise<R[]> {
    return this.#reading(async () => (await this.#pool.query<R>(text, values as unknown[])).rows, false);
  }

  /**
   * The rows `query` reads, on an open store, its failure as a store error.
   * A PostgreSQL that cannot be reached is waited out (`outageGraceMs`, each
   * read its own grace): a read changes nothing, so trying it again is safe.
   */
  async #reading<R>(query: () => Promise<R[]>, retried = true): Promise<R[]> {
    this.#checkOpen();
    const grace = retried ? new OutageGrace(this.#outageGraceMs, this.#outageClock) : undefined;
    for (;;) {
      try {
        return await query();
      } catch (error) {
        if (grace !== undefined && isUnavailable(error) && this.#state === "open" && (await grace.retry(error))) continue;
        throw asStoreError(error);
      }
    }
  }

  #write<T>(work: (tx: WriteContext) => Promise<T>, append?: LogAppend): Promise<T> {
    try {
      this.#checkOpen();
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#writes.write(work, append);
  }

  async #insertStreams(tx: WriteContext, streams: readonly NewStream[]): Promise<void> {
    if (streams.length === 0) return;
    // Ordinals are per session: lock its row so two nodes cannot take the same one.
    const sessions = [...new Set(streams.map((s) => s.sessionId))];
    await tx.query(this.#sql.lockSessions, [sessions]);
    for (const stream of streams) {
      const parent = stream.parent;
      await tx.query(this.#sql.insertStream, [
        stream.streamId,
        stream.sessionId,
        stream.direction,
        stream.elementKind,
        stream.elementGraph,
        stream.coordinate,
        stream.provisionalRef ?? null,
        parent.kind,
        parent.kind === "item" ? parent.streamId : null,
        parent.kind === "item" ? parent.sequence : null,
        stream.token,
      ]);
    }
  }

  createSession(session: SessionRecord, streams: readonly NewStream[], attempt: AttemptRecord): Promise<CreateSessionResult> {
    return this.#write(async (tx) => {
      const check = async (): Promise<CreateSessionResult["kind"] | null> => {
        const checked = await tx.query<{ verdict: CreateSessionResult["kind"] | null }>(this.#sql.createCheck, [
          attempt.attemptId,
          session.account,
          session.application,
          session.environment,
          session.agentType,
          session.agentIdentity,
          session.idempotencyKey,
        ]);
        return checked.rows[0]?.verdict ?? null;
      };
      const verdict = await check();
      if (verdict !== null) return { kind: verdict } as CreateSessionResult;
      const inserted = await tx.query(this.#sql.insertSession, [
        session.sessionId,
        session.account,
        session.principal,
        session.application,
        session.environment,
        session.agentType,
        session.agentIdentity,
        session.method,
        session.idempotencyKey,
        session.selector,
        session.config,
        session.parameters,
        session.generation,
        session.sessionToken,
        session.streamKeyId,
        session.state,
        session.result ?? null,
        session.outcome ?? null,
        session.createdAt,
        session.finishedAt ?? null,
        this.nodeId,
      ]);
      // Another node bound the key between the check and the insert: the insert waited for its
      // commit. Often with this very attempt (a client's exact retry racing its original at
      // another node), which must be answered as a replay: check again (read committed, so this
      // statement sees that commit).
      if (inserted.rowCount !== 1) return { kind: (await check()) ?? "idempotency-conflict" } as CreateSessionResult;
      const attempted = await tx.query(this.#sql.insertAttempt, [attempt.attemptId, attempt.operation, attempt.descriptorDigest, attempt.sessionId, attempt.generation]);
      if (attempted.rowCount !== 1) throw new Rollback<CreateSessionResult>({ kind: "attempt-exists" });
      await this.#insertStreams(tx, streams);
      return { kind: "created" } as CreateSessionResult;
    });
  }

  async getAttempt(attemptId: string): Promise<AttemptRecord | undefined> {
    const [row] = await this.#read<AttemptRow>(this.#sql.getAttempt, [attemptId]);
    return row === undefined ? undefined : toAttempt(row);
  }

  // The two reads of a cluster node's sync: asked in the same turn, one round trip (session-reads.ts).
  async getSession(sessionId: string): Promise<SessionRecord | undefined> {
    const [row] = await this.#reading(() => this.#sessionReads.session<SessionRow>(sessionId));
    return row === undefined ? undefined : toSession(row);
  }

  async listStreams(sessionId: string): Promise<StreamRecord[]> {
    return (await this.#reading(() => this.#sessionReads.streams<StreamRow>(sessionId))).map(toStream);
  }

  async getStream(streamId: string): Promise<StreamRecord | undefined> {
    const [row] = await this.#read<StreamRow>(this.#sql.getStream, [streamId]);
    return row === undefined ? undefined : toStream(row);
  }

  attach(attempt: AttemptRecord, sessionToken: string, expectedGeneration: bigint | undefined): Promise<AttachResult> {
    return this.#write(async (tx): Promise<AttachResult> => {
      const exists = await tx.query(this.#sql.getAttempt, [attempt.attemptId]);
      if (exists.rowCount !== 0) return { kind: "attempt-exists" };
      const current = await tx.query<{ generation: string }>(this.#sql.lockGeneration, [attempt.sessionId]);
      const row = current.rows[0];
      if (row === undefined) return { kind: "superseded" };
      const generation = BigInt(row.generation);
      if (expectedGeneration !== undefined && generation !== expectedGeneration) return { kind: "superseded" };
      if (attempt.generation !== generation + 1n) return { kind: "superseded" };
      await tx.query(this.#sql.attach, [attempt.generation, sessionToken, attempt.sessionId]);
      const attempted = await tx.query(this.#sql.insertAttempt, [attempt.attemptId, attempt.operation, attempt.descriptorDigest, attempt.sessionId, attempt.generation]);
      if (attempted.rowCount !== 1) throw new Rollback<AttachResult>({ kind: "attempt-exists" });
      tx.notify(encodeNote(attempt.sessionId, { kind: "attached", generation: attempt.generation.toString() }));
      return { kind: "attached", generation: attempt.generation };
    });
  }

  acceptInput(chunk: InputChunk, introduced: readonly NewStream[], epoch?: bigint): Promise<void> {
    return this.#write(async (tx) => {
      const moved = await tx.query<{ session_id: string }>(this.#sql.advanceInput, [chunk.itemCount, chunk.streamId, chunk.sequence, epoch ?? null]);
      const sessionId = moved.rows[0]?.session_id;
      if (sessionId === undefined) throw await this.#refusal(tx, chunk.streamId, epoch, "input chunk does not continue the stream");
      await tx.query(this.#sql.insertInput, [chunk.streamId, chunk.sequence, chunk.itemCount, chunk.data, chunk.mimeType ?? null]);
      await this.#insertStreams(tx, introduced);
      tx.notify(encodeNote(sessionId, { kind: "input", streamId: chunk.streamId }));
    }, introduced.length > 0 ? undefined : {
      log: "input",
      streamId: chunk.streamId,
      sequence: chunk.sequence,
      itemCount: chunk.itemCount,
      data: chunk.data,
      mimeType: chunk.mimeType,
      epoch,
      note: (sessionId: string) => encodeNote(sessionId, { kind: "input", streamId: chunk.streamId }),
    });
  }

  async readInput(streamId: string, from: bigint, to: bigint): Promise<InputChunk[]> {
    const chunks: InputChunk[] = [];
    for (const row of await this.#read<InputRow>(this.#sql.readInput, [streamId, to, from])) pushChunks(row, from, to, chunks);
    return chunks;
  }

  endInput(streamId: string, terminal: InputTerminal, epoch?: bigint): Promise<void> {
    return this.#write(async (tx) => {
      const ended = await tx.query<{ session_id: string }>(this.#sql.endInput, [encodeInputTerminal(terminal), streamId, epoch ?? null]);
      const sessionId = ended.rows[0]?.session_id;
      // No row: the input had ended already (nothing to do), or the epoch is stale (refused).
      if (sessionId === undefined) await this.#checkEpoch(tx, this.#sql.streamEpoch, streamId, epoch);
      else tx.notify(encodeNote(sessionId, { kind: "input", streamId }));
    });
  }

  appendOutput(event: OutputEvent, introduced: readonly NewStream[], epoch?: bigint): Promise<void> {
    return this.#write(async (tx) => {
      let sessionId: string | undefined;
      if (event.event === "item") {
        const moved = await tx.query<{ session_id: string }>(this.#sql.advanceOutput, [event.itemCount, event.streamId, event.sequence, epoch ?? null]);
        sessionId = moved.rows[0]?.session_id;
        if (sessionId === undefined) throw await this.#refusal(tx, event.streamId, epoch, "output event does not continue the stream");
        await this.#insertItem(tx, event);
      } else {
        const ended = await tx.query<{ session_id: string }>(this.#sql.endOutput, [event.streamId, event.sequence, epoch ?? null]);
        sessionId = ended.rows[0]?.session_id;
        if (sessionId === undefined) throw await this.#refusal(tx, event.streamId, epoch, "output terminal does not continue the stream");
        await tx.query(this.#sql.insertOutput, [event.streamId, event.sequence, "terminal", 0, null, null, event.outcome]);
      }
      await this.#insertStreams(tx, introduced);
      tx.notify(encodeNote(sessionId, { kind: "output", streamId: event.streamId }));
    }, event.event !== "item" || introduced.length > 0 ? undefined : {
      log: "output",
      streamId: event.streamId,
      sequence: event.sequence,
      itemCount: event.itemCount,
      data: event.data,
      mimeType: event.mimeType,
      epoch,
      note: (sessionId: string) => encodeNote(sessionId, { kind: "output", streamId: event.streamId }),
    });
  }

  /**
   * After a fenced statement changed nothing: an `OwnershipLostError` if the row (`query` reads
   * its `owner_epoch` by `id`) is at another epoch than `epoch`. Only on that path, so a write that
   * goes through pays nothing for it.
   */
  async #checkEpoch(tx: WriteContext, query: string, id: string, epoch: bigint | undefined): Promise<void> {
    if (epoch === undefined) return;
    const row = (await tx.query<{ owner_epoch: string; session_id: string }>(query, [id])).rows[0];
    if (row !== undefined && BigInt(row.owner_epoch) !== epoch) throw new OwnershipLostError(row.session_id, epoch, BigInt(row.owner_epoch));
  }

  /** The error of an append that did not move its stream: refused for its epoch, or `message`. */
  async #refusal(tx: WriteContext, streamId: string, epoch: bigint | undefined, message: string): Promise<Error> {
    await this.#checkEpoch(tx, this.#sql.streamEpoch, streamId, epoch);
    return new Error(message);
  }

  async #insertItem(tx: WriteContext, event: Event): Promise<void> {
    await tx.query(this.#sql.insertOutput, [event.streamId, event.sequence, "item", event.itemCount, event.data, event.mimeType ?? null, null]);
  }

  async readOutput(streamId: string, from: bigint, limit: number, maxBytes = Number.POSITIVE_INFINITY): Promise<OutputEvent[]> {
    if (!Number.isSafeInteger(limit) || limit < 0) throw new RangeError(`readOutput limit must be a non-negative integer, got ${limit}`);
    if (Number.isNaN(maxBytes) || maxBytes < 0) throw new RangeError(`readOutput maxBytes must be a non-negative number, got ${maxBytes}`);
    if (limit === 0) return [];
    // The byte bound is applied in the database first (rows past it are never sent nor read from
    // TOAST), counting nothing of a row that starts before `from`: that row may be packed and hold
    // items on both sides, so the database keeps at least every row the exact bound below keeps.
    const bound = maxBytes === Number.POSITIVE_INFINITY ? null : Math.min(Math.ceil(maxBytes), Number.MAX_SAFE_INTEGER);
    const events: OutputEvent[] = [];
    let bytes = 0;
    for (const row of await this.#read<OutputRow>(this.#sql.readOutput, [streamId, from, limit, bound])) {
      for (const event of eventsFrom(row, from)) {
        if (events.length >= limit || bytes >= maxBytes) return events;
        events.push(event);
        if (event.event === "item") bytes += event.data.length;
      }
    }
    return events;
  }

  setResult(sessionId: string, result: string, introduced: readonly NewStream[], epoch?: bigint): Promise<void> {
    return this.#write(async (tx) => {
      const set = await tx.query(this.#sql.setResult, [result, sessionId, epoch ?? null]);
      if (set.rowCount !== 1) {
        await this.#checkEpoch(tx, this.#sql.sessionEpoch, sessionId, epoch);
        throw new Error("the invocation result was already recorded");
      }
      await this.#insertStreams(tx, introduced);
      tx.notify(encodeNote(sessionId, { kind: "result" }));
    });
  }

  finish(sessionId: string, outcome: string, at: number, epoch?: bigint): Promise<void> {
    return this.#write(async (tx) => {
      const finished = await tx.query(this.#sql.finish, [outcome, at, sessionId, epoch ?? null]);
      // No row: finished already (nothing to do), or the epoch is stale (refused).
      if (finished.rowCount === 1) tx.notify(encodeNote(sessionId, { kind: "finished" }));
      else await this.#checkEpoch(tx, this.#sql.sessionEpoch, sessionId, epoch);
    });
  }

  appendJournal(entry: JournalEntry, epoch?: bigint): Promise<void> {
    return this.#write(async (tx) => {
      const added = await tx.query(this.#sql.appendJournal, [entry.sessionId, entry.position, entry.name, entry.outcome, epoch ?? null]);
      if (added.rowCount === 1) return;
      // No row: the epoch is stale (refused), the position is taken, or the session is not running.
      await this.#checkEpoch(tx, this.#sql.sessionEpoch, entry.sessionId, epoch);
      const taken = (await tx.query<{ name: string; outcome: string }>(this.#sql.journalEntry, [entry.sessionId, entry.position])).rows[0];
      // The same entry: this write was made before and committed (a write retried after its
      // COMMIT's answer was lost), so it is done.
      if (taken !== undefined && taken.name === entry.name && taken.outcome === entry.outcome) return;
      throw new Error(taken === undefined ? "the session is not running" : "the journal position is already taken");
    });
  }

  async readJournal(sessionId: string): Promise<JournalEntry[]> {
    const rows = await this.#read<{ position: number; name: string; outcome: string }>(this.#sql.readJournal, [sessionId]);
    return rows.map((row) => ({ sessionId, position: row.position, name: row.name, outcome: row.outcome }));
  }

  recordRun(sessionId: string, epoch?: bigint): Promise<number> {
    return this.#write(async (tx) => {
      const counted = await tx.query<{ runs: number }>(this.#sql.recordRun, [sessionId, epoch ?? null]);
      const runs = counted.rows[0]?.runs;
      if (runs === undefined) {
        // No row: the session is not running, or the epoch is stale (refused).
        await this.#checkEpoch(tx, this.#sql.sessionEpoch, sessionId, epoch);
        throw new Error("the session is not running");
      }
      return runs;
    });
  }

  async listRunningSessions(): Promise<SessionRecord[]> {
    return (await this.#read<SessionRow>(this.#sql.runningSessions, [])).map(toSession);
  }

  /**
   * Summed from the logs' payload sizes (`octet_length` of a value stored out of line reads its
   * size, not its bytes), per stream before the joins; with `finishedBefore`, from the streams of
   * the sessions finished before it only.
   */
  async storedBytesByPrincipal(finishedBefore?: number): Promise<StoredBytes[]> {
    const rows = await this.#read<{ account: string; principal: string; bytes: string }>(
      finishedBefore === undefined ? this.#sql.storedBytes : this.#sql.purgeableBytes,
      finishedBefore === undefined ? [] : [before(finishedBefore)],
    );
    return rows.map((row) => ({ account: row.account, principal: row.principal, bytes: Number(row.bytes) }));
  }

  purgeFinished(finishedBefore: number, now: number, tombstonesBefore: number): Promise<number> {
    if ([finishedBefore, now, tombstonesBefore].some(Number.isNaN) || !Number.isFinite(now)) {
      return Promise.reject(new RangeError(`purgeFinished needs times in milliseconds, got ${finishedBefore}, ${now}, ${tombstonesBefore}`));
    }
    return this.#write(async (tx) => {
      // Old tombstones go first, so the ones this purge leaves are kept whatever `now` is.
      await tx.query(this.#sql.dropTombstones, [before(tombstonesBefore)]);
      const purged = await tx.query<{ purged: string }>(this.#sql.purge, [before(finishedBefore), Math.round(now)]);
      return Number(purged.rows[0]?.purged ?? 0);
    });
  }

  // --- cluster mode ---

  async ownerOf(sessionId: string): Promise<string | undefined> {
    const [row] = await this.#read<{ owner_node: string | null }>(this.#sql.ownerOf, [sessionId]);
    return row?.owner_node ?? undefined;
  }

  async ownership(sessionId: string): Promise<Ownership | undefined> {
    const [row] = await this.#read<{ owner_node: string | null; owner_epoch: string }>(this.#sql.ownership, [sessionId]);
    return row?.owner_node == null ? undefined : { nodeId: row.owner_node, epoch: BigInt(row.owner_epoch) };
  }

  async heartbeat(ttlMs: number): Promise<void> {
    if (!Number.isFinite(ttlMs) || ttlMs <= 0) throw new RangeError(`heartbeat ttlMs must be a positive number, got ${ttlMs}`);
    await this.#readOnce(this.#sql.heartbeat, [this.nodeId, ttlMs, LOG_FORMAT]);
    this.#checkOpen();
    await this.#checkPacking(this.#pool);
  }

  /**
   * Packs rows only while no live node has an earlier log format: a node
   * of version 1 would read a packed row as one chunk. A node that cannot
   * read them can no longer start once the schema is at version 2 (it
   * refuses a newer schema), so only those already running count, and
   * packing starts once the last of them has left or lost its lease.
   */
  async #checkPacking(db: pg.Pool | pg.PoolClient): Promise<void> {
    try {
      const { rows } = await db.query<{ packing: boolean }>(this.#sql.everyNodePacks, [LOG_FORMAT]);
      this.#packing = rows[0]?.packing === true;
    } catch (error) {
      throw asStoreError(error);
    }
  }

  /**
   * Claims every running session whose owner has no live lease. Claims
   * nothing while this node's own lease is not live (heartbeat first): a
   * node without a lease is itself taken for gone, and requiring a live
   * lease is what keeps a second claimer from taking a session back from
   * the first.
   */
  async claimOrphans(): Promise<string[]> {
    this.#checkOpen();
    const checkedOut = await this.#checkOut().catch((error: unknown) => {
      throw asStoreError(error);
    });
    const client = checkedOut.connection;
    let failure: unknown;
    try {
      // One transaction: the sessions move to their next epoch, and their streams with them
      // (fencing: an owner's append checks the epoch on the stream row it updates). The streams
      // are read by a statement of their own, after the sessions are locked: a stream another
      // transaction created meanwhile has committed by then (it locks its session first).
      await client.query("BEGIN");
      const claimed = await client.query<{ session_id: string; owner_epoch: string }>(this.#sql.claimOrphans, [this.nodeId]);
      const ids = claimed.rows.map((row) => row.session_id);
      if (ids.length > 0) await client.query(this.#sql.claimStreams, [ids, claimed.rows.map((row) => row.owner_epoch)]);
      await client.query("COMMIT");
      return ids;
    } catch (error) {
      failure = error;
      await client.query("ROLLBACK").catch(() => undefined);
      throw asStoreError(error);
    } finally {
      checkedOut.release(failure instanceof Error ? failure : undefined);
    }
  }

  /**
   * A pooled connection for statements of its own (a transaction, the migrations), listened to
   * while it is checked out: the pool listens only to idle connections, and a connection that
   * PostgreSQL terminates between two statements (a restart, `pg_terminate_backend`) emits an
   * `error` event that, unheard, would end the process. The statement running, or the next one,
   * fails as well and is handled where it is made.
   */
  async #checkOut(): Promise<{ readonly connection: pg.PoolClient; release(error?: Error): void }> {
    const connection = await this.#pool.connect();
    const onError = (error: Error) => this.#onError(error);
    connection.on("error", onError);
    return {
      connection,
      release: (error) => {
        connection.off("error", onError);
        connection.release(error);
      },
    };
  }

  async leave(): Promise<void> {
    await this.#readOnce(this.#sql.leave, [this.nodeId]);
  }

  async setCatalogue(fingerprint: string): Promise<void> {
    await this.#readOnce(this.#sql.setCatalogue, [this.nodeId, fingerprint]);
  }

  async liveCatalogues(): Promise<readonly NodeCatalogue[]> {
    const rows = await this.#readOnce<{ node_id: string; catalogue: string | null }>(this.#sql.liveCatalogues, [this.nodeId]);
    return rows.map((row) => ({ nodeId: row.node_id, fingerprint: row.catalogue ?? undefined }));
  }

  subscribe(sessionId: string, listener: SessionChangeListener): () => void {
    return this.#feed.subscribe(sessionId, listener);
  }

  /**
   * Sends a change that is not a write. Held through an outage like a read
   * (`outageGraceMs`): a delivery progress that failed to go out would keep
   * the owner's output window shut. One whose answer was lost may go out
   * twice: every change is a hint to re-read, or (`delivered`) credit that
   * only loosens the window.
   */
  async publish(sessionId: string, change: SessionChange): Promise<void> {
    await this.#read(this.#sql.notify, [this.channel, encodeNote(sessionId, change)]);
  }

  /**
   * After the listener reconnects: notifications sent meanwhile are lost, so
   * every subscriber of `sessionIds` gets, from the committed state, each
   * change a write could have sent: `resync` (other changes may be lost), `attached` with the current generation,
   * `input`/`output` for every stream, then `result` and `finished` if
   * recorded. Changes carry no payload; subscribers re-read the store.
   */
  async #replay(sessionIds: readonly string[]): Promise<void> {
    for (const sessionId of sessionIds) {
      let session: SessionRecord | undefined;
      let streams: StreamRecord[];
      try {
        // Asked together: one round trip (session-reads.ts); a session that is gone has no streams.
        [session, streams] = await Promise.all([this.getSession(sessionId), this.listStreams(sessionId)]);
      } catch (error) {
        this.#onError(error instanceof Error ? error : new Error(String(error)));
        continue;
      }
      if (session === undefined) continue;
      // Changes that are not writes (delivery progress above all) may have been lost too.
      this.#feed.dispatch(sessionId, { kind: "resync" });
      this.#feed.dispatch(sessionId, { kind: "attached", generation: session.generation.toString() });
      for (const stream of streams) this.#feed.dispatch(sessionId, { kind: stream.direction, streamId: stream.streamId });
      if (session.result !== undefined) this.#feed.dispatch(sessionId, { kind: "result" });
      if (session.state === "finished") this.#feed.dispatch(sessionId, { kind: "finished" });
    }
  }
}

/**
 * A "before" bound in whole milliseconds for a bigint column: `x < t` is
 * `x < ceil(t)` for integers; an infinite retention (-Infinity) purges nothing.
 */
function before(time: number): number {
  if (time === Number.NEGATIVE_INFINITY) return Number.MIN_SAFE_INTEGER;
  if (time === Number.POSITIVE_INFINITY) return Number.MAX_SAFE_INTEGER;
  return Math.min(Math.max(Math.ceil(time), Number.MIN_SAFE_INTEGER), Number.MAX_SAFE_INTEGER);
}

/** Every statement, schema-qualified. */
function statements(s: string) {
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
    storedBytes: `SELECT s.account, s.principal, SUM(logs.bytes)::text AS bytes FROM (
        SELECT stream_id, SUM(octet_length(data)::bigint) AS bytes FROM ${s}.input_chunks GROUP BY stream_id
        UNION ALL
        SELECT stream_id, SUM(COALESCE(octet_length(data), 0)::bigint) FROM ${s}.output_events WHERE event = 'item' GROUP BY stream_id
      ) logs JOIN ${s}.streams t ON t.stream_id = logs.stream_id JOIN ${s}.sessions s ON s.session_id = t.session_id
      GROUP BY s.account, s.principal HAVING SUM(logs.bytes) > 0`,
    purgeableBytes: `SELECT account, principal, bytes::text AS bytes FROM (
        SELECT s.account, s.principal, SUM(
          (SELECT COALESCE(SUM(octet_length(c.data)::bigint), 0) FROM ${s}.input_chunks c WHERE c.stream_id = t.stream_id)
          + (SELECT COALESCE(SUM(COALESCE(octet_length(o.data), 0)::bigint), 0) FROM ${s}.output_events o WHERE o.stream_id = t.stream_id AND o.event = 'item')
        ) AS bytes
        FROM ${s}.sessions s JOIN ${s}.streams t ON t.session_id = s.session_id
        WHERE s.state = 'finished' AND s.finished_at < $1
        GROUP BY s.account, s.principal
      ) purgeable WHERE bytes > 0`,
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
    endInput: `UPDATE ${s}.streams SET input_terminal = $1 WHERE stream_id = $2 AND input_terminal IS NULL
      AND ($3::bigint IS NULL OR owner_epoch = $3) RETURNING session_id`,
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
    // savepoint stays usable): the caller then reads what holds it (journalEntry).
    appendJournal: `INSERT INTO ${s}.journal (session_id, position, name, outcome)
      SELECT session_id, $2, $3, $4 FROM ${s}.sessions WHERE session_id = $1 AND state = 'running'
        AND ($5::bigint IS NULL OR owner_epoch = $5)
      ON CONFLICT (session_id, position) DO NOTHING`,
    journalEntry: `SELECT name, outcome FROM ${s}.journal WHERE session_id = $1 AND position = $2`,
    readJournal: `SELECT position, name, outcome FROM ${s}.journal WHERE session_id = $1 ORDER BY position`,
    recordRun: `INSERT INTO ${s}.session_runs (session_id, runs)
      SELECT session_id, 2 FROM ${s}.sessions WHERE session_id = $1 AND state = 'running'
        AND ($2::bigint IS NULL OR owner_epoch = $2)
      ON CONFLICT (session_id) DO UPDATE SET runs = ${s}.session_runs.runs + 1 RETURNING runs`,
    setResult: `UPDATE ${s}.sessions SET result = $1 WHERE session_id = $2 AND result IS NULL AND ($3::bigint IS NULL OR owner_epoch = $3)`,
    finish: `UPDATE ${s}.sessions SET state = 'finished', outcome = $1, finished_at = $2 WHERE session_id = $3 AND state = 'running'
      AND ($4::bigint IS NULL OR owner_epoch = $4)`,
    // One statement: the sessions go, their attempt ids and idempotency scopes stay as tombstones
    // (every part sees the rows as they were before the DELETE and its cascades).
    purge: `WITH purged AS (
        DELETE FROM ${s}.sessions WHERE state = 'finished' AND finished_at < $1
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
      SELECT count(*) AS purged FROM purged`,
    dropTombstones: `DELETE FROM ${s}.tombstones WHERE stamped_at < $1`,
    ownerOf: `SELECT owner_node FROM ${s}.sessions WHERE session_id = $1`,
    ownership: `SELECT owner_node, owner_epoch FROM ${s}.sessions WHERE session_id = $1`,
    heartbeat: `INSERT INTO ${s}.nodes (node_id, lease_expires_at, log_format) VALUES ($1, clock_timestamp() + $2 * interval '1 millisecond', $3)
      ON CONFLICT (node_id) DO UPDATE SET lease_expires_at = EXCLUDED.lease_expires_at, log_format = EXCLUDED.log_format`,
    // Under READ COMMITTED a concurrent claimer waiting on a row re-checks it after the first
    // commits: the new owner's lease is live, so the row no longer qualifies.
    claimOrphans: `UPDATE ${s}.sessions AS x SET owner_node = $1, owner_epoch = x.owner_epoch + 1
      WHERE x.state = 'running' AND x.owner_node IS DISTINCT FROM $1
        AND EXISTS (SELECT 1 FROM ${s}.nodes me WHERE me.node_id = $1 AND me.lease_expires_at > clock_timestamp())
        AND NOT EXISTS (SELECT 1 FROM ${s}.nodes n WHERE n.node_id = x.owner_node AND n.lease_expires_at > clock_timestamp())
      RETURNING x.session_id, x.owner_epoch`,
    claimStreams: `UPDATE ${s}.streams AS t SET owner_epoch = c.epoch
      FROM unnest($1::text[], $2::bigint[]) AS c(session_id, epoch) WHERE t.session_id = c.session_id`,
    leave: `DELETE FROM ${s}.nodes WHERE node_id = $1`,
    setCatalogue: `UPDATE ${s}.nodes SET catalogue = $2 WHERE node_id = $1`,
    liveCatalogues: `SELECT node_id, catalogue FROM ${s}.nodes WHERE node_id <> $1 AND lease_expires_at > clock_timestamp() ORDER BY node_id`,
    // A node of an earlier version leaves log_format NULL.
    everyNodePacks: `SELECT NOT EXISTS (SELECT 1 FROM ${s}.nodes WHERE lease_expires_at > clock_timestamp()
      AND (log_format IS NULL OR log_format < $1)) AS packing`,
    notify: `SELECT pg_notify($1, $2)`,
    // After a group statement's answer was lost: where its streams are now (write-queue.ts).
    streamCounts: `SELECT stream_id, count FROM ${s}.streams WHERE stream_id = ANY($1::text[])`,
  };
}
