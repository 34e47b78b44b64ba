/**
 * The SQLite store's database file: opening it (readable by this user only),
 * the connection's settings (page size, exclusive locking, WAL, where a
 * savepoint's undo lives), its schema (`sqlite-schema.ts`), and the sync of
 * its WAL file from the thread pool that makes commits durable at
 * `synchronous: "full"` without blocking the event loop.
 */
import { closeSync, openSync } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import type Database from "better-sqlite3";
import { betterSqlite3 } from "./better-sqlite3.js";
import { migrate } from "./sqlite-schema.js";

/** Opens the database at `path` with the store's settings and brings its schema to this version. */
export function openSessionDatabase(path: string, pageSize: number): Database.Database {
  const db = openDatabase(path);
  try {
    db.defaultSafeIntegers(true);
    // Takes effect only while the file is new (before WAL is on).
    db.pragma(`page_size = ${pageSize}`);
    // One process per data directory: live sessions are held in memory and payload files are
    // laid out by this process alone. Exclusive locking keeps a second store out (it waits
    // for better-sqlite3's busy timeout, 5 s, then fails) and needs no shared-memory index.
    db.pragma("locking_mode = EXCLUSIVE");
    db.pragma("journal_mode = WAL");
    // `full` durability without a sync on the event loop: commits run at NORMAL (in WAL mode no
    // sync; checkpoints are the group commit's, below) and the group commit syncs the WAL file
    // from the thread pool before any write of the group resolves (`FileSync`).
    db.pragma("synchronous = NORMAL");
    // SQLite's own checkpoint, inside the commit that fills the WAL to 1 000 pages, syncs the WAL
    // and the database on the event loop (about 26 ms under a stream of small items): the group
    // commit checkpoints between two groups instead, with both syncs in the thread pool.
    db.pragma("wal_autocheckpoint = 0");
    // Statement journals (the undo of one savepoint: each write runs in its own inside the group's
    // transaction) in memory. On disk they spilled past 64 KiB, four 16 KiB pages, into a temp
    // file: about one pwrite per small item, more than the WAL itself took. Each holds the pages
    // one write touches, so the memory is bounded by the largest single write.
    db.pragma("temp_store = MEMORY");
    db.pragma("foreign_keys = ON");
    migrate(db);
  } catch (error) {
    db.close();
    if ((error as { code?: unknown }).code === "SQLITE_BUSY") {
      throw new Error(`${path} is in use by another store (one server process per data directory)`, { cause: error });
    }
    throw error;
  }
  return db;
}

/**
 * `fdatasync` of one of the store's files in libuv's thread pool, through
 * handles opened as needed (one for each sync running at once: two of the
 * group commit's and a checkpoint's at most) and kept until the store closes.
 *
 * For the WAL file (`<database>-wal`): in WAL mode a commit only appends
 * frames, so this is what FULL does at each commit, once for many commits
 * and without blocking the event loop. The WAL file lives until the database
 * closes (a checkpoint lets it be written again from its start, it is never
 * replaced), so handles opened once serve. For the database file: it changes only at
 * checkpoints, and is synced after each (`wal-checkpoints.ts`).
 */
export class FileSync {
  readonly #path: string;
  /**
   * Handles opened and not syncing now. Each sync runs on a handle no other sync is using:
   * Linux reports a failed writeback to the next sync of each open file once, so two syncs at
   * once on one handle could split one report, one failing and the other, perhaps returning
   * first, succeeding over pages that were lost. On handles of their own each sees the failure.
   */
  readonly #idle: FileHandle[] = [];
  readonly #syncing = new Set<Promise<unknown>>();
  #closed = false;

  constructor(path: string) {
    this.#path = path;
  }

  async sync(): Promise<void> {
    const handle = this.#idle.pop() ?? (await open(this.#path, "r+"));
    const syncing = handle.datasync();
    this.#syncing.add(syncing);
    try {
      await syncing;
    } finally {
      this.#syncing.delete(syncing);
      if (this.#closed) await handle.close().catch(() => undefined);
      else this.#idle.push(handle);
    }
  }

  /** Closes the handles once their syncs are done (before the database closes). */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.allSettled([...this.#syncing]);
    await Promise.all(this.#idle.splice(0).map((handle) => handle.close().catch(() => undefined)));
  }
}

/**
 * Opens (or creates) the database file, readable by this user only: it holds small values and
 * inputs, like the payload files beside it. A new file is created 0600 before SQLite opens it;
 * SQLite gives its -wal and -shm files the database file's permissions. An existing file keeps
 * its own. A failure names the file (SQLite's "unable to open database file" does not).
 */
function openDatabase(path: string): Database.Database {
  try {
    const Sqlite = betterSqlite3();
    closeSync(openSync(path, "a", 0o600));
    return new Sqlite(path);
  } catch (error) {
    const reason = error instanceof Error ? error.message.replace(/, open '.*'$/, "") : String(error);
    // No `code` of its own: callers read one as the listening socket's (EACCES, EADDRINUSE).
    throw new Error(`cannot open the session database ${path}: ${reason}`, { cause: error });
  }
}
