/**
 * The console's checkpoint, in IndexedDB: per run, the client's resume state
 * together with exactly the output items that state's cursors cover, written
 * in one transaction. So what a reloaded page shows (the stored items) and
 * where the server resumes (the stored cursors) always agree: no displayed
 * item is lost or shown twice.
 *
 * Which run this tab shows is kept in sessionStorage (one run per tab).
 *
 * A record lives only as long as a reload may need it: the run removes it
 * once its invocation has finished and every output has been shown, and on
 * sign-out; every page sweeps, at start, the records no open tab will resume
 * (run-sweep.ts). Outputs are the agent's data: they are not kept after the
 * page no longer needs them.
 */
import type { ResumeState } from "@golem-stream/client";

const DB_NAME = "golem-stream-console";
const RUNS = "runs";
const ITEMS = "items";
const CURRENT_RUN = "golem-stream-console:run";

export type StreamKind = "values" | "bytes" | "binary";

/** One output stream as the page shows it. */
export interface StreamRecord {
  readonly token: string;
  label: string;
  kind: StreamKind | undefined;
  /** Items (for `stream<u8>`, byte batches) stored so far: exactly what the stored cursors cover. */
  stored: number;
  /** Bytes of the stored items (byte streams and binary items). */
  storedBytes: number;
  /** The consumer saw the end (`ok`, already delivered) or a failure. */
  ended?: "ok" | "failed";
}

/** What a stored item is: a rendered value, a byte batch, or one binary item. */
export type StoredItem = string | Uint8Array | { readonly bytes: Uint8Array; readonly mimeType?: string };

export interface RunRecord {
  readonly id: string;
  readonly title: string;
  state: ResumeState | undefined;
  /** For each cursor in `state`, its stream and how many of its items it covers. */
  cursors: Record<string, { stream: string; count: number }>;
  streams: Record<string, StreamRecord>;
  result?: string;
  outcome?: { ok: boolean; text: string };
  /** When the record was last written (`Date.now()`): the sweep's measure of an abandoned run. */
  touchedAt?: number;
}

let opened: Promise<IDBDatabase> | undefined;

function database(): Promise<IDBDatabase> {
  return (opened ??= new Promise((resolve, reject) => {
    const request = indexedDB.open(DB_NAME, 1);
    request.onupgradeneeded = () => {
      request.result.createObjectStore(RUNS, { keyPath: "id" });
      request.result.createObjectStore(ITEMS);
    };
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error ?? new Error("IndexedDB cannot be opened"));
  }));
}

function done(transaction: IDBTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    transaction.oncomplete = () => resolve();
    transaction.onerror = () => reject(transaction.error ?? new Error("IndexedDB write failed"));
    transaction.onabort = () => reject(transaction.error ?? new Error("IndexedDB write aborted"));
  });
}

function itemKey(run: string, stream: string, index: number): IDBValidKey {
  return [run, stream, index];
}

/** Writes the run record (stamped `touchedAt` now) and new items atomically. */
export async function saveRun(
  record: RunRecord,
  items: readonly { stream: string; index: number; item: StoredItem }[] = [],
): Promise<void> {
  const db = await database();
  const transaction = db.transaction([RUNS, ITEMS], "readwrite");
  transaction.objectStore(RUNS).put({ ...record, touchedAt: Date.now() });
  const store = transaction.objectStore(ITEMS);
  for (const { stream, index, item } of items) store.put(item, itemKey(record.id, stream, index));
  await done(transaction);
}

export async function loadRun(id: string): Promise<{ record: RunRecord; items: Map<string, StoredItem[]> } | undefined> {
  const db = await database();
  const record = await request<RunRecord | undefined>(db.transaction(RUNS, "readonly").objectStore(RUNS).get(id));
  if (record === undefined) return undefined;
  // Every read is issued at once: a transaction left without a pending request commits.
  const store = db.transaction(ITEMS, "readonly").objectStore(ITEMS);
  const streams = Object.values(record.streams);
  const reads = streams.map((stream) =>
    request<StoredItem[]>(
      store.getAll(IDBKeyRange.bound(itemKey(id, stream.token, 0), itemKey(id, stream.token, Number.MAX_SAFE_INTEGER))),
    ),
  );
  const items = new Map<string, StoredItem[]>();
  // One transaction wrote both the items and the counts; the count decides all the same.
  (await Promise.all(reads)).forEach((stored, at) => items.set(streams[at]!.token, stored.slice(0, streams[at]!.stored)));
  return { record, items };
}

export function deleteRun(id: string): Promise<void> {
  return deleteRuns([id]);
}

/**
 * Every stored run record, as stored: records of other tabs and of earlier
 * versions of the page included, so each is `unknown` until the sweep has
 * looked at it.
 */
export async function listRuns(): Promise<unknown[]> {
  const db = await database();
  return request<unknown[]>(db.transaction(RUNS, "readonly").objectStore(RUNS).getAll());
}

/** Removes the runs (records and items) with these ids, in one transaction. */
export async function deleteRuns(ids: readonly IDBValidKey[]): Promise<void> {
  if (ids.length === 0) return;
  const db = await database();
  const transaction = db.transaction([RUNS, ITEMS], "readwrite");
  for (const id of ids) {
    transaction.objectStore(RUNS).delete(id);
    transaction.objectStore(ITEMS).delete(IDBKeyRange.bound([id], [id, []]));
  }
  await done(transaction);
}

function request<T>(req: IDBRequest): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result as T);
    req.onerror = () => reject(req.error ?? new Error("IndexedDB read failed"));
  });
}

export function currentRunId(): string | undefined {
  return sessionStorage.getItem(CURRENT_RUN) ?? undefined;
}

export function setCurrentRunId(id: string | undefined): void {
  if (id === undefined) sessionStorage.removeItem(CURRENT_RUN);
  else sessionStorage.setItem(CURRENT_RUN, id);
}
