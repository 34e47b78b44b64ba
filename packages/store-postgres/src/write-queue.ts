/**
 * The store's writer: one connection, one transaction at a time, writes
 * committed in the order they were issued (group commit).
 *
 * Writes issued while the previous group is committing (or within one turn
 * of the event loop) share the next transaction, each inside its own
 * SAVEPOINT, so a write that fails (a stale sequence, a broken invariant)
 * rolls back alone and the others commit. A write's change notifications
 * are sent with `pg_notify` just before COMMIT, only for the writes that
 * succeeded, in their order, so PostgreSQL delivers them after the commit
 * and in commit order. Every promise settles only after the COMMIT (or its
 * failure): nothing is reported durable before it is.
 *
 * Nodes of a cluster each have a writer, and their groups may touch the same
 * rows in different orders (node A finishing sessions X then Y while node B
 * attaches Y then X), so PostgreSQL may pick a write as a deadlock victim.
 * The other transaction waits on rows the group's earlier writes hold, so
 * retrying the victim inside the group would deadlock again: the group
 * commits the writes before the victim instead (releasing those rows), and
 * the victim and every write after it go first into the next group, in
 * their order. A write is retried this way a few times before it fails.
 */
import pg from "pg";

/** Thrown by a write to undo its statements and still resolve with `value` (e.g. `attempt-exists`). */
export class Rollback<T> {
  constructor(readonly value: T) {}
}

/** What a write may do inside the group's transaction. */
export interface WriteContext {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: readonly unknown[]): Promise<pg.QueryResult<R>>;
  /** Queues a notification sent (with the write's others) only if the write commits. */
  notify(payload: string): void;
}

interface Pending {
  readonly work: (context: WriteContext) => Promise<unknown>;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: Error) => void;
  /** Times it was a deadlock victim and went on to the next group. */
  retries: number;
}

/** Deadlock victims (40P01) and serialization failures (40001) are retried, this many times at most. */
const MAX_RETRIES = 5;

function isTransient(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "40P01" || code === "40001";
}

/** At most this many writes share one transaction. */
const MAX_GROUP = 512;

export class WriteQueue {
  readonly #connect: () => Promise<pg.Client>;
  readonly #channel: string;
  readonly #queue: Pending[] = [];
  #client: pg.Client | undefined;
  #running: Promise<void> | undefined;
  #scheduled = false;
  #closed = false;

  constructor(connect: () => Promise<pg.Client>, channel: string) {
    this.#connect = connect;
    this.#channel = channel;
  }

  write<T>(work: (context: WriteContext) => Promise<T>): Promise<T> {
    if (this.#closed) return Promise.reject(new Error("the PostgresSessionStore is closed"));
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ work, resolve: resolve as (value: unknown) => void, reject, retries: 0 });
      this.#schedule();
    });
  }

  /** Commits everything queued, then ends the writer connection. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.drain();
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => undefined);
  }

  async drain(): Promise<void> {
    while (this.#running !== undefined || this.#queue.length > 0) {
      if (this.#running === undefined) this.#start();
      await this.#running;
    }
  }

  #schedule(): void {
    if (this.#scheduled || this.#running !== undefined) return;
    this.#scheduled = true;
    // The writes issued in this turn of the event loop form the first group.
    setImmediate(() => {
      this.#scheduled = false;
      if (this.#running === undefined) this.#start();
    });
  }

  #start(): void {
    this.#running = this.#loop().finally(() => {
      this.#running = undefined;
    });
  }

  async #loop(): Promise<void> {
    while (this.#queue.length > 0) {
      const group = this.#queue.splice(0, MAX_GROUP);
      await this.#commit(group);
    }
  }

  async #writer(): Promise<pg.Client> {
    if (this.#client !== undefined) return this.#client;
    const client = await this.#connect();
    // A dropped connection: the next group reconnects.
    const drop = () => {
      if (this.#client === client) this.#client = undefined;
    };
    client.on("error", drop);
    client.on("end", drop);
    this.#client = client;
    return client;
  }

  async #commit(group: readonly Pending[]): Promise<void> {
    let client: pg.Client;
    try {
      client = await this.#writer();
    } catch (error) {
      for (const item of group) item.reject(toError(error, "cannot connect the writer"));
      return;
    }
    const outcomes: ({ ok: true; value: unknown } | { ok: false; error: Error })[] = [];
    const notes: string[] = [];
    /** The writes from a deadlock victim on: they go first into the next group. */
    let retry: Pending[] = [];
    try {
      await client.query("BEGIN");
      for (const [index, item] of group.entries()) {
        const mine: string[] = [];
        const context: WriteContext = {
          query: (text, values) => client.query(text, values as unknown[] | undefined),
          notify: (payload) => void mine.push(payload),
        };
        await client.query("SAVEPOINT write");
        try {
          const value = await item.work(context);
          await client.query("RELEASE SAVEPOINT write");
          outcomes.push({ ok: true, value });
          notes.push(...mine);
        } catch (error) {
          if (this.#client !== client) throw error; // the connection is gone: the whole group fails
          await client.query("ROLLBACK TO SAVEPOINT write");
          await client.query("RELEASE SAVEPOINT write");
          if (isTransient(error) && item.retries < MAX_RETRIES) {
            item.retries++;
            retry = group.slice(index);
            break;
          }
          outcomes.push(error instanceof Rollback ? { ok: true, value: error.value } : { ok: false, error: toError(error, "store write failed") });
        }
      }
      if (notes.length > 0) {
        // One statement, the notifications in array order (identical ones may be coalesced by PostgreSQL).
        await client.query("SELECT pg_notify($1, note) FROM unnest($2::text[]) AS note", [this.#channel, notes]);
      }
      const committed = await client.query("COMMIT");
      // COMMIT of a transaction that failed answers ROLLBACK.
      if (committed.command !== "COMMIT") throw new Error("the transaction was rolled back");
    } catch (error) {
      await client.query("ROLLBACK").catch(() => undefined);
      const failure = toError(error, "the store's transaction failed");
      for (const item of group) item.reject(new Error(`store write not committed: ${failure.message}`, { cause: failure }));
      return;
    }
    // The victim and the writes after it run next, before anything queued meanwhile.
    this.#queue.unshift(...retry);
    group.slice(0, group.length - retry.length).forEach((item, index) => {
      const outcome = outcomes[index];
      if (outcome?.ok === true) item.resolve(outcome.value);
      else item.reject(outcome?.error ?? new Error("store write lost"));
    });
  }
}

export function toError(error: unknown, context: string): Error {
  return error instanceof Error ? error : new Error(`${context}: ${String(error)}`);
}
