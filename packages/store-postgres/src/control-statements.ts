/**
 * The writer's transaction control (BEGIN, SAVEPOINT, RELEASE, ROLLBACK TO,
 * the notifications, COMMIT) sent in as few round trips as their order
 * allows.
 *
 * Why: `pg` sends a query only after the previous one was answered, so each
 * statement costs a round trip to the server. A group holding one run of
 * appends took six (BEGIN, SAVEPOINT, the run, RELEASE, notify, COMMIT). These
 * statements take no parameters, so several go in one simple query, which
 * PostgreSQL runs in order, stopping at the first error. A statement nobody
 * waits on (the BEGIN, a RELEASE after a write succeeded) is held and goes
 * out in front of the next one: the same group takes three round trips.
 *
 * Only text this package builds goes here (statement keywords, and literals
 * quoted by the driver's `escapeLiteral`), never a caller's.
 */
import type pg from "pg";

export class ControlStatements {
  readonly #client: pg.Client;
  #held: string[] = [];
  /** The transaction's id, once a statement sent by `send` answered it as `xid` (the commit marker's, `lost-commit.ts`). */
  xid: string | undefined;

  constructor(client: pg.Client) {
    this.#client = client;
  }

  /** Sends `statement` with the next `send` (or drops it if the transaction fails first). */
  hold(statement: string): void {
    this.#held.push(statement);
  }

  /** Sends the held statements, then `statement`, in one query; resolves with the last statement's result. */
  async send(statement: string): Promise<pg.QueryResult> {
    const text = [...this.#held, statement].join("; ");
    this.#held = [];
    // A query of several statements answers with one result per statement.
    const answer = (await this.#client.query(text)) as pg.QueryResult | pg.QueryResult[];
    for (const result of Array.isArray(answer) ? answer : [answer]) {
      const xid: unknown = (result.rows as { xid?: unknown }[] | undefined)?.[0]?.xid;
      if (typeof xid === "string") this.xid = xid;
    }
    return Array.isArray(answer) ? (answer[answer.length - 1] as pg.QueryResult) : answer;
  }

  /** One statement that sends every notification in `notes`, in order, on `channel`. */
  notifications(channel: string, notes: readonly string[]): string {
    const literals = notes.map((note) => this.#client.escapeLiteral(note)).join(", ");
    return `SELECT pg_notify(${this.#client.escapeLiteral(channel)}, note) FROM unnest(ARRAY[${literals}]::text[]) AS note`;
  }
}
