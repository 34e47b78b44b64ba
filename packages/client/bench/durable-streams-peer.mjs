/**
 * Durable Streams' Node reference server (`@durable-streams/server`, a dev dependency of this
 * bench only), file-backed: segment files synced with `fdatasync` before an append is answered,
 * metadata in LMDB. The far end of `durableStreams` in bench/baseline-clients.mjs; started by
 * `node bench/peer.mjs ds <dataDir>`.
 */
import { DurableStreamTestServer } from "@durable-streams/server";

export async function startDurableStreamsPeer(dataDir) {
  // Its recovery and request logs go to the console; a bench prints only its figures.
  console.info = () => undefined;
  const server = new DurableStreamTestServer({ port: 0, host: "127.0.0.1", dataDir });
  const url = await server.start();
  return { url, close: () => server.stop() };
}
