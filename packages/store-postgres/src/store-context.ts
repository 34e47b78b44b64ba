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
}
