/**
 * @golem-stream/store-postgres — the PostgreSQL `SessionStore` of
 * @golem-stream/server, with the cluster extension (`ClusterSessionStore`).
 *
 *   const store = await PostgresSessionStore.connect({ connectionString: process.env.DATABASE_URL });
 *   const server = createSessionServer({ store, host, keyring, authenticator });
 */
export { PostgresSessionStore, DEFAULT_SCHEMA, type PostgresSessionStoreOptions } from "./postgres-store.js";
export { SCHEMA_VERSION } from "./schema.js";
export type { LogCompression } from "./log-storage.js";
export { DEFAULT_CONNECTION_TIMEOUTS, type ConnectionTimeouts } from "./connection-settings.js";
export { PostgresStoreError, POSTGRES_STORE_ERROR_CODES, type PostgresStoreErrorCode } from "./store-error.js";
// The store contract this package implements, as @golem-stream/server declares it.
export type {
  SessionStore,
  ClusterSessionStore,
  SessionRecord,
  SessionState,
  NewStream,
  StreamRecord,
  ElementKind,
  StreamParent,
  InputTerminal,
  AttemptRecord,
  AttemptOperation,
  CreateSessionResult,
  AttachResult,
  InputChunk,
  OutputEvent,
  SessionChangeListener,
  SessionChange,
  StreamDirection,
  ServerCancelReason,
  ClientCancelReason,
  CommitListener,
  NodeCatalogue,
  Ownership,
  HeartbeatReport,
  RecordedRun,
  StoredBytes,
  StoreOutageListener,
  StoreOutageEvent,
  OutageClock,
  JournalEntry,
  InputCommitWatcher,
} from "@golem-stream/server/store";
// What a write refused by fencing rejects with (docs/cluster.md, *Fencing*).
export { OwnershipLostError, isOwnershipLost } from "@golem-stream/server/store";
