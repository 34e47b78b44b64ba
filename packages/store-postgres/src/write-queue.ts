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
 * failure): nothing is reported durable before it is, and within an outage
 * grace each transaction sets its writer's commit marker, which tells after
 * a lost COMMIT whether it committed (`lost-commit.ts`). A group of small
 * appends only, one run per stream, skips all of that: one statement outside
 * a transaction block (`append-group.ts`), committed when it answers.
 *
 * Nodes of a cluster each have a writer, and their groups may touch the same
 * rows in different orders (node A finishing sessions X then Y while node B
 * attaches Y then X), so PostgreSQL may pick a write as a deadlock victim.
 * The other transaction waits on rows the group's earlier writes hold, so
 * retrying the victim inside the group would deadlock again: the group
 * commits the writes before the victim instead (releasing those rows), and
 * the victim and every write not written yet go first into the next group,
 * in the order they were issued. A write is retried this way a few times
 * before it fails. (Appends of different streams may be written in another
 * order than issued, stream by stream: @golem-stream/server's `writeOrder`. Each stream's
 * appends, and every other write, keep their order.)
 *
 * Why one file: one writer: the group in flight, the queue behind it and the outage grace all
 * act on the one connection and the order of its groups. What stands apart lives apart: the
 * one-statement append group (`append-group.ts`), a run's statement (`run-write.ts`), what
 * became of a group whose COMMIT answer was lost (`lost-commit.ts`), and the SQL.
 */
import { performance } from "node:perf_hooks";
import pg from "pg";
import { OutageGrace, writeOrder } from "@golem-stream/server/store";
import { appendGroupValues, distinctRuns } from "./append-group.js";
import { RUN_BYTES, RUN_ROW_BYTES, runLength } from "./append-runs.js";
import { ControlStatements } from "./control-statements.js";
import { writeRun } from "./run-write.js";
import { Rollback, type LogAppend, type RunStatements, type WriteContext } from "./writes.js";
import { appendsCommitted, resolveLostGroup, type CommitMarker, type Verdict } from "./lost-commit.js";
import { asStoreError, isUnavailable, PostgresStoreError, timeoutCode } from "./store-error.js";

export { Rollback, type LogAppend, type RunStatements, type WriteContext } from "./writes.js";

interface Pending {
  readonly work: (context: WriteContext) => Promise<unknown>;
  readonly append: LogAppend | undefined;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: Error) => void;
  /** Times it was a deadlock victim and went on to the next group. */
  retries: number;
  /** Written the careful way (savepoints): a group statement did not write it. */
  careful: boolean;
}

/** Deadlock victims (40P01) and serialization failures (40001) are retried, this many times at most. */
const MAX_RETRIES = 5;

function isTransient(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "40P01" || code === "40001";
}

/** At most this many writes share one transaction... */
const MAX_GROUP = 512;
/**
 * ...or this many small appends (each at most `RUN_ROW_BYTES`, together at
 * most `RUN_BYTES`), written by one statement (`append-group.ts`). A busy
 * node queues more than 512 appends during a commit: each group's statement,
 * COMMIT (its fsync) and change notification (a read by every subscribed
 * node) then serve eight times as many items.
 */
const MAX_APPEND_GROUP = 4096;

export class WriteQueue {
  readonly #connect: () => Promise<pg.Client>;
  readonly #channel: string;
  readonly #runs: RunStatements | undefined;
  readonly #queue: Pending[] = [];
  #client: pg.Client | undefined;
  #running: Promise<void> | undefined;
  #scheduled = false;
  #closed = false;
  #listener: ((seconds: number, writes: number) => void) | undefined;
  #transientRetries = 0;
  /** Retries of groups whose connection was lost or could not be made (`outage`). */
  readonly #grace: OutageGrace;
  /** Written by each group of several statements within a grace, so a lost COMMIT can be told (`lost-commit.ts`). */
  readonly #marker: CommitMarker | undefined;

  /**
   * `outage` is the grace of a database that cannot be reached (default: none,
   * every such group fails at once): groups are retried in order, and a group
   * whose COMMIT got no answer is first checked (by its `marker`; without one
   * it fails as not confirmed), so nothing is written twice or reported lost
   * when it committed, nor reported durable when it was lost.
   */
  constructor(
    connect: () => Promise<pg.Client>,
    channel: string,
    runs?: RunStatements,
    outage: OutageGrace = new OutageGrace(0),
    marker?: CommitMarker,
  ) {
    this.#connect = connect;
    this.#channel = channel;
    this.#runs = runs;
    this.#grace = outage;
    this.#marker = marker;
  }

