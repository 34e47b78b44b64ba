/**
 * What `SqliteSessionStore` can be told: its options, each with its default,
 * and the checks that refuse a value out of range before anything is opened.
 */
import type { OutageClock } from "./outage-grace.js";
import { DEFAULT_CHECKPOINT_PAGES } from "./wal-checkpoints.js";

export interface SqliteSessionStoreOptions {
  /** Directory that holds `sessions.db`; created if missing. */
  readonly dataDir: string;
  /** `full` (default): every commit is synced. `normal`: WAL default durability. */
  readonly synchronous?: "full" | "normal";
  /**
   * Page size of a new database: a power of two from 4096 to 65536 (default
   * 4096). Every commit writes each page it modified whole, twice (WAL, then
   * checkpoint), so small pages keep a burst of small items' commits small:
   * 64-byte items cost about 260 bytes of writes each at 4 KiB, 555 at
   * 16 KiB (`bench/item-path.mjs`). Larger pages write a large row in fewer
   * system calls (one per page), but payloads of `payloadFileThreshold` bytes
   * or more never go into pages. Ignored for an existing database.
   */
  readonly pageSize?: number;
  /**
   * Input chunks and output items of at least this many bytes (default
   * 65536) are kept in an append-only file per session under
   * `<dataDir>/payloads/` instead of in the database: written once, off the
   * event loop, and synced before the row that points at them commits
   * (SQLite would write them twice, WAL then checkpoint, blocking the event
   * loop). So are the bytes of a burst of small input chunks of one stream
   * once the chunks that joined one write hold 16 KiB, or this threshold if
   * lower (their rows keep only their part lists). `Infinity` keeps every
   * payload in the database.
   */
  readonly payloadFileThreshold?: number;
  /**
   * Write payload files with direct I/O (default true on Linux, where it is
   * `O_DIRECT`; elsewhere ignored): the bytes go from one of at most four
   * staging buffers of 4 MiB (per process) to the disk, not through the page cache, which
   * saves the kernel a copy into cache pages of every byte (about 1.8 ms of
   * CPU per MiB). Each payload then starts at an offset aligned to 4096
   * bytes. A file system that refuses it is written through the page cache.
   */
  readonly payloadDirectIo?: boolean;
  /**
   * Small input chunks and output items of one stream committed in the same
   * group share one row of their log, up to this many bytes per row
   * (default 16384; 0 writes a row per append). A burst of 64-byte items then
   * costs SQLite one insert per row instead of one per item
   * (`packed-rows.ts`). A row longer than a page continues in overflow pages
   * that SQLite fills whole, where rows of about half a page left the rest of
   * each page empty. A read of one item (a resend's duplicate check) reads
   * its whole row: larger rows saved little more writing and cost such reads
   * more. Reads return the appends as they were made.
   */
  readonly maxPackedRowBytes?: number;
  /**
   * How long a group of writes that failed with a transient error (SQLite
   * busy or locked, an I/O error: `sqlite-errors.ts`) is retried, with
   * backoff and in order, before its writes fail (their invocations fail).
   * A full disk and a failed sync are reported at once. Default 30 000;
   * 0 fails at the first error.
   */
  readonly outageGraceMs?: number;
  /**
   * Pages the WAL may hold before it is checkpointed into the database
   * (default 1000, SQLite's own `wal_autocheckpoint`). The checkpoint runs
   * between two group commits, its syncs off the event loop
   * (`wal-checkpoints.ts`); the WAL file grows to about this many pages.
   */
  readonly checkpointPages?: number;
  /** The clock of the outage grace (tests). Default: the process's. */
  readonly outageClock?: OutageClock;
}

const DEFAULT_PAGE_SIZE = 4096;
const DEFAULT_PAYLOAD_FILE_THRESHOLD = 65536;

export function payloadFileThresholdOf(options: SqliteSessionStoreOptions): number {
  const threshold = options.payloadFileThreshold ?? DEFAULT_PAYLOAD_FILE_THRESHOLD;
  if (threshold !== Number.POSITIVE_INFINITY && (!Number.isSafeInteger(threshold) || threshold < 1)) {
    throw new TypeError("payloadFileThreshold must be a positive integer or Infinity");
  }
  return threshold;
}

const DEFAULT_MAX_PACKED_ROW_BYTES = 16384;

export function maxPackedRowBytesOf(options: SqliteSessionStoreOptions): number {
  const bytes = options.maxPackedRowBytes ?? DEFAULT_MAX_PACKED_ROW_BYTES;
  if (!Number.isSafeInteger(bytes) || bytes < 0) throw new TypeError("maxPackedRowBytes must be a non-negative integer");
  return bytes;
}

export function pageSizeOf(options: SqliteSessionStoreOptions): number {
  const size = options.pageSize ?? DEFAULT_PAGE_SIZE;
  if (!Number.isSafeInteger(size) || size < 4096 || size > 65536 || (size & (size - 1)) !== 0) {
    throw new TypeError("pageSize must be a power of two from 4096 to 65536");
  }
  return size;
}

export function checkpointPagesOf(options: SqliteSessionStoreOptions): number {
  const pages = options.checkpointPages ?? DEFAULT_CHECKPOINT_PAGES;
  if (!Number.isSafeInteger(pages) || pages < 1) throw new TypeError("checkpointPages must be a positive integer");
  return pages;
}
