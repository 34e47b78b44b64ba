/**
 * How the appends of a group become runs, and runs become rows.
 *
 * A run is consecutive appends of one stream, written by one statement in
 * one savepoint (`write-queue.ts`). A round-trip method interleaves two
 * streams in every group (input item, output item, input item, ...), so
 * runs are taken per stream across a stretch of appends: appends of
 * different streams touch different rows (their stream's count, their own
 * log rows), so writing one stream's before another's changes nothing, and
 * each stream's appends keep their order. Any other write is a barrier.
 *
 * Within a run, appends without a MIME type share rows of up to a byte
 * bound (@golem-stream/server's `packRun`; reads split them back).
 *
 * Pure functions: appends in, order and rows out.
 */
import { joinParts, packRun } from "@golem-stream/server";

/** An input chunk or output item that only appends one row at the end of its stream's log. */
export interface RunAppend {
  readonly log: "input" | "output";
  readonly streamId: string;
  readonly sequence: bigint;
  readonly itemCount: bigint;
  readonly data: Uint8Array;
  readonly mimeType: string | undefined;
}

/** Rows larger than this are written alone; a run carries at most `RUN_BYTES` of payload. */
export const RUN_ROW_BYTES = 16 * 1024;
export const RUN_BYTES = 1024 * 1024;

/**
 * The order to write a group in, as indexes into it: each stretch of
 * appends with the appends of one stream together, streams in the order
 * they first appear; every other write where it was.
 */
export function writeOrder(appends: readonly (RunAppend | undefined)[]): number[] {
  const order: number[] = [];
  let at = 0;
  while (at < appends.length) {
    if (appends[at] === undefined) {
      order.push(at++);
      continue;
    }
    let end = at;
    const byStream = new Map<string, number[]>();
    for (; end < appends.length; end++) {
      const append = appends[end];
      if (append === undefined) break;
      const key = `${append.log}:${append.streamId}`;
      const indexes = byStream.get(key);
      if (indexes === undefined) byStream.set(key, [end]);
      else indexes.push(end);
    }
    for (const indexes of byStream.values()) order.push(...indexes);
    at = end;
  }
  return order;
}

/**
 * How many appends from `appends[index]` on form one run (1: none): the same
 * stream, each continuing the last, none larger than `RUN_ROW_BYTES` (a
 * run's payloads travel as one bytea array, which `pg` sends as hex text, so
 * a 1 MiB batch is cheaper as its own statement: measured 50 against
 * 113 MiB/s), at most `RUN_BYTES` in all.
 */
export function runLength(appends: readonly (RunAppend | undefined)[], index: number): number {
  const first = appends[index];
  if (first === undefined || first.data.length > RUN_ROW_BYTES) return 1;
  let end = index + 1;
  let next = first.sequence + first.itemCount;
  let bytes = first.data.length;
  for (;;) {
    const append = appends[end];
    if (append === undefined || append.log !== first.log || append.streamId !== first.streamId || append.sequence !== next) break;
    if (append.data.length > RUN_ROW_BYTES || bytes + append.data.length > RUN_BYTES) break;
    bytes += append.data.length;
    next += append.itemCount;
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

/** The rows of a run: appends without a MIME type share rows of up to `packedRowBytes` (0: none do). */
export function runRows(appends: readonly RunAppend[], packedRowBytes: number): RunRow[] {
  const one = ({ sequence, itemCount, data, mimeType }: RunAppend): RunRow => ({ sequence, itemCount, data, mimeType, parts: undefined });
  if (packedRowBytes === 0) return appends.map(one);
  const packable = appends.map((append) => ({ itemCount: append.itemCount, packable: append.mimeType === undefined ? append.data : undefined }));
  return packRun(packable, packedRowBytes).map(([start, end]) => {
    const head = appends[start] as RunAppend;
    if (end - start === 1) return one(head);
    const { data, parts, itemCount } = joinParts(packable, start, end);
    return { sequence: head.sequence, itemCount, data, mimeType: undefined, parts };
  });
}
