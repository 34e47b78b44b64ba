/**
 * A store for measuring only (bench/store-share.mjs), never for serving: the SQLite store, except
 * that input chunks handed over with `acceptInputWatched` are reported committed once per turn of
 * the event loop without being written. What a server spends per item beside it is what the
 * store's input path (the chunks gathered into packed rows, SQLite's inserts and commits, the
 * syncs, the checkpoints) costs, measured by taking it away. Loaded by `bench/peer.mjs store`.
 */
import { SqliteSessionStore } from "@golem-stream/server";

class UnwrittenInputStore extends SqliteSessionStore {
  #watchers = [];
  #scheduled = false;

  acceptInputWatched(_chunk, _epoch, watcher) {
    this.#watchers.push(watcher);
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      for (const settled of this.#watchers.splice(0)) settled.inputSettled(undefined);
    });
  }

  /** A chunk joins the write watched last, as the real store's joins do. */
  joinInputWatched(_chunk, _epoch, watcher) {
    return this.#watchers[this.#watchers.length - 1] === watcher;
  }
}

export async function createStore({ dataDir }) {
  return { store: new UnwrittenInputStore({ dataDir }) };
}
