/**
 * Large log payloads of the SQLite store, kept outside its pages: one
 * append-only file per session in `<dataDir>/payloads/`, the database row
 * holding only (offset, length).
 *
 * Why: SQLite writes a blob twice (into the WAL, then into the database at
 * the checkpoint), page by page, with the event loop blocked in both and in
 * the `fsync` of each. A packed `stream<u8>` batch of 1 MiB cost about 3 ms
 * that way; written here once, by libuv's thread pool, to a file opened with
 * `O_DSYNC` (each write returns synced), it costs well under 1 ms and the
 * event loop keeps reading the socket meanwhile. On Linux the file is opened
 * `O_DIRECT` too, the bytes written from staging buffers, not through the
 * page cache (`payload-direct-io.ts`).
 *
 * Durability rule: the bytes are written and synced (and a new file's
 * directory entry with them) before the commit of the row that points at
 * them, so a committed row never points at bytes that a crash could lose.
 * A crash between the two leaves bytes that no row references at the end of
 * a file: wasted, never read. Files of sessions the database no longer has
 * (a crash between a purge's commit and its unlink) are removed at open.
 */
import { closeSync, constants, mkdirSync, openSync, read, readdirSync, statSync, unlinkSync } from "node:fs";
import { open, unlink, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { alignUp, DIRECT_IO_ALIGNMENT, SHARED_STAGING, writeRunDirect } from "./payload-direct-io.js";

/** Where a payload lives: `length` bytes at `offset` of its session's file. */
export interface PayloadRef {
  readonly sessionId: string;
  readonly offset: number;
  readonly length: number;
}

/** `bytes.byteLength` bytes to be read from `offset` of a session's file (`PayloadFiles.readInto`). */
export interface PayloadRead {
  readonly offset: number;
  readonly bytes: Uint8Array;
}

/** A payload that has its place but is not on disk yet. */
export interface PendingPayload {
  readonly ref: PayloadRef;
  readonly data: Uint8Array;
}

/** Session ids become file names only when they cannot name anything else. */
const SAFE_NAME = /^[0-9A-Za-z_-]{1,128}$/;

/**
 * On Linux a write to a file opened O_DSYNC returns as `fdatasync` would, the device's cache
 * flushed. Elsewhere it may promise less (on macOS libuv's `datasync` is `F_FULLFSYNC`, which an
 * O_DSYNC write is not), so there each group's writes are followed by an explicit `datasync`.
 */
export const WRITES_RETURN_SYNCED = process.platform === "linux" && typeof constants.O_DSYNC === "number";

/** Direct I/O (`payload-direct-io.ts`) is Linux's `O_DIRECT`; elsewhere payloads go through the page cache. */
export const DIRECT_IO_AVAILABLE = process.platform === "linux" && typeof constants.O_DIRECT === "number";

export interface PayloadFilesOptions {
  /** O_DSYNC writes (default `WRITES_RETURN_SYNCED`), or plain writes and a `datasync` after each group's. */
  readonly writesReturnSynced?: boolean | undefined;
  /**
   * Write payloads with direct I/O, not through the page cache (default `DIRECT_IO_AVAILABLE`).
   * Payloads then start at offsets aligned to `DIRECT_IO_ALIGNMENT`. A file system that refuses
   * direct I/O is written through the page cache from then on, the layout kept.
   */
  readonly directIo?: boolean | undefined;
  /** How a file is opened for writing (default `open` of `node:fs/promises`): tests refuse O_DIRECT through it, as a file system may. */
  readonly openFile?: (path: string, flags: number, mode: number) => Promise<FileHandle>;
}

export class PayloadFiles {
  readonly #dir: string;
  /** The end of each session's file as this process has laid it out. */
  readonly #ends = new Map<string, number>();
  /** Files first written by this process (created now, or found from an earlier one) whose directory it has not synced since. */
  readonly #fresh = new Set<string>();
  /** Files kept open between groups, because more of their payloads were waiting to be written. */
  readonly #open = new Map<string, FileHandle>();
  /** Files whose close is under way. */
  readonly #closing = new Set<Promise<void>>();

  readonly #writesReturnSynced: boolean;
  readonly #openFlags: number;
  /** Payloads start at aligned offsets: direct I/O was asked for (kept if it is later refused). */
  readonly #aligned: boolean;
  /** Direct writes, until the file system or the memory refuses them. */
  #direct: boolean;
  readonly #staging = SHARED_STAGING;
  readonly #openFileAt: (path: string, flags: number, mode: number) => Promise<FileHandle>;
  /** The open files that were opened with `O_DIRECT`. */
  readonly #directFiles = new WeakSet<FileHandle>();

  constructor(dir: string, options: PayloadFilesOptions = {}) {
    this.#writesReturnSynced = (options.writesReturnSynced ?? WRITES_RETURN_SYNCED) && typeof constants.O_DSYNC === "number";
    this.#openFlags = constants.O_RDWR | constants.O_CREAT | (this.#writesReturnSynced ? constants.O_DSYNC : 0);
    this.#aligned = (options.directIo ?? DIRECT_IO_AVAILABLE) && DIRECT_IO_AVAILABLE;
    this.#direct = this.#aligned;
    this.#openFileAt = options.openFile ?? open;
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.#dir = dir;
  }

  /** True while payloads are written with direct I/O (false once a file system refused it). */
  get directIo(): boolean {
    return this.#direct;
  }

  /** How many files are held open between groups (at most `MAX_FILES_KEPT_OPEN`). */
  get keptOpen(): number {
    return this.#open.size;
  }

  /** True if payloads of this session may go to a file (its id is a safe file name). */
  accepts(sessionId: string): boolean {
    return SAFE_NAME.test(sessionId);
  }

  /**
   * Gives `data` its place at the end of the session's file. Places are
   * handed out in call order; `writeDurably` must put the bytes there before
   * any row that points at them commits.
   */
  reserve(sessionId: string, data: Uint8Array): PendingPayload {
    if (!this.accepts(sessionId)) throw new Error("session id is not a safe payload file name");
    const end = this.#ends.get(sessionId) ?? this.#sizeOnDisk(sessionId);
    const offset = this.#aligned ? alignUp(end) : end;
    this.#ends.set(sessionId, offset + data.byteLength);
    return { ref: { sessionId, offset, length: data.byteLength }, data };
  }

  /** Writes the payloads at their places and syncs every file they touch (and the directory, for new files). */
  async writeDurably(payloads: readonly PendingPayload[]): Promise<void> {
    const bySession = new Map<string, PendingPayload[]>();
    for (const payload of payloads) {
      const list = bySession.get(payload.ref.sessionId);
      if (list === undefined) bySession.set(payload.ref.sessionId, [payload]);
      else list.push(payload);
    }
    // Every file's write settles before this does, failed or not: the next group's writes must not
    // start while one of this group's is still running on a file it holds.
    const written = await Promise.allSettled([...bySession].map(([sessionId, list]) => this.#writeFile(sessionId, list)));
    for (const outcome of written) if (outcome.status === "rejected") throw outcome.reason;
    if ([...bySession.keys()].some((sessionId) => this.#fresh.has(sessionId))) {
      await syncDirectory(this.#dir);
      for (const sessionId of bySession.keys()) this.#fresh.delete(sessionId);
    }
  }

  async #writeFile(sessionId: string, payloads: readonly PendingPayload[]): Promise<void> {
    // With O_DSYNC each write returns once its bytes are on disk, and the file stays open while the
    // session keeps uploading: a group costs one trip to the thread pool (the write) instead of four
    // (open, write, sync, close). Each trip waits for the event loop to take its completion, and on
    // a busy loop (a large upload hashed as it arrives) those waits, not the disk, set the pace of
    // the group commit.
    let file = this.#take(sessionId) ?? (await this.#openFile(sessionId));
    let end = 0;
    try {
      let written = false;
      if (this.#directFiles.has(file)) {
        const staging = this.#direct ? await this.#staging.take() : undefined;
        if (staging === undefined) {
          // Refused since this file was opened (it was held open), or no aligned memory.
          file = await this.#reopenBuffered(sessionId, file);
        } else {
          try {
            // A direct run spans the padding between its payloads: it is written whole blocks at a time.
            for (const run of adjacentRuns(payloads, DIRECT_IO_ALIGNMENT)) end = await writeRunDirect(file, run, staging);
            written = true;
          } catch (error) {
            if ((error as NodeJS.ErrnoException).code !== "EINVAL") throw error;
            // Refused (alignment the device does not take, a file system without it): the same bytes,
            // at the same places, through the page cache, from now on.
            file = await this.#reopenBuffered(sessionId, file);
          } finally {
            this.#staging.give(staging);
          }
        }
      }
      // Each run of adjacent payloads is one positional `writev`: one call takes the file's lock
      // once. Several writes to one file at once from the thread pool contend for its inode lock,
      // and the kernel spins waiting for it (a tenth of the server's CPU on `digest` on ext4). Runs
      // are written one after another; a run's bytes never wait for a turn of the event loop.
      if (!written) for (const run of adjacentRuns(payloads)) end = await writeRun(file, run);
      if (!this.#writesReturnSynced) await file.datasync();
    } catch (error) {
      this.#closeLater(file);
      throw error;
    }
    // Kept open only while the session has more payloads on their way (places handed out past what
    // was just written) and within the bound; an idle session's file is closed, so a file renamed,
    // replaced or removed meanwhile is opened afresh by its next write.
    const more = (this.#ends.get(sessionId) ?? 0) > end;
    if (more && this.#open.size < MAX_FILES_KEPT_OPEN) this.#open.set(sessionId, file);
    else this.#closeLater(file);
  }

  /** Opens a session's file for writing: with direct I/O unless it has been refused. */
  async #openFile(sessionId: string): Promise<FileHandle> {
    if (this.#direct) {
      try {
        const file = await this.#openFileAt(this.#path(sessionId), this.#openFlags | constants.O_DIRECT, 0o600);
        this.#directFiles.add(file);
        return file;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EINVAL") throw error;
        this.#direct = false;
      }
    }
    return this.#openFileAt(this.#path(sessionId), this.#openFlags, 0o600);
  }

  /** Direct I/O was refused: this writer goes through the page cache from now on, starting with `file`'s session. */
  #reopenBuffered(sessionId: string, file: FileHandle): Promise<FileHandle> {
    this.#direct = false;
    this.#closeLater(file);
    return this.#openFile(sessionId);
  }

  /** Closes every file this writer holds open and waits for the closes (at the store's close). */
  async close(): Promise<void> {
    for (const file of this.#open.values()) this.#closeLater(file);
    this.#open.clear();
    await this.#closed();
  }

  async #closed(): Promise<void> {
    while (this.#closing.size > 0) await Promise.all(this.#closing);
  }

  /** The session's file if it is held open, no longer held: its taker writes to it or closes it. */
  #take(sessionId: string): FileHandle | undefined {
    const file = this.#open.get(sessionId);
    this.#open.delete(sessionId);
    return file;
  }

  #closeLater(file: FileHandle): void {
    const closing = file
      .close()
      // The writes that matter returned synced, or failed on their own; a close has nothing left to lose.
      .catch(() => undefined)
      .finally(() => this.#closing.delete(closing));
    this.#closing.add(closing);
  }

  /**
   * Fills each read's `bytes` with those at its `offset` of the session's file, read from the
   * thread pool: a file written with direct I/O is not in the page cache, and a read of it waits for
   * the disk. The file is opened before this returns, in the turn that read the rows pointing into
   * it, so a purge that unlinks it afterwards cannot take the bytes away.
   */
  readInto(sessionId: string, reads: readonly PayloadRead[]): Promise<void> {
    const fd = openSync(this.#path(sessionId), "r");
    return readAll(fd, sessionId, reads).finally(() => closeSync(fd));
  }

  /** Deletes the files of purged sessions (their rows are gone already). */
  async remove(sessionIds: readonly string[]): Promise<void> {
    // Some systems (Windows) refuse to delete a file that is still open.
    for (const sessionId of sessionIds) {
      const file = this.#take(sessionId);
      if (file !== undefined) this.#closeLater(file);
    }
    await this.#closed();
    for (const sessionId of sessionIds) {
      this.#ends.delete(sessionId);
      this.#fresh.delete(sessionId);
      if (!this.accepts(sessionId)) continue;
      await unlink(this.#path(sessionId)).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== "ENOENT") throw error;
      });
    }
  }

  /** Deletes every file whose session `isLive` denies: left by a crash between a purge's commit and its unlink. */
  sweep(isLive: (sessionId: string) => boolean): void {
    for (const name of readdirSync(this.#dir)) {
      if (SAFE_NAME.test(name) && !isLive(name)) unlinkSync(join(this.#dir, name));
    }
  }

  #path(sessionId: string): string {
    return join(this.#dir, sessionId);
  }

  /**
   * The size of a file this process has not written yet (0 if there is none). Either way its
   * directory is synced after its first write here: a file that is there may be one an earlier
   * process created and was killed before syncing the directory, its entry still only in the
   * kernel's cache, and rows committed now would point into a file a power loss could remove.
   */
  #sizeOnDisk(sessionId: string): number {
    this.#fresh.add(sessionId);
    try {
      return statSync(this.#path(sessionId)).size;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      return 0;
    }
  }
}

/**
 * Files kept open at once for sessions still uploading; past it a file is closed after each group,
 * as every file is once its session has nothing more waiting.
 */
export const MAX_FILES_KEPT_OPEN = 64;

/** A file's `writev` takes at most IOV_MAX (1024 on Linux) buffers per call. */
export const MAX_BUFFERS_PER_WRITE = 1024;

/**
 * Payloads in runs where each starts where the one before it ends, rounded up to `alignment` (in
 * reservation order, nearly always one run).
 */
export function adjacentRuns(payloads: readonly PendingPayload[], alignment = 1): PendingPayload[][] {
  const runs: PendingPayload[][] = [];
  let run: PendingPayload[] = [];
  let end = -1;
  for (const payload of payloads) {
    if (payload.ref.offset !== end || run.length === MAX_BUFFERS_PER_WRITE) {
      if (run.length > 0) runs.push(run);
      run = [];
    }
    run.push(payload);
    end = alignUp(payload.ref.offset + payload.ref.length, alignment);
  }
  if (run.length > 0) runs.push(run);
  return runs;
}

/** Writes one run at its place, resuming after a short write until every byte is down; returns where the run ends. */
async function writeRun(file: FileHandle, run: readonly PendingPayload[]): Promise<number> {
  let buffers = run.map((payload) => payload.data);
  let position = run[0]!.ref.offset;
  while (buffers.length > 0) {
    const { bytesWritten } = await file.writev(buffers, position);
    // A regular file takes at least one byte or fails (ENOSPC, EIO); never loop on nothing.
    if (bytesWritten === 0) throw new Error(`payload file write at ${position} took no bytes`);
    position += bytesWritten;
    buffers = remainderAfter(buffers, bytesWritten);
  }
  return position;
}

/** What is left of `buffers` once their first `written` bytes are down. */
export function remainderAfter(buffers: readonly Uint8Array[], written: number): Uint8Array[] {
  const rest: Uint8Array[] = [];
  let skip = written;
  for (const buffer of buffers) {
    if (skip >= buffer.byteLength) skip -= buffer.byteLength;
    else {
      rest.push(skip === 0 ? buffer : buffer.subarray(skip));
      skip = 0;
    }
  }
  return rest;
}

/** Reads each of `reads` in turn from `fd`, resuming after a short read; a file that ends first fails. */
async function readAll(fd: number, sessionId: string, reads: readonly PayloadRead[]): Promise<void> {
  for (const { offset, bytes } of reads) {
    for (let done = 0; done < bytes.byteLength;) {
      const n = await readAt(fd, bytes, done, offset + done);
      if (n === 0) throw new Error(`payload file of session ${sessionId} ends before the bytes sessions.db points at`);
      done += n;
    }
  }
}

function readAt(fd: number, bytes: Uint8Array, from: number, position: number): Promise<number> {
  return new Promise((resolve, reject) =>
    read(fd, bytes, from, bytes.byteLength - from, position, (error, n) => (error === null ? resolve(n) : reject(error))),
  );
}

/** Makes a new file's directory entry durable. */
async function syncDirectory(path: string): Promise<void> {
  let directory;
  try {
    directory = await open(path, "r");
    await directory.sync();
  } catch (error) {
    // Windows cannot open a directory for syncing, and some file systems refuse fsync on one: there
    // the entry's durability is the file system's own (its metadata journal), as for every database.
    const code = (error as { code?: unknown }).code;
    if (code !== "EISDIR" && code !== "EPERM" && code !== "EINVAL" && code !== "ENOTSUP") throw error;
  } finally {
    await directory?.close();
  }
}
