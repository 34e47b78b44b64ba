/**
 * The store of one cluster node in bench/run.mjs: loaded by the client
 * bench's receiver (`packages/client/bench/peer.mjs store <dataDir> <this module> <json>`),
 * which runs `startEmbeddedServer` on it. `json` is `{ url, schema, nodeId }`.
 */
// Self-reference: this package's build (dist), as a user would import it.
import { PostgresSessionStore } from "@golem-stream/store-postgres";

export async function createStore({ url, schema, nodeId }) {
  const store = await PostgresSessionStore.connect({ connectionString: url, schema, nodeId });
  return { store, cluster: {} };
}
