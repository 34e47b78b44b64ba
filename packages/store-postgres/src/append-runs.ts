/**
 * How the appends of a group become runs, and runs become rows.
 *
 * A run is consecutive appends of one stream, written by one statement in
 * one savepoint (`write-queue.ts`), in the order @golem-stream/server's
 * `writeOrder` gives: stream by stream between any two other writes.
 *
 * Within a run, appends without a MIME type share rows of up to a byte
 * bound (@golem-stream/server's `packRun`; reads split them back).
 *
 * Pure functions: appends in, order and rows out.
 */
import { continuesRun, joinParts, packRun } from "@golem-stream/server/store";

/** An input chunk or output item that only appends one row at the end of its stream's log. */
export interface RunAppend {
  readonly log: "input" | "output";
  readonly streamId: string;
  readonly sequence: bigint;
  readonly itemCount: bigint;
  readonly data: Uint8Array;
  readonly mimeType: string | undefined;
  /** The writer's ownership epoch (fenced), if it is the session's owner (@golem-stream/server's `OwnershipLostError`). */
  readonly epoch?: bigint | undefined;
}

/** Rows larger than this are written alone; a run carries at most `RUN_BYTES` of payload. */
export const RUN_ROW_BYTES = 16 * 1024;
export const RUN_BYTES = 1024 * 1024;

/**
 * How many appends from `appends[index]` on form one run (1: none): the same
 * stream, each continuing the last, none larger than `RUN_ROW_BYTES` (a
 * run's payloads travel as one bytea array, which `pg` sends as hex text, so
 * a 1 MiB batch is cheaper as its own statement: measured 50 against
 * 113 MiB/s), at most `RUN_BYTES` in all, all of one ownership epoch (a run
 * is checked once).
 */
export function runLength(appends: readonly (RunAppend | undefined)[], index: number): number {
  const first = appends[index];
  if (first === undefined || first.data.length > RUN_ROW_BYTES) return 1;
  let end = index + 1;
  let bytes = first.data.length;
  for (;;) {
    const append = appends[end];
    if (!continuesRun(appends[end - 1] as RunAppend, append) || append.epoch !== first.epoch) break;
    if (append.data.length > RUN_ROW_BYTES || bytes + append.data.length > RUN_BYTES) break;
    bytes += append.data.length;
    end++;
  }
  return end - index;
}

/** One row of a run's statement. */
export interface RunRow {
  readonly sequence: bigint;
  readonly itemCount: bigint;
  readonly data: Uint8Array;
  readonly mimeType: string | undefined;
  /** Set when the row packs several appends. */
  readonly parts: Uint8Array | undefined;
}

/** The rows of a run: appends without a MIME type share rows of up to `packedRowBytes` (0: none do, `packRun`). */
export function runRows(appends: readonly RunAppend[], packedRowBytes: number): RunRow[] {
  const one = ({ sequence, itemCount, data, mimeType }: RunAppend): RunRow => ({ sequence, itemCount, data, mimeType, parts: undefined });
  const packable = appends.map((append) => ({
    itemCount: append.itemCount,
    packable: append.mimeType === undefined ? append.data : undefined,
  }));
  return packRun(packable, packedRowBytes).map(([start, end]) => {
    const head = appends[start] as RunAppend;
    if (end - start === 1) return one(head);
    const { data, parts, itemCount } = joinParts(packable, start, end);
    return { sequence: head.sequence, itemCount, data, mimeType: undefined, parts };
  });
}
