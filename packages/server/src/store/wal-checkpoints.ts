/**
 * Checkpoints of the SQLite store's WAL with their syncs in the thread pool.
 *
 * SQLite checkpoints by itself inside the commit that fills the WAL to 1 000
 * pages: it syncs the WAL, copies its pages into the database and syncs the
 * database, all in that commit's call on the event loop. Under a stream of
 * small items that was the event loop's longest turn, 26 ms at `synchronous
 * = NORMAL` and 13 ms at FULL, every few hundred milliseconds
 * (`bench/item-path.mjs`); the two syncs were nearly all of it. Here the
 * store's connection never checkpoints on its own (`wal_autocheckpoint = 0`),
 * and between two group commits (`GroupCommit`'s `checkpoints`), once the
 * WAL holds `pages`:
 *
 * 1. the WAL is synced, off the event loop: nothing uncertain is copied
 *    into the database (SQLite's own first step);
 * 2. its pages are copied into the database at `synchronous = OFF`: the
 *    copy alone, on the event loop, a few milliseconds;
 * 3. the database file is synced, off the event loop (SQLite's own last
 *    step). Only then may the next commit write the WAL from its start
 *    again: until then the WAL still holds what the database may not, so
 *    the group commit waits for `run()` before its next commit.
 *
 * A failed sync rejects `run()`, and the store takes no more writes
 * (`GroupCommit`): of the WAL, because it may have lost pages that commits
 * acknowledged after it would need (a failed sync is never trusted again,
 * group-commit.ts); of the database, because the copied pages may be lost, and
 * the next commit would overwrite the only copy of them in the WAL.
 */
import type Database from "better-sqlite3";

/** SQLite's own threshold (`wal_autocheckpoint`'s default): a checkpoint once the WAL holds this many pages. */
export const DEFAULT_CHECKPOINT_PAGES = 1000;

/** What the group commit needs of checkpoints. */
export interface Checkpoints {
  /** Whether one is due now; asked between two groups, before the next one commits. */
  due(): boolean;
  /**
   * Runs it; the next commit waits. A `CheckpointSyncError` means the store
   * must take no more writes; any other failure leaves the WAL as it was, to
   * be checkpointed after the next commit.
   */
  run(): Promise<void>;
}

/** Thrown by `WalCheckpoints.run` when the WAL could not be synced before its pages were copied, or the database file after. */
export class CheckpointSyncError extends Error {
  override readonly name = "CheckpointSyncError";
}

export class WalCheckpoints implements Checkpoints {
  readonly #db: Database.Database;
  readonly #syncWal: () => Promise<void>;
  readonly #syncDatabase: () => Promise<void>;
  readonly #pages: number;
  /** Prepared once: asked before every group, where `db.pragma` would prepare it each time. */
  readonly #walLength: Database.Statement;

  /** `db`: the store's connection, at `synchronous = NORMAL`; the syncs of its WAL and database files. */
  constructor(db: Database.Database, syncWal: () => Promise<void>, syncDatabase: () => Promise<void>, pages = DEFAULT_CHECKPOINT_PAGES) {
    this.#db = db;
    this.#syncWal = syncWal;
    this.#syncDatabase = syncDatabase;
    this.#pages = pages;
    this.#walLength = db.prepare("PRAGMA wal_checkpoint(NOOP)");
  }

  /** Whether the WAL holds `pages` or more (a `NOOP` checkpoint: it only reads the WAL's length). */
  due(): boolean {
    const result = this.#walLength.get() as { log: number | bigint } | undefined;
    return result !== undefined && Number(result.log) >= this.#pages;
  }

  async run(): Promise<void> {
    try {
      await this.#syncWal();
    } catch (error) {
      throw new CheckpointSyncError("the WAL could not be synced before a checkpoint", { cause: error });
    }
    this.#db.pragma("synchronous = OFF");
    try {
      this.#db.pragma("wal_checkpoint(PASSIVE)");
    } finally {
      this.#db.pragma("synchronous = NORMAL");
    }
    try {
      await this.#syncDatabase();
    } catch (error) {
      throw new CheckpointSyncError("the database file could not be synced after a checkpoint", { cause: error });
    }
  }
}
