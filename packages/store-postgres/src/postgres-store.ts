/**
 * `SessionStore` and `ClusterSessionStore` on PostgreSQL (node-postgres): the
 * entry point, its lifecycle (open, close, ping) and the wiring of its parts.
 *
 * Writes go through one writer connection with group commit
 * (`write-queue.ts`): durable when their promise resolves (keep
 * `synchronous_commit` on), committed in call order, each in its own
 * savepoint. Reads use a pool (`connections.ts`). Committed changes are
 * published with `pg_notify` in the writing transaction and received by one
 * LISTEN connection per store (`change-feed.ts`).
 *
 * The parts: the SQL (`statements.ts`), session rows (`session-rows.ts`), the
 * logs (`log-appends.ts`), the journal (`journal.ts`), retention
 * (`retention.ts`), the changes replayed after the listener reconnects
 * (`replay-changes.ts`) and this node's cluster membership: leases, claims,
 * catalogues (`membership.ts`).
 *
 * Why one file: it is the SessionStore's method list, each method one delegation to the part that
 * owns it; the parts above hold the logic.
 */
import { randomUUID } from "node:crypto";
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
  HeartbeatReport,
  NodeCatalogue,
  Ownership,
  RecordedRun,
  SessionRecord,
  StoredBytes,
  StoreOutageListener,
  StreamRecord,
} from "@golem-stream/server/store";
import { checkOutageGraceMs, OutageGrace, SYSTEM_OUTAGE_CLOCK } from "@golem-stream/server/store";
import { appendGroupStatement } from "./append-group.js";
import { ChangeFeed, encodeNote } from "./change-feed.js";
import { replayChanges } from "./replay-changes.js";
import { connectionSettings } from "./connection-settings.js";
import { connectionTarget } from "./connection-target.js";
import { Connections } from "./connections.js";
import * as journal from "./journal.js";
import * as logs from "./log-appends.js";
import { serverHasLz4, writerSetup, type LogCompression } from "./log-storage.js";
import { Membership } from "./membership.js";
import { connectRefused } from "./privileges.js";
import * as retention from "./retention.js";
import { toSession, toStream, type SessionRow, type StreamRow } from "./rows.js";
import { checkSchemaName, migrate } from "./schema.js";
import { SessionReads } from "./session-reads.js";
import * as sessions from "./session-rows.js";
import { statements } from "./statements.js";
import type { StoreContext, StoreFeatures } from "./store-context.js";
import { asStoreError } from "./store-error.js";
import { DEFAULT_MAX_PACKED_ROW_BYTES, DEFAULT_SCHEMA, type PostgresSessionStoreOptions } from "./store-options.js";
import { WriteQueue, type LogAppend, type WriteContext } from "./write-queue.js";
import { CommitMarker, sweepMarkers } from "./lost-commit.js";

export { DEFAULT_SCHEMA, type PostgresSessionStoreOptions } from "./store-options.js";

