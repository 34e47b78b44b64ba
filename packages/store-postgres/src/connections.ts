/**
 * The connections of one `PostgresSessionStore`: the read pool, a new client
 * for the writer and the change feed's listener, a pooled connection checked
 * out for statements of its own, and reads that wait out an outage.
 *
 * Every connection is listened to for `error` all its life (an unheard one
 * ends the process); such errors have no caller and go to `onError`, or fail
 * the statement made next on the connection. One that says PostgreSQL cannot
 * be reached (a restart: every connection gets one) goes nowhere while the
 * store's outages are observed: the work that next needs the database waits
 * the outage out and reports it there, once, not as an error per connection.
 */
import pg from "pg";
import { OutageGrace, type OutageClock } from "@golem-stream/server/store";
import type { Grantee } from "./privileges.js";
import { asStoreError, isUnavailable } from "./store-error.js";

/** A pooled connection checked out by `Connections.checkOut`; `release` with the error that spoilt it, if any. */
export interface CheckedOut {
  readonly connection: pg.PoolClient;
  release(error?: Error): void;
}

export interface ConnectionsOptions {
  /** Every connection's settings (the pool's, the writer's, the listener's). */
  readonly config: pg.ClientConfig;
  /** `sslmode=prefer`: once the server says it does not offer TLS, connect without it. */
  readonly preferTls?: boolean;
  readonly onError: (error: Error) => void;
  /** Whether someone observes the store's outages (`observeOutages`). */
  readonly outagesObserved: () => boolean;
  readonly outageGraceMs: number;
  readonly outageClock: OutageClock;
  /** Throws unless the store is open (reads are refused before `open()` and after `close()`). */
  readonly checkOpen: () => void;
  /** Whether the store is still open: a read is retried through an outage only then. */
  readonly isOpen: () => boolean;
}

export class Connections {
  readonly pool: pg.Pool;
  readonly #options: ConnectionsOptions;
  /** Run by the writer connection once connected (lz4 compression), decided at open. */
  writerSetup: string | undefined;
  /** `sslmode=prefer`, and the server did not offer TLS: every later connection goes without. */
  #plain = false;

  constructor(options: ConnectionsOptions) {
    this.#options = options;
    const plain = () => this.#plain;
    // The pool makes each connection with the settings as they are then, TLS or not.
    class PoolClient extends pg.Client {
      constructor(config?: pg.ClientConfig) {
        // The pool keeps the password out of its settings' enumerable keys: a copy names it.
        super(plain() ? { ...config, password: config?.password, ssl: false } : config);
      }
    }
    this.pool = new pg.Pool({ ...options.config, Client: PoolClient });
    // An idle pooled connection that breaks is replaced by the pool; the error has no caller.
    this.pool.on("error", (error) => this.#noCaller(error));
    // Every pooled connection is heard all its life, not only while idle (the pool's listener) or
    // checked out (`checkOut`'s): the pool hands a connection to a waiting `checkOut` by resolving
    // its promise, and until that caller's listener is on, a microtask later, the connection has
    // none. A termination read in the same chunk as the last statement's answer (PostgreSQL
    // stopping: `57P01`) was emitted then, unheard, and ended the process. Reported by the
    // other listeners, or by the statement that fails next; this one only keeps it heard.
    this.pool.on("connect", (client) => client.on("error", heardElsewhere));
  }

  /** A new connection of its own (the change feed's listener, the writer). */
  async client(): Promise<pg.Client> {
    for (;;) {
      const client = new pg.Client(this.#plain ? { ...this.#options.config, ssl: false } : { ...this.#options.config });
      client.on("error", (error) => this.#noCaller(error));
      try {
        await client.connect();
        return client;
      } catch (error) {
        if (!this.#withoutTls(error)) throw asStoreError(error);
      }
    }
  }

  /** The role and database every connection is made as and to, `pg`'s defaults filled in (`PGUSER`, `PGDATABASE`, …). */
  grantee(): Grantee {
    const { user, database } = new pg.Client(this.#options.config);
    return { role: user ?? "", database: database ?? user ?? "" };
  }

  /** A connection's error that no caller will see: to `onError`, unless it is an outage someone observes. */
  #noCaller(error: Error): void {
    if (!(isUnavailable(error) && this.#options.outagesObserved())) this.#options.onError(error);
  }

  /**
   * Whether to connect again without TLS after `error`: libpq's `prefer` when the server answered
   * that it does not offer TLS. Decided once for the store's connections (its server is one).
   */
  #withoutTls(error: unknown): boolean {
    if (this.#options.preferTls !== true || this.#plain) return false;
    if (!(error instanceof Error) || error.message !== NO_TLS) return false;
    this.#plain = true;
    return true;
  }

  /** The writer's connection: every log row is written through it, so the compression setting goes here. */
  async writerClient(): Promise<pg.Client> {
    const client = await this.client();
    if (this.writerSetup !== undefined) {
      await client.query(this.writerSetup).catch(async (error: unknown) => {
        await client.end().catch(() => undefined);
        throw asStoreError(error);
      });
    }
    return client;
  }

  /**
   * A pooled connection for statements of its own (a transaction, the migrations), listened to
   * while it is checked out: the pool listens only to idle connections, and a connection that
   * PostgreSQL terminates between two statements (a restart, `pg_terminate_backend`) emits an
   * `error` event that, unheard, would end the process. The statement running, or the next one,
   * fails as well and is handled where it is made.
   */
  async checkOut(): Promise<CheckedOut> {
    const connection = await this.pool.connect().catch((error: unknown) => {
      if (this.#withoutTls(error)) return this.pool.connect();
      throw error;
    });
    const onError = (error: Error) => this.#noCaller(error);
    connection.on("error", onError);
    return {
      connection,
      release: (error) => {
        connection.off("error", onError);
        connection.release(error);
      },
    };
  }

  async read<R extends pg.QueryResultRow>(text: string, values: readonly unknown[]): Promise<R[]> {
    return this.reading(async () => (await this.pool.query<R>(text, values as unknown[])).rows);
  }

  /** A statement of the cluster's own bookkeeping (leases, claims, notifications): tried once, never held by an outage. */
  async readOnce<R extends pg.QueryResultRow>(text: string, values: readonly unknown[]): Promise<R[]> {
    return this.reading(async () => (await this.pool.query<R>(text, values as unknown[])).rows, false);
  }

  /**
   * The rows `query` reads, on an open store, its failure as a store error.
   * A PostgreSQL that cannot be reached is waited out (`outageGraceMs`, each
   * read its own grace): a read changes nothing, so trying it again is safe.
   */
  async reading<R>(query: () => Promise<R[]>, retried = true): Promise<R[]> {
    this.#options.checkOpen();
    const grace = retried ? new OutageGrace(this.#options.outageGraceMs, this.#options.outageClock) : undefined;
    for (;;) {
      try {
        return await query();
      } catch (error) {
        if (this.#withoutTls(error)) continue;
        if (grace !== undefined && isUnavailable(error) && this.#options.isOpen() && (await grace.retry(error))) continue;
        throw asStoreError(error);
      }
    }
  }
}

/** `pg`'s error when the server answers a TLS request with no (libpq's `prefer` then goes on without). */
const NO_TLS = "The server does not support SSL connections";

/** A pooled connection's error while no other listener is on: its next statement fails and says it. */
function heardElsewhere(): void {}
