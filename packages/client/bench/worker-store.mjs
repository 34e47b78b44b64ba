/**
 * A store for measuring only (never for serving): the SQLite store on a thread of its own
 * (bench/worker-store-thread.mjs), behind a stand-in on the event loop. What a server's event loop
 * would spend per item if the durable input log's work (packing, inserts, commits, checkpoints)
 * ran off it, at the price of a copy of each chunk's bytes and a message per turn. Calls are
 * forwarded as messages; chunks handed over with `acceptInputWatched` (and those that join them)
 * are gathered for a turn of the event loop and sent as one batch of typed arrays and one buffer
 * of bytes. Errors come back as plain errors (name, message, code): enough for a bench.
 * Loaded by `bench/peer.mjs store`.
 */
import { Worker } from "node:worker_threads";

/** The store's payload file threshold (its default): chunks that large never join another. */
const PAYLOAD_FILE_THRESHOLD = 64 * 1024;
const FIRST_EPOCH = 1n;

const METHODS = [
  "createSession",
  "getAttempt",
  "getSession",
  "listStreams",
  "getStream",
  "attach",
  "acceptInput",
  "readInput",
  "endInput",
  "appendOutput",
  "readOutput",
  "setResult",
  "finish",
  "finishWithResult",
  "listRunningSessions",
  "appendJournal",
  "readJournal",
  "recordRun",
  "purgeFinished",
  "storedBytesByPrincipal",
  "ping",
];

/** `value` with every byte view that does not own its whole buffer copied: a message would copy the whole buffer. */
function detached(value) {
  if (value instanceof Uint8Array) return value.byteLength === value.buffer.byteLength ? value : value.slice();
  if (Array.isArray(value)) return value.map(detached);
  if (value !== null && typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
    const copy = {};
    for (const [key, field] of Object.entries(value)) copy[key] = detached(field);
    return copy;
  }
  return value;
}

function errorFrom(fields) {
  return Object.assign(new Error(fields.message), { name: fields.name, code: fields.code });
}

class WorkerStore {
  #worker;
  #next = 1;
  #pending = new Map();
  #watchers = new Map();
  #commits;
  #outages;
  /** The turn's chunks, not yet sent. */
  #chunks = [];
  #scheduled = false;

  constructor(dataDir) {
    this.#worker = new Worker(new URL("./worker-store-thread.mjs", import.meta.url), { workerData: { dataDir } });
    this.#worker.on("message", (message) => this.#received(message));
    for (const method of METHODS) this[method] = (...args) => this.#call(method, args);
  }

  ready() {
    return this.#call("ready", []);
  }

  #call(method, args) {
    // Chunks handed over before this call go first: the store sees writes in the order they were made.
    if (this.#chunks.length > 0) this.#send();
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.postMessage({ id, method, args: detached(args) });
    });
  }

  #received(message) {
    if (message.settled !== undefined) {
      const watcher = this.#watchers.get(message.settled);
      this.#watchers.delete(message.settled);
      watcher.inputSettled(message.error === undefined ? undefined : errorFrom(message.error));
      return;
    }
    if (message.commits !== undefined) return this.#commits?.(...message.commits);
    if (message.outage !== undefined) return this.#outages?.(message.outage);
    const call = this.#pending.get(message.id);
    this.#pending.delete(message.id);
    if (message.error === undefined) call.resolve(message.result);
    else call.reject(errorFrom(message.error));
  }

  acceptInputWatched(chunk, epoch, watcher) {
    const id = this.#next++;
    this.#watchers.set(id, watcher);
    this.#chunks.push({ id, join: false, chunk, epoch, watcher });
    this.#schedule();
  }

  /** Joins as the store's own join would (same stream, next sequence, no MIME type, below the payload threshold), while the batch is unsent. */
  joinInputWatched(chunk, epoch, watcher) {
    if (epoch !== undefined && epoch !== FIRST_EPOCH) return false;
    if (chunk.data.byteLength >= PAYLOAD_FILE_THRESHOLD || chunk.mimeType !== undefined) return false;
    const last = this.#chunks[this.#chunks.length - 1];
    if (last === undefined || last.watcher !== watcher || last.chunk.mimeType !== undefined) return false;
    if (last.chunk.streamId !== chunk.streamId || last.chunk.sequence + last.chunk.itemCount !== chunk.sequence) return false;
    if (!last.join && last.chunk.data.byteLength >= PAYLOAD_FILE_THRESHOLD) return false;
    this.#chunks.push({ id: 0, join: true, chunk, epoch, watcher });
    return true;
  }

  #schedule() {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => this.#send());
  }

  #send() {
    this.#scheduled = false;
    const entries = this.#chunks.splice(0);
    if (entries.length === 0) return;
    const n = entries.length;
    const ids = new Int32Array(n);
    const joins = new Uint8Array(n);
    const streamIndex = new Int32Array(n);
    const sequences = new BigUint64Array(n);
    const counts = new BigUint64Array(n);
    const epochs = new BigUint64Array(n);
    const hasEpoch = new Uint8Array(n);
    const offsets = new Uint32Array(n);
    const lengths = new Uint32Array(n);
    const streams = [];
    const indexOf = new Map();
    let total = 0;
    for (const { chunk } of entries) total += chunk.data.byteLength;
    const bytes = new Uint8Array(total);
    let at = 0;
    for (let i = 0; i < n; i++) {
      const { id, join, chunk, epoch } = entries[i];
      ids[i] = id;
      joins[i] = join ? 1 : 0;
      let index = indexOf.get(chunk.streamId);
      if (index === undefined) {
        index = streams.length;
        streams.push(chunk.streamId);
        indexOf.set(chunk.streamId, index);
      }
      streamIndex[i] = index;
      sequences[i] = chunk.sequence;
      counts[i] = chunk.itemCount;
      if (epoch !== undefined) {
        epochs[i] = epoch;
        hasEpoch[i] = 1;
      }
      offsets[i] = at;
      lengths[i] = chunk.data.byteLength;
      bytes.set(chunk.data, at);
      at += chunk.data.byteLength;
    }
    const batch = { ids, joins, streams, streamIndex, sequences, counts, epochs, hasEpoch, offsets, lengths, bytes: bytes.buffer };
    this.#worker.postMessage({ batch }, [
      ids.buffer,
      joins.buffer,
      streamIndex.buffer,
      sequences.buffer,
      counts.buffer,
      epochs.buffer,
      hasEpoch.buffer,
      offsets.buffer,
      lengths.buffer,
      bytes.buffer,
    ]);
  }

  observeCommits(listener) {
    this.#commits = listener;
    this.#worker.postMessage({ observe: "commits" });
  }

  observeOutages(listener) {
    this.#outages = listener;
    this.#worker.postMessage({ observe: "outages" });
  }

  async close() {
    if (this.#chunks.length > 0) this.#send();
    await this.#call("close", []);
    await this.#worker.terminate();
  }
}

export async function createStore({ dataDir }) {
  const store = new WorkerStore(dataDir);
  await store.ready();
  return { store };
}