  /** Queues `work`; an `append` (see `LogAppend`) may be written together with its neighbours instead. */
  write<T>(work: (context: WriteContext) => Promise<T>, append?: LogAppend): Promise<T> {
    if (this.#closed) return Promise.reject(new Error("the PostgresSessionStore is closed"));
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ work, append, resolve: resolve as (value: unknown) => void, reject, retries: 0, careful: false });
      this.#schedule();
    });
  }

  /** Writes retried in a later group after PostgreSQL picked them as a deadlock victim or failed their serialization. */
  get transientRetries(): number {
    return this.#transientRetries;
  }

  /** Registers the one listener told of each committed group: its time from BEGIN to COMMIT and its size (metrics). */
  observe(listener: (seconds: number, writes: number) => void): void {
    this.#listener = listener;
  }

  /** Commits everything queued, deletes the writer's commit marker, then ends the writer connection. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.drain();
    const client = this.#client;
    this.#client = undefined;
    if (client !== undefined) await this.#marker?.forget(client);
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
      // A write issued after the loop found the queue empty but before this callback ran (a
      // caller resuming a microtask or two after its previous write resolved) saw the loop still
      // running and scheduled nothing: without this it would wait for the next write, forever.
      if (this.#queue.length > 0) this.#schedule();
    });
  }

  async #loop(): Promise<void> {
    while (this.#queue.length > 0) {
      await this.#commit(this.#queue.splice(0, this.#groupSize()));
    }
  }

  /** How many writes from the head of the queue form the next group: `MAX_GROUP`, or up to `MAX_APPEND_GROUP` small appends. */
  #groupSize(): number {
    let bytes = 0;
    let small = true;
    let end = 0;
    for (; end < this.#queue.length && end < MAX_APPEND_GROUP; end++) {
      const append = this.#queue[end]!.append;
      if (append === undefined || append.data.length > RUN_ROW_BYTES || (bytes += append.data.length) > RUN_BYTES) small = false;
      if (!small && end >= MAX_GROUP) break;
    }
    return end;
  }

  /**
   * After a query timed out on the client (`queryTimeoutMs`), the statement
   * may still be running and the connection cannot be trusted: it is closed,
   * the group fails and the next one connects again.
   */
  #abandonIfStalled(client: pg.Client, error: unknown): void {
    if (timeoutCode(error) !== "query-timeout") return;
    if (this.#client === client) this.#client = undefined;
    client.end().catch(() => undefined);
  }

  /**
   * A group of appends, one run per stream, as one statement outside a
   * transaction block (`append-group.ts`): committed when it answers. The
   * writes of a run that did not move its stream changed nothing: they go
   * first into the next group, written the careful way, for their own
   * outcomes. After an error nothing was written and the whole group goes
   * the careful way, unless the answer was lost (the statement may have
   * committed): within the outage grace the streams' counts then tell
   * (`appendsCommitted`, `lost-commit.ts`), else the group fails as not confirmed.
   */
  async #commitAppends(
    client: pg.Client,
    group: readonly Pending[],
    ordered: readonly Pending[],
    runs: readonly [number, number][],
  ): Promise<void> {
    const began = performance.now();
    const appends = ordered.map((item) => item.append!);
    let moved: Set<number>;
    try {
      const answer = await client.query<{ run: number }>(
        this.#runs!.group,
        appendGroupValues(appends, runs, this.#runs!.packedRowBytes(), this.#channel),
      );
      moved = new Set(answer.rows.map((row) => row.run));
    } catch (error) {
      this.#abandonIfStalled(client, error);
      if (this.#client === client && !isUnavailable(error)) {
        for (const item of group) item.careful = true;
        this.#queue.unshift(...group);
        return;
      }
      const failure = toError(error, "the store's write failed");
      // The runs that moved, as the streams' counts tell once the statement is known to have committed.
      let committedRuns: ReadonlySet<number> = new Set();
      const committed = async (writer: pg.Client): Promise<Verdict> => {
        const outcome = await appendsCommitted(writer, this.#runs!.counts!, appends, runs);
        committedRuns = outcome.moved;
        return outcome.verdict;
      };
      const settle = () => this.#settleAppends(group, ordered, runs, committedRuns, began);
      if (await this.#recover(group, failure, this.#runs!.counts === undefined ? undefined : committed, settle)) return;
      const code = timeoutCode(failure);
      const message = `store write not confirmed (it may have committed): ${failure.message}`;
      this.#fail(group, (item) =>
        item.reject(
          code === undefined ? new Error(message, { cause: failure }) : new PostgresStoreError(code, message, { cause: failure }),
        ),
      );
      return;
    }
    this.#grace.available();
    this.#settleAppends(group, ordered, runs, moved, began);
  }

  /** Settles a group of appends whose statement committed, `moved` its runs that moved their stream; the others go the careful way next. */
  #settleAppends(
    group: readonly Pending[],
    ordered: readonly Pending[],
    runs: readonly [number, number][],
    moved: ReadonlySet<number>,
    began: number,
  ): void {
    const again = new Set<Pending>();
    runs.forEach(([start, end], run) => {
      if (moved.has(run)) return;
      for (let at = start; at < end; at++) again.add(ordered[at]!);
    });
    this.#listener?.((performance.now() - began) / 1000, group.length - again.size);
    const retry = group.filter((item) => again.has(item));
    for (const item of retry) item.careful = true;
    this.#queue.unshift(...retry);
    for (const item of group) if (!again.has(item)) item.resolve(undefined);
  }

  /**
   * The group's connection was lost, or could not be made (`error`): within
   * the grace, either settles the group as committed (`settle`) or puts it
   * back at the head of the queue, before every later write, to be written
   * again, once PostgreSQL says which (`committed`, `lost-commit.ts`). True
   * when it did one of those; false when the group must fail.
   */
  async #recover(
    group: readonly Pending[],
    error: Error,
    committed: ((client: pg.Client) => Promise<Verdict>) | undefined,
    settle: () => void,
  ): Promise<boolean> {
    const writer = { grace: this.#grace, dropWriter: () => this.#dropWriter(), writer: () => this.#writer() };
    const outcome = await resolveLostGroup(writer, error, committed);
    if (outcome === "committed") settle();
    else if (outcome === "again") this.#queue.unshift(...group);
    return outcome !== "failed";
  }

  /** Rejects every write of `group` with `reject`; counted as failed past the grace while an outage is under way. */
  #fail(group: readonly Pending[], reject: (item: Pending) => void): void {
    if (this.#grace.down) this.#grace.exceeded(group.length);
    for (const item of group) reject(item);
  }

  /** Forgets the writer connection (ending it): the next group connects again. */
  #dropWriter(): void {
    const client = this.#client;
    this.#client = undefined;
    client?.end().catch(() => undefined);
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
      let failure = toError(asStoreError(error, "cannot connect the writer"), "cannot connect the writer");
      if (await this.#recover(group, failure, undefined, () => undefined)) return;
      if (!(failure instanceof PostgresStoreError) && isUnavailable(failure)) {
        failure = new PostgresStoreError("unavailable", `cannot connect the writer: ${failure.message}`, { cause: failure });
      }
      this.#fail(group, (item) => item.reject(failure));
      return;
    }
    /** Each write's outcome, at its index in `group`. */
    const outcomes: ({ ok: true; value: unknown } | { ok: false; error: Error })[] = [];
    const notes: string[] = [];
    /** The writes from a deadlock victim on: they go first into the next group. */
    let retry: Pending[] = [];
    const began = performance.now();
    // Appends of different streams between two other writes are taken stream by stream (`writeOrder`).
    const order = this.#runs === undefined ? group.map((_, index) => index) : writeOrder(group.map((item) => item.append));
    const ordered = order.map((index) => group[index]!);
    const appends = ordered.map((item) => item.append);
    const runs =
      this.#runs !== undefined && ordered.every((item) => item.append !== undefined && !item.careful)
        ? distinctRuns(appends as LogAppend[])
        : undefined;
    if (runs !== undefined) return this.#commitAppends(client, group, ordered, runs);
    const control = new ControlStatements(client);
    /** Whether the COMMIT went out: from then on a lost answer leaves the outcome unknown. */
    let commitSent = false;
    /** The group's number in its commit marker (none without a grace: nothing would ask). */
    const marked = this.#grace.graceMs > 0 ? this.#marker?.next() : undefined;
    /** Settles the group from `outcomes` once its transaction committed. */
    const settle = (): void => {
      this.#listener?.((performance.now() - began) / 1000, group.length - retry.length);
      // The victim and the writes after it run next, before anything queued meanwhile.
      this.#queue.unshift(...retry);
      const retried = new Set(retry);
      group.forEach((item, index) => {
        if (retried.has(item)) return;
        const outcome = outcomes[index];
        if (outcome?.ok === true) item.resolve(outcome.value);
        else item.reject(outcome?.error ?? new Error("store write lost"));
      });
    };
    try {
      control.hold("BEGIN");
      // The commit marker and the transaction's id, to tell after a lost COMMIT whether it committed.
      if (marked !== undefined) control.hold(this.#marker!.statement(client, marked));
      for (let at = 0; at < ordered.length; at++) {
        const item = ordered[at]!;
        const index = order[at]!;
        const run = this.#runs === undefined ? 1 : runLength(appends, at);
        const members = ordered.slice(at, at + run).map((member) => member.append!);
        if (
          run > 1 &&
          (await writeRun(
            client,
            control,
            this.#runs!,
            members,
            notes,
            (error) => (this.#abandonIfStalled(client, error), this.#client !== client),
          ))
        ) {
          for (let i = 0; i < run; i++) outcomes[order[at + i]!] = { ok: true, value: undefined };
          at += run - 1;
          continue;
        }
        const mine: string[] = [];
        const context: WriteContext = {
          query: (text, values) => client.query(text, values as unknown[] | undefined),
          notify: (payload) => void mine.push(payload),
        };
        await control.send("SAVEPOINT write");
        try {
          const value = await item.work(context);
          control.hold("RELEASE SAVEPOINT write");
          outcomes[index] = { ok: true, value };
          notes.push(...mine);
        } catch (error) {
          this.#abandonIfStalled(client, error);
          if (this.#client !== client || isUnavailable(error)) throw error; // the connection is gone: the whole group fails
          await control.send("ROLLBACK TO SAVEPOINT write; RELEASE SAVEPOINT write");
          if (isTransient(error) && item.retries < MAX_RETRIES) {
            item.retries++;
            this.#transientRetries++;
            // What was not written yet, in the order it was issued.
            retry = order
              .slice(at)
              .sort((a, b) => a - b)
              .map((i) => group[i]!);
            break;
          }
          outcomes[index] =
            error instanceof Rollback
              ? { ok: true, value: error.value }
              : { ok: false, error: toError(asStoreError(error), "store write failed") };
        }
      }
      // The notifications in one statement, in array order (identical ones may be coalesced by
      // PostgreSQL), sent with the COMMIT: one round trip.
      commitSent = true;
      const committed = await control.send(notes.length > 0 ? `${control.notifications(this.#channel, notes)}; COMMIT` : "COMMIT");
      // COMMIT of a transaction that failed answers ROLLBACK.
      if (committed.command !== "COMMIT") throw new Error("the transaction was rolled back");
    } catch (error) {
      this.#abandonIfStalled(client, error);
      await client.query("ROLLBACK").catch(() => undefined);
      const failure = toError(error, "the store's transaction failed");
      if (isUnavailable(failure)) {
        // Before the COMMIT went out nothing can have committed; after it, the group's commit marker says.
        const xid = control.xid;
        const verify = !commitSent
          ? undefined
          : marked === undefined
            ? async (): Promise<Verdict> => "unknown"
            : (writer: pg.Client) => this.#marker!.committed(writer, xid, marked);
        if (await this.#recover(group, failure, verify, settle)) return;
      }
      const code = timeoutCode(failure);
      // A COMMIT that got no answer may have committed: say so rather than "not committed".
      const unconfirmed = code === "query-timeout" || (commitSent && isUnavailable(failure) && this.#grace.graceMs > 0);
      this.#fail(group, (item) => {
        if (unconfirmed)
          item.reject(
            new PostgresStoreError(code ?? "unavailable", `store write not confirmed (it may have committed): ${failure.message}`, {
              cause: failure,
            }),
          );
        else if (code !== undefined)
          item.reject(new PostgresStoreError(code, `store write not committed: ${failure.message}`, { cause: failure }));
        else if (this.#grace.down)
          item.reject(new PostgresStoreError("unavailable", `store write not committed: ${failure.message}`, { cause: failure }));
        else item.reject(new Error(`store write not committed: ${failure.message}`, { cause: failure }));
      });
      return;
    }
    this.#grace.available();
    settle();
  }
}

export function toError(error: unknown, context: string): Error {
  return error instanceof Error ? error : new Error(`${context}: ${String(error)}`);
}
