// Type-checked under nodenext and bundler: a cluster store, typed from store-postgres alone.
import {
  PostgresSessionStore,
  type ClusterSessionStore,
  type PostgresSessionStoreOptions,
  type SessionStore,
} from "@golem-stream/store-postgres";

const options: PostgresSessionStoreOptions = { connectionString: "postgres://golem@127.0.0.1:5432/golem", nodeId: "node-a" };
export async function connect(): Promise<SessionStore> {
  const store: ClusterSessionStore = await PostgresSessionStore.connect(options);
  return store;
}
