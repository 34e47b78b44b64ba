/**
 * A store for measuring only (bench/store-share.mjs), never for serving: the SQLite store, except
 * that input chunks handed over with `acceptInputWatched` (and those that join them) are appended
 * to one file instead of SQLite's rows: a turn's chunks gathered into one buffer and written from
 * the thread pool to a file opened `O_DSYNC` (so the write returns synced, as payload files are
 * written; writes of later turns do not wait for it), then reported committed in the order they
 * were handed over. No row points at them and they are never read back: it prices the event loop's
 * share of a durable input log kept in files (a small row per run, its reads and its recovery not
 * included). Loaded by `bench/peer.mjs store`.
 */
import { constants, openSync, write } from "node:fs";
import { join } from "node:path";
import { SqliteSessionStore } from "@golem-stream/server";

class FileInputStore extends SqliteSessionStore {
  #fd;
  #buffers = [];
  #watchers = [];
  #scheduled = false;
  /** Writes in flight, oldest first: watchers are told in the order their chunks were handed over. */
  #inFlight = [];

  constructor(options, logPath) {
    super(options);
    this.#fd = openSync(logPath, constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND | constants.O_DSYNC, 0o600);
  }

  acceptInputWatched(chunk, _epoch, watcher) {
    this.#buffers.push(chunk.data);
    this.#watchers.push(watcher);
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => this.#write());
  }

  /** A chunk joins the write watched last, as the real store's joins do. */
  joinInputWatched(chunk, _epoch, watcher) {
    if (this.#watchers[this.#watchers.length - 1] !== watcher) return false;
    this.#buffers.push(chunk.data);
    return true;
  }

  /** A turn's chunks in one write, not waiting for the writes before it. */
  #write() {
    this.#scheduled = false;
    const buffers = this.#buffers.splice(0);
    const pending = { watchers: this.#watchers.splice(0), done: false, error: undefined };
    this.#inFlight.push(pending);
    const finished = (error) => {
      pending.done = true;
      pending.error = error ?? undefined;
      while (this.#inFlight.length > 0 && this.#inFlight[0].done) {
        const settled = this.#inFlight.shift();
        for (const watcher of settled.watchers) watcher.inputSettled(settled.error);
      }
    };
    // Gathered into one buffer first: a copy of about 100 bytes an item costs the event loop less
    // than handing `writev` a buffer per item.
    write(this.#fd, Buffer.concat(buffers), (error) => finished(error));
  }
}

export async function createStore({ dataDir }) {
  return { store: new FileInputStore({ dataDir }, join(dataDir, "input.log")) };
}
