/**
 * @golem-stream/server/store — for writing a session store of your own.
 *
 * The store contract (`SessionStore`, and `ClusterSessionStore` for cluster mode), the in-memory
 * stores to test against, and the helpers the SQLite store and `@golem-stream/store-postgres` use
 * to pack runs of small appends into shared log rows and to order a group commit's writes. The
 * contract suite every store must pass is in `@golem-stream/server/testing`.
 *
 * Nothing here loads SQLite, `ws` or the server's runtime, so a store package can depend on this
 * entry alone.
 *
 * The store folder owns durability: this contract, the memory stores, the SQLite store
 * (sqlite-store.ts and the sqlite-*.ts beside it: options, database file, statements, mutations,
 * log rows, schema, rows; and its group commit; the server's main entry exports it, not this one) and the cluster store's leases and fencing. It imports nothing else of the server.
 */
// The protocol types the contract's signatures use.
export type { StreamDirection, ServerCancelReason, ClientCancelReason } from "@golem-stream/wire";
export type * from "./session-store.js";
export type * from "./cluster-store.js";
export { isClusterStore } from "./cluster-store.js";
// What a store rejects a former owner's write with, once another node claimed the session.
export { OwnershipLostError, isOwnershipLost, FIRST_EPOCH, OWNERSHIP_LOST } from "./ownership.js";
export { MemorySessionStore } from "./memory-store.js";
export { MemoryCluster } from "./memory-cluster.js";
// What a session's own records count for in `storedBytesByPrincipal`, beside its payload bytes.
export { ATTEMPT_RECORD_BYTES, SESSION_RECORD_BYTES, sessionRecordBytes, type SessionTexts } from "./record-bytes.js";
export {
  joinParts,
  packedInputChunks,
  packedOutputItems,
  packRun,
  PackedRowError,
  splitPacked,
  type PackableAppend,
  type PackedPart,
  type PackedRow,
} from "./packed-rows.js";
export { continuesRun, writeOrder, type OrderedAppend } from "./write-order.js";
// Waiting out a store that is unavailable for a while (docs/cluster.md, *Store outages*).
export {
  checkOutageGraceMs,
  DEFAULT_STORE_OUTAGE_GRACE_MS,
  OutageGrace,
  SYSTEM_OUTAGE_CLOCK,
  type OutageClock,
  type StoreOutageEvent,
  type StoreOutageListener,
} from "./outage-grace.js";
