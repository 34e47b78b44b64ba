/**
 * The store of one cluster node in bench/run.mjs: loaded by the client
 * bench's receiver (`packages/client/bench/peer.mjs store <dataDir> <this module> <json>`),
 * which runs `startEmbeddedServer` on it. `json` is `{ url, schema, nodeId, module? }`.
 */
// Self-reference: this package's build (dist), as a user would import it.
import { pathToFileURL } from "node:url";
import { PostgresSessionStore as HereStore } from "@golem-stream/store-postgres";

/** `module`: another build's dist/index.js (BENCH_PG_BEFORE), instead of this one. */
export async function createStore({ url, schema, nodeId, module }) {
  const PostgresSessionStore = module === undefined ? HereStore : (await import(pathToFileURL(module).href)).PostgresSessionStore;
  const store = await PostgresSessionStore.connect({ connectionString: url, schema, nodeId });
  return { store, cluster: {} };
}
