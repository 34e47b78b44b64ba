/**
 * What the parts of `PostgresSessionStore` (session rows, log appends, the
 * journal, retention, cluster membership) share: its statements, its node
 * id, the writer's queue and the read pool. Each part is a set of functions
 * over this context; the store class wires them to its public methods.
 */
import type pg from "pg";
import type { Statements } from "./statements.js";
import type { LogAppend, WriteContext } from "./write-queue.js";

export interface StoreContext {
  readonly sql: Statements;
  /** This node's id (cluster mode): the owner of the sessions it creates. */
  readonly nodeId: string;
  /** Queues `work` on the writer (`write-queue.ts`), on an open store; an `append` may be written with its neighbours. */
  write<T>(work: (tx: WriteContext) => Promise<T>, append?: LogAppend): Promise<T>;
  /** The rows a statement reads on a pooled connection, waited out through an outage (`connections.ts`). */
  read<R extends pg.QueryResultRow>(text: string, values: readonly unknown[]): Promise<R[]>;
  /** What the database has beyond its schema version (columns added without one, `schema.ts`), known once the store is open. */
  readonly features: StoreFeatures;
}

/** Columns added without a schema version: absent where the role that opened the store could not add them. */
export interface StoreFeatures {
  /** `session_runs.progress` and `stalled`: re-runs counted by progress (`SessionStore.recordRun`). */
  runProgress: boolean;
}
