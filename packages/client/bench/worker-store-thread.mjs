/**
 * The worker side of bench/worker-store.mjs (for measuring only): the SQLite store, run on a
 * thread of its own. Calls arrive as `{ id, method, args }` and are answered `{ id, result }` or
 * `{ id, error }`; input chunks arrive as batches (`{ batch }`, laid out by worker-store.mjs) and
 * their watchers' outcomes leave as `{ settled, error }`, in the order the store tells them.
 */
import { parentPort, workerData } from "node:worker_threads";
import { SqliteSessionStore } from "@golem-stream/server";

const store = new SqliteSessionStore({ dataDir: workerData.dataDir });

const errorOf = (error) => ({ name: error?.name, message: String(error?.message ?? error), code: error?.code });

/** One watcher per handed-over chunk (with those that joined it): its outcome goes back under its id. */
class RemoteWatcher {
  constructor(id) {
    this.id = id;
  }
  inputSettled(error) {
    parentPort.postMessage({ settled: this.id, error: error === undefined ? undefined : errorOf(error) });
  }
}

function acceptBatch({ ids, joins, streams, streamIndex, sequences, counts, epochs, hasEpoch, offsets, lengths, bytes }) {
  const data = new Uint8Array(bytes);
  let watcher;
  for (let i = 0; i < ids.length; i++) {
    const chunk = {
      streamId: streams[streamIndex[i]],
      sequence: sequences[i],
      itemCount: counts[i],
      data: data.subarray(offsets[i], offsets[i] + lengths[i]),
      mimeType: undefined,
    };
    const epoch = hasEpoch[i] === 1 ? epochs[i] : undefined;
    if (joins[i] === 1 && watcher !== undefined && store.joinInputWatched(chunk, epoch, watcher)) continue;
    if (joins[i] === 1) throw new Error("a chunk the main thread joined could not join here");
    watcher = new RemoteWatcher(ids[i]);
    store.acceptInputWatched(chunk, epoch, watcher);
  }
}

parentPort.on("message", async (message) => {
  if (message.batch !== undefined) return acceptBatch(message.batch);
  if (message.observe === "commits")
    return store.observeCommits((seconds, writes) => parentPort.postMessage({ commits: [seconds, writes] }));
  if (message.observe === "outages") return store.observeOutages((event) => parentPort.postMessage({ outage: event }));
  const { id, method, args } = message;
  try {
    const result = method === "ready" ? undefined : await store[method](...args);
    parentPort.postMessage({ id, result });
  } catch (error) {
    parentPort.postMessage({ id, error: errorOf(error) });
  }
});
