/**
 * @golem-stream/store-postgres — the PostgreSQL `SessionStore` of
 * @golem-stream/server, with the cluster extension (`ClusterSessionStore`).
 *
 *   const store = await PostgresSessionStore.connect({ connectionString: process.env.DATABASE_URL });
 *   const server = createSessionServer({ store, host, keyring, authenticator });
 */
export { PostgresSessionStore, DEFAULT_SCHEMA, type PostgresSessionStoreOptions } from "./postgres-store.js";
export { SCHEMA_VERSION } from "./schema.js";
