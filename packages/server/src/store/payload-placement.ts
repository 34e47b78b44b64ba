/**
 * Where the SQLite store keeps a log's bytes: in the row, or in the session's payload file
 * (`payload-files.ts`). One append of `payloadFileThreshold` bytes or more goes to the file when
 * it is handed over; a run of small input chunks that joined one write (`InputAppendTask`) is
 * placed when its group is taken from the queue (`InputAppendTask.placePayload`), once it holds
 * `RUN_FILE_BYTES` or the threshold, whichever is lower. SQLite would write such bytes twice (WAL,
 * then checkpoint) on the event loop, in rows of overflow pages; the file takes them once, from
 * the thread pool, and the rows keep only their places (and a run's rows their part lists).
 * `payloadFileThreshold: Infinity` keeps every byte in the rows.
 */
import type { PayloadFiles, PendingPayload } from "./payload-files.js";
import type { RunPlacer } from "./sqlite-log-rows.js";

/**
 * A run of joined input chunks of at least this many bytes keeps them in its session's payload
 * file. Lower, a run of a few items would cost its group a device write before the commit for
 * little; at the 64 KiB of `payloadFileThreshold`, a stream of small items mostly stayed in
 * SQLite in runs of one turn's items (about 25 KiB), the event loop 1.2x busier per item than
 * here (`bench/item-path.mjs`): a run in a file makes its group wait for the file's write, so the
 * next run grows while it waits. A group that holds output places no run (`placePayloads` in
 * `group-commit.ts`): a round trip's output would wait for that write.
 */
export const RUN_FILE_BYTES = 16384;

export class PayloadPlacement {
  readonly #files: PayloadFiles;
  readonly #threshold: number;
  /** The session of a committed stream (undefined for one not committed yet: its bytes stay in the row). */
  readonly #sessionOf: (streamId: string) => string | undefined;

  constructor(files: PayloadFiles, threshold: number, sessionOf: (streamId: string) => string | undefined) {
    this.#files = files;
    this.#threshold = threshold;
    this.#sessionOf = sessionOf;
  }

  /** True when one append of `bytes` bytes goes to the file (and so joins no run). */
  isLarge(bytes: number): boolean {
    return bytes >= this.#threshold;
  }

  /** The place of one append's bytes in its session's file, or undefined to keep them in the row. */
  forAppend(streamId: string, data: Uint8Array): PendingPayload | undefined {
    return this.isLarge(data.byteLength) ? this.#reserve(streamId, data) : undefined;
  }

  /** `RunPlacer`: the place of a run's bytes, or undefined to keep them in its rows. */
  readonly forRun: RunPlacer = (streamId, bytes) => {
    const threshold = this.#threshold;
    if (threshold === Number.POSITIVE_INFINITY || bytes.byteLength < Math.min(RUN_FILE_BYTES, threshold)) return undefined;
    return this.#reserve(streamId, bytes);
  };

  #reserve(streamId: string, data: Uint8Array): PendingPayload | undefined {
    const sessionId = this.#sessionOf(streamId);
    if (sessionId === undefined || !this.#files.accepts(sessionId)) return undefined;
    return this.#files.reserve(sessionId, data);
  }
}
