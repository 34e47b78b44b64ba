/**
 * `getSession` and `listStreams` of one session asked in the same turn of
 * the event loop are answered by one round trip: both SELECTs in one simple
 * query (the session id a literal quoted by the driver's `escapeLiteral`),
 * answered with one result each.
 *
 * Why: a cluster node re-reads a session's record and streams together
 * (`syncFromStore`) after every change it hears, its own commits included,
 * so those reads were two queries per committed group on every subscribed
 * node, more than the writes themselves. `pg` sends one query per
 * connection at a time, and each wakes a PostgreSQL backend.
 *
 * A read asked alone goes out as its own parameterized query, as before.
 * The two SELECTs see committed state each (read committed), as two
 * separate queries did.
 */
import pg from "pg";

type Kind = "session" | "streams";

interface Waiter {
  readonly resolve: (rows: pg.QueryResultRow[]) => void;
  readonly reject: (error: unknown) => void;
}

export interface SessionReadStatements {
  /** `SELECT … WHERE session_id = $1`, for the session's record. */
  readonly getSession: string;
  /** `SELECT … WHERE session_id = $1 ORDER BY …`, for its streams. */
  readonly listStreams: string;
}

export class SessionReads {
  readonly #query: (text: string, values?: unknown[]) => Promise<pg.QueryResult | pg.QueryResult[]>;
  readonly #sql: SessionReadStatements;
  /** The reads asked in this turn, by session id. */
  readonly #asked = new Map<string, Record<Kind, Waiter[]>>();

  constructor(query: (text: string, values?: unknown[]) => Promise<pg.QueryResult | pg.QueryResult[]>, sql: SessionReadStatements) {
    this.#query = query;
    this.#sql = sql;
  }

  /** The session's rows (none or one). */
  session<R extends pg.QueryResultRow>(sessionId: string): Promise<R[]> {
    return this.#ask(sessionId, "session") as Promise<R[]>;
  }

  /** The session's stream rows, in order. */
  streams<R extends pg.QueryResultRow>(sessionId: string): Promise<R[]> {
    return this.#ask(sessionId, "streams") as Promise<R[]>;
  }

  #ask(sessionId: string, kind: Kind): Promise<pg.QueryResultRow[]> {
    return new Promise((resolve, reject) => {
      let asked = this.#asked.get(sessionId);
      if (asked === undefined) {
        asked = { session: [], streams: [] };
        this.#asked.set(sessionId, asked);
        queueMicrotask(() => void this.#send(sessionId));
      }
      asked[kind].push({ resolve, reject });
    });
  }

  async #send(sessionId: string): Promise<void> {
    const asked = this.#asked.get(sessionId)!;
    this.#asked.delete(sessionId);
    const settle = (kind: Kind, rows: pg.QueryResultRow[]) => {
      for (const waiter of asked[kind]) waiter.resolve(rows);
    };
    try {
      if (asked.session.length > 0 && asked.streams.length > 0) {
        const literal = pg.escapeLiteral(sessionId);
        // A function, not a string: a replacement string would give `$&`, `$'`… in the id their meaning.
        const text = `${this.#sql.getSession.replace("$1", () => literal)}; ${this.#sql.listStreams.replace("$1", () => literal)}`;
        const answer = await this.#query(text);
        const [session, streams] = answer as pg.QueryResult[];
        settle("session", session!.rows);
        settle("streams", streams!.rows);
        return;
      }
      const kind: Kind = asked.session.length > 0 ? "session" : "streams";
      const answer = (await this.#query(kind === "session" ? this.#sql.getSession : this.#sql.listStreams, [sessionId])) as pg.QueryResult;
      settle(kind, answer.rows);
    } catch (error) {
      for (const waiter of [...asked.session, ...asked.streams]) waiter.reject(error);
    }
  }
}
