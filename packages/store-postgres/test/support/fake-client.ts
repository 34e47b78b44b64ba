/**
 * A stand-in for the writer's `pg.Client`, in memory: it records every query's text in order and
 * answers through a script the test gives (`answer`), so a test can make any statement fail
 * (a deadlock victim, a lost connection, a timeout) or hold its answer (`hold`) to issue writes
 * while a group commits. Only what the store uses: `query`, `on`, `end`, `escapeLiteral`.
 */
import type pg from "pg";

export type Answer = (
  text: string,
  values: readonly unknown[] | undefined,
) => Partial<pg.QueryResult> | Promise<Partial<pg.QueryResult>> | undefined | Promise<undefined>;

let xids = 1000;

/**
 * A result per statement of a multi-statement query, as `pg` answers one; `command` is the
 * statement's first word. The writer's `SELECT pg_current_xact_id()` gets a new id each time.
 */
function results(text: string, rows: unknown[] = []): pg.QueryResult | pg.QueryResult[] {
  const statements = text.split("; ");
  const answers = statements.map(
    (statement) =>
      ({
        command: statement.split(" ")[0]!,
        rowCount: 0,
        oid: 0,
        fields: [],
        rows: statement.includes("pg_current_xact_id") ? [{ xid: String(xids++) }] : rows,
      }) as pg.QueryResult,
  );
  return answers.length === 1 ? answers[0]! : answers;
}

export class FakeClient {
  /** Every query's text, in the order it was sent. */
  readonly log: string[] = [];
  ended = 0;
  #listeners = new Map<string, ((...args: unknown[]) => void)[]>();
  #waiters: { match: (text: string) => boolean; resolve: () => void }[] = [];
  #answer: Answer;

  constructor(answer: Answer = () => undefined) {
    this.#answer = answer;
  }

  /** Replaces the script. */
  answer(answer: Answer): void {
    this.#answer = answer;
  }

  async query(text: string, values?: readonly unknown[]): Promise<pg.QueryResult | pg.QueryResult[]> {
    this.log.push(text);
    for (const waiter of this.#waiters.filter((w) => w.match(text))) {
      this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
    const scripted = await this.#answer(text, values);
    if (scripted === undefined) return results(text);
    return { ...(results(text) as pg.QueryResult), ...scripted } as pg.QueryResult;
  }

  /** Resolves when a query matching `match` is sent (at once if one was). */
  sent(match: (text: string) => boolean): Promise<void> {
    if (this.log.some(match)) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ match, resolve }));
  }

  on(event: string, listener: (...args: unknown[]) => void): this {
    this.#listeners.set(event, [...(this.#listeners.get(event) ?? []), listener]);
    return this;
  }

  /** Calls the listeners of `event` (a `notification`, an `error`). */
  emit(event: string, ...args: unknown[]): void {
    for (const listener of this.#listeners.get(event) ?? []) listener(...args);
  }

  /** What `pg` does when the connection breaks: `error`, then `end`. */
  drop(error: Error): void {
    this.emit("error", error);
    this.emit("end");
  }

  async end(): Promise<void> {
    this.ended++;
  }

  escapeLiteral(text: string): string {
    return `'${text.replace(/'/g, "''")}'`;
  }

  asClient(): pg.Client {
    return this as unknown as pg.Client;
  }
}

/** A promise and its resolver, to hold an answer until the test lets it go. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** An error as `pg` reports a PostgreSQL one: its SQLSTATE in `code`. */
export function pgError(code: string, message = `SQLSTATE ${code}`): Error {
  return Object.assign(new Error(message), { code });
}