export class PostgresSessionStore implements ClusterSessionStore {
  readonly nodeId: string;
  /** The schema the tables live in. */
  readonly schema: string;
  /** The NOTIFY channel of this schema's change feed: `<schema>_changes`. */
  readonly channel: string;
  readonly #connections: Connections;
  readonly #writes: WriteQueue;
  /** The writer's outage grace: commit markers unused for longer than a day plus this are swept at open. */
  readonly #outageGraceMs: number;
  readonly #feed: ChangeFeed;
  readonly #sessionReads: SessionReads;
  readonly #membership: Membership;
  /** What the store's parts share (`store-context.ts`). */
  readonly #context: StoreContext;
  /** Set once open (`migrate`): what the database has beyond its schema version. */
  readonly #features: StoreFeatures = { runProgress: false };
  readonly #onError: (error: Error) => void;
  readonly #logCompression: LogCompression;
  #state: "new" | "opening" | "open" | "closed" = "new";
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
    if (typeof nodeId !== "string" || nodeId.length === 0 || nodeId.length > 200)
      throw new TypeError("nodeId must be a non-empty string of at most 200 characters");
    this.nodeId = nodeId;
    this.#onError = options.onError ?? (() => {});
    const maxPackedRowBytes = options.maxPackedRowBytes ?? DEFAULT_MAX_PACKED_ROW_BYTES;
    if (!Number.isSafeInteger(maxPackedRowBytes) || maxPackedRowBytes < 0)
      throw new TypeError("maxPackedRowBytes must be a non-negative integer");
    const logCompression = options.logCompression ?? "lz4";
    if (logCompression !== "lz4" && logCompression !== "server")
      throw new TypeError(`logCompression must be "lz4" or "server", got ${JSON.stringify(logCompression)}`);
    this.#logCompression = logCompression;
    const outageGraceMs = checkOutageGraceMs(options.outageGraceMs);
    const outageClock = options.outageClock ?? SYSTEM_OUTAGE_CLOCK;
    const target = connectionTarget(options.connectionString, options.pool);
    this.#connections = new Connections({
      config: { ...target.config, ...connectionSettings(options, options.pool) },
      preferTls: target.preferTls,
      onError: (error) => this.#onError(error),
      outagesObserved: () => this.#outageListener !== undefined,
      outageGraceMs,
      outageClock,
      checkOpen: () => this.#checkOpen(),
      isOpen: () => this.#state === "open",
    });
    const sql = statements(this.schema);
    this.#membership = new Membership(nodeId, sql, this.#connections, () => this.#checkOpen(), `${this.schema}.writer_groups`);
    this.#writes = new WriteQueue(
      () => this.#connections.writerClient(),
      this.channel,
      {
        input: sql.inputRun,
        output: sql.outputRun,
        group: appendGroupStatement(this.schema),
        packedRowBytes: () => (this.#membership.packing ? maxPackedRowBytes : 0),
        counts: sql.streamCounts,
      },
      new OutageGrace(outageGraceMs, outageClock, () => this.#outageListener),
      new CommitMarker(`${this.schema}.writer_groups`),
    );
    this.#outageGraceMs = outageGraceMs;
    this.#sessionReads = new SessionReads((text, values) => this.#connections.pool.query(text, values), sql);
    this.#feed = new ChangeFeed({
      connect: () => this.#connections.client(),
      channel: this.channel,
      onReconnect: (sessionIds) =>
        replayChanges(sessionIds, this, (sessionId, change) => this.#feed.dispatch(sessionId, change), this.#onError),
      onError: (error) => this.#onError(error),
      // A listener reconnecting through an outage: a retry where outages are observed, not an error.
      onUnavailable: (error, delayMs) =>
        this.#outageListener === undefined ? this.#onError(error) : this.#outageListener({ kind: "retry", error: error.message, delayMs }),
    });
    this.#context = {
      sql,
      nodeId,
      write: (work, append) => this.#write(work, append),
      read: (text, values) => this.#connections.read(text, values),
      features: this.#features,
    };
  }

  /** Runs the migrations and starts the change feed's listener. Idempotent. */
  open(): Promise<void> {
    if (this.#state === "closed") return Promise.reject(new Error("the PostgresSessionStore is closed"));
    this.#opening ??= (async () => {
      this.#state = "opening";
      try {
        const client = await this.#connections.checkOut().catch((error: unknown) => {
          throw connectRefused(error, this.#connections.grantee());
        });
        let failure: unknown;
        try {
          Object.assign(this.#features, await migrate(client.connection, this.schema));
          await sweepMarkers(client.connection, `${this.schema}.writer_groups`, this.#outageGraceMs);
          await this.#membership.sweepGoneNodes(client.connection);
          await this.#membership.checkPacking(client.connection);
          this.#connections.writerSetup = writerSetup(this.#logCompression, await serverHasLz4(client.connection));
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
    await this.#connections.pool.query("SELECT 1").catch((error: unknown) => {
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
    await this.#connections.pool.end();
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

  #checkOpen(): void {
    if (this.#state !== "open") {
      throw new Error(
        this.#state === "closed"
          ? "the PostgresSessionStore is closed"
          : "PostgresSessionStore: call open() (or use PostgresSessionStore.connect) first",
      );
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

  createSession(session: SessionRecord, streams: readonly NewStream[], attempt: AttemptRecord): Promise<CreateSessionResult> {
    return sessions.createSession(this.#context, session, streams, attempt);
  }

  getAttempt(attemptId: string): Promise<AttemptRecord | undefined> {
    return sessions.getAttempt(this.#context, attemptId);
  }

  // The two reads of a cluster node's sync: asked in the same turn, one round trip (session-reads.ts).
  async getSession(sessionId: string): Promise<SessionRecord | undefined> {
    const [row] = await this.#connections.reading(() => this.#sessionReads.session<SessionRow>(sessionId));
    return row === undefined ? undefined : toSession(row);
  }

  async listStreams(sessionId: string): Promise<StreamRecord[]> {
    return (await this.#connections.reading(() => this.#sessionReads.streams<StreamRow>(sessionId))).map(toStream);
  }

  getStream(streamId: string): Promise<StreamRecord | undefined> {
    return sessions.getStream(this.#context, streamId);
  }

  attach(attempt: AttemptRecord, sessionToken: string, expectedGeneration: bigint | undefined): Promise<AttachResult> {
    return sessions.attach(this.#context, attempt, sessionToken, expectedGeneration);
  }

  acceptInput(chunk: InputChunk, introduced: readonly NewStream[], epoch?: bigint): Promise<void> {
    return logs.acceptInput(this.#context, chunk, introduced, epoch);
  }

  readInput(streamId: string, from: bigint, to: bigint): Promise<InputChunk[]> {
    return logs.readInput(this.#context, streamId, from, to);
  }

  endInput(streamId: string, terminal: InputTerminal, epoch?: bigint, count?: bigint): Promise<void> {
    return logs.endInput(this.#context, streamId, terminal, epoch, count);
  }

  appendOutput(event: OutputEvent, introduced: readonly NewStream[], epoch?: bigint): Promise<void> {
    return logs.appendOutput(this.#context, event, introduced, epoch);
  }

  readOutput(streamId: string, from: bigint, limit: number, maxBytes = Number.POSITIVE_INFINITY): Promise<OutputEvent[]> {
    return logs.readOutput(this.#context, streamId, from, limit, maxBytes);
  }

  setResult(sessionId: string, result: string, introduced: readonly NewStream[], epoch?: bigint): Promise<void> {
    return sessions.setResult(this.#context, sessionId, result, introduced, epoch);
  }

  finish(sessionId: string, outcome: string, at: number, epoch?: bigint): Promise<void> {
    return sessions.finish(this.#context, sessionId, outcome, at, epoch);
  }

  finishWithResult(sessionId: string, result: string, outcome: string, at: number, epoch?: bigint): Promise<void> {
    return sessions.finishWithResult(this.#context, sessionId, result, outcome, at, epoch);
  }

  appendJournal(entry: JournalEntry, epoch?: bigint): Promise<void> {
    return journal.appendJournal(this.#context, entry, epoch);
  }

  readJournal(sessionId: string): Promise<JournalEntry[]> {
    return journal.readJournal(this.#context, sessionId);
  }

  recordRun(sessionId: string, epoch?: bigint, progress?: bigint): Promise<RecordedRun> {
    return journal.recordRun(this.#context, sessionId, epoch, progress);
  }

  recordHandOver(sessionId: string, epoch?: bigint): Promise<void> {
    return journal.recordHandOver(this.#context, sessionId, epoch);
  }

  async listRunningSessions(): Promise<SessionRecord[]> {
    return (await this.#connections.read<SessionRow>(this.#context.sql.runningSessions, [])).map(toSession);
  }

  /**
   * Summed from the logs' payload sizes (`octet_length` of a value stored out of line reads its
   * size, not its bytes), per stream before the joins; with `finishedBefore`, from the streams of
   * the sessions finished before it only.
   */
  storedBytesByPrincipal(finishedBefore?: number): Promise<StoredBytes[]> {
    return retention.storedBytesByPrincipal(this.#context, finishedBefore);
  }

  purgeFinished(finishedBefore: number, now: number, tombstonesBefore: number): Promise<number> {
    return retention.purgeFinished(this.#context, finishedBefore, now, tombstonesBefore);
  }

  // --- cluster mode (membership.ts) ---

  ownerOf(sessionId: string): Promise<string | undefined> {
    return this.#membership.ownerOf(sessionId);
  }

  ownership(sessionId: string): Promise<Ownership | undefined> {
    return this.#membership.ownership(sessionId);
  }

  heartbeat(ttlMs: number): Promise<HeartbeatReport> {
    return this.#membership.heartbeat(ttlMs);
  }

  /**
   * Claims every running session whose owner has no live lease. Claims
   * nothing while this node's own lease is not live (heartbeat first): a
   * node without a lease is itself taken for gone, and requiring a live
   * lease is what keeps a second claimer from taking a session back from
   * the first.
   */
  claimOrphans(): Promise<string[]> {
    return this.#membership.claimOrphans();
  }

  /**
   * Moves a running session this node owns to its next ownership epoch (a restarted node's
   * recovery), waiting for a write of a former process of this node id that holds its row.
   */
  reclaim(sessionId: string): Promise<bigint | undefined> {
    return this.#membership.reclaim(sessionId);
  }

  leave(): Promise<void> {
    return this.#membership.leave();
  }

  setCatalogue(fingerprint: string): Promise<void> {
    return this.#membership.setCatalogue(fingerprint);
  }

  liveCatalogues(): Promise<readonly NodeCatalogue[]> {
    return this.#membership.liveCatalogues();
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
    await this.#connections.read(this.#context.sql.notify, [this.channel, encodeNote(sessionId, change)]);
  }
}
