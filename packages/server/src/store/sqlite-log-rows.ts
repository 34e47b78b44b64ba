/**
 * The rows of the SQLite store's two logs, in their tables' column order:
 * an input chunk, an output item or terminal, a packed row holding several
 * appends (`packed-rows.ts`), and `RecordAppend`, an append as the group
 * commit writes it in a run. A payload kept in a file (`payload-files.ts`)
 * leaves the row's data empty and points at its place; so does a packed
 * row whose run of input went to the file (`InputAppendTask.placePayload`).
 */
import type { LogAppend, WriteOutcome, WriteTask } from "./group-commit.js";
import { joinParts, packRun } from "./packed-rows.js";
import type { PendingPayload } from "./payload-files.js";
import { RunPacker, type PackedRunRow } from "./run-packer.js";
import type { InputChunk, OutputEvent } from "./session-store.js";

const EMPTY = new Uint8Array(0);

/** The outcome of every append written in a run (one shared object: a burst of small items allocated one each). */
export const APPENDED: WriteOutcome = Object.freeze({ ok: true, value: undefined });

export const INPUT_COLUMNS = 8;
export const OUTPUT_COLUMNS = 10;

/** Where a row's bytes lie in its session's payload file: `length` bytes at `offset` (`PayloadRef` is one). */
export interface PayloadPlace {
  readonly offset: number;
  readonly length: number;
}

/** An input chunk's row of `input_chunks`, in column order (bytes at a place in a payload file leave the row's data empty). */
export function inputRow(chunk: InputChunk, place: PayloadPlace | undefined): unknown[] {
  return [
    chunk.streamId,
    chunk.sequence,
    chunk.itemCount,
    place === undefined ? chunk.data : EMPTY,
    chunk.mimeType ?? null,
    place?.offset ?? null,
    place?.length ?? null,
    null,
  ];
}

/** Gives the bytes of a run of a stream's input their place in its session's payload file; undefined keeps them in the database's rows. */
export type RunPlacer = (streamId: string, bytes: Uint8Array) => PendingPayload | undefined;

/** A row of `input_chunks` holding several appends (`packed-rows.ts`); their bytes `data`, or at `place` in the payload file. */
export function packedInputRow(
  streamId: string,
  sequence: bigint,
  itemCount: bigint,
  data: Uint8Array,
  parts: Uint8Array,
  place?: PayloadPlace,
): unknown[] {
  return place === undefined
    ? [streamId, sequence, itemCount, data, null, null, null, parts]
    : [streamId, sequence, itemCount, EMPTY, null, place.offset, place.length, parts];
}

type OutputItemEvent = Extract<OutputEvent, { event: "item" }>;

/** An input chunk or output item that introduces no stream, as the group commit writes it (its row made only if it is not packed). */
export class RecordAppend implements LogAppend {
  readonly streamId: string;
  readonly sequence: bigint;
  readonly itemCount: bigint;
  readonly packable: Uint8Array | undefined;

  constructor(
    readonly log: "input" | "output",
    protected readonly record: InputChunk | OutputItemEvent,
    protected readonly payload: PendingPayload | undefined,
  ) {
    this.streamId = record.streamId;
    this.sequence = record.sequence;
    this.itemCount = record.itemCount;
    this.packable = payload === undefined && record.mimeType === undefined ? record.data : undefined;
  }

  rows(): unknown[][] {
    return [
      this.log === "input"
        ? inputRow(this.record as InputChunk, this.payload?.ref)
        : outputItemRow(this.record as OutputItemEvent, this.payload),
    ];
  }
}

/**
 * The rows of a run of appends of one log and stream: consecutive packable
 * appends share packed rows of at most `maxBytes` (`packed-rows.ts`), every
 * other append is written as its own rows.
 */
export function runRows(appends: readonly LogAppend[], maxBytes: number): (readonly unknown[])[] {
  const rows: (readonly unknown[])[] = [];
  const log = appends[0]?.log ?? "input";
  for (const [start, end] of packRun(appends, maxBytes)) {
    const first = appends[start] as LogAppend;
    if (end - start === 1) {
      for (const row of first.rows(maxBytes)) rows.push(row);
      continue;
    }
    const { data, parts, itemCount } = joinParts(appends, start, end);
    rows.push(
      log === "input"
        ? packedInputRow(first.streamId, first.sequence, itemCount, data, parts)
        : packedOutputRow(first.streamId, first.sequence, itemCount, data, parts),
    );
  }
  return rows;
}

/** A row of `output_events` holding several items (`packed-rows.ts`). */
export function packedOutputRow(streamId: string, sequence: bigint, itemCount: bigint, data: Uint8Array, parts: Uint8Array): unknown[] {
  return [streamId, sequence, "item", itemCount, data, null, null, null, null, parts];
}

/** An output item's row of `output_events`, in column order. */
export function outputItemRow(event: Extract<OutputEvent, { event: "item" }>, payload: PendingPayload | undefined): unknown[] {
  return [
    event.streamId,
    event.sequence,
    "item",
    event.itemCount,
    payload === undefined ? event.data : EMPTY,
    event.mimeType ?? null,
    null,
    payload?.ref.offset ?? null,
    payload?.ref.length ?? null,
    null,
  ];
}

/** An output terminal's row of `output_events`, in column order. */
export function outputTerminalRow(event: Extract<OutputEvent, { event: "terminal" }>): unknown[] {
  return [event.streamId, event.sequence, "terminal", 0, null, null, event.outcome, null, null, null];
}

/**
 * An input chunk that introduces no stream, as one object that is both its
 * append and its write (`run`: written on its own, when its run could not
 * be), instead of an append and a closure per chunk.
 *
 * While it waits in the group commit's queue, the chunks that continue its
 * stream may join it (`join`, `SessionStore.joinInputWatched`): under a burst
 * of small items of one stream, a group then holds one write, one watcher
 * and one outcome per stream and turn instead of one per item. Its chunks
 * are written as the same rows as if each had been appended alone (packed
 * rows of at most the store's `maxPackedRowBytes`: `runRows`), so a read
 * cannot tell the difference.
 */
export class InputAppendTask implements LogAppend, WriteTask {
  readonly log = "input";
  readonly streamId: string;
  readonly sequence: bigint;
  packable: Uint8Array | undefined;
  /** Its chunks packed into rows as they join (`run-packer.ts`); undefined while none has joined. */
  #packer: RunPacker | undefined;
  /** The rows, once asked for (a group retried, or a run written again one write at a time, asks again). */
  #rows: (readonly unknown[])[] | undefined;
  /** The sequence after its last chunk: one bigint sum per joined chunk, where checking its place and adding its count made two. */
  #end: bigint;

  /**
   * `maxPackedRowBytes`: the store's bound on a packed row, which the chunks that join are packed to
   * as they come. `placeRun`: gives the bytes of a run of joined chunks their place in a payload
   * file, or undefined to keep them in the rows (a run too small, a session without a file).
   */
  constructor(
    private readonly write: (task: InputAppendTask) => void,
    private readonly chunk: InputChunk,
    private readonly payload: PendingPayload | undefined,
    private readonly maxPackedRowBytes: number,
    private readonly placeRun?: RunPlacer,
  ) {
    this.streamId = chunk.streamId;
    this.sequence = chunk.sequence;
    this.#end = chunk.sequence + chunk.itemCount;
    this.packable = payload === undefined && chunk.mimeType === undefined ? chunk.data : undefined;
  }

  get itemCount(): bigint {
    return this.#packer === undefined ? this.chunk.itemCount : this.#end - this.sequence;
  }

  /**
   * Takes `next` into this write when both may share packed rows (their
   * bytes in their rows, no MIME type) and `next` continues this write's
   * items; false (and nothing changed) otherwise. The caller hands over only
   * a chunk whose bytes belong in its row.
   */
  join(next: InputChunk): boolean {
    if (this.payload !== undefined || this.chunk.mimeType !== undefined || next.mimeType !== undefined) return false;
    if (next.streamId !== this.streamId || next.sequence !== this.#end || this.#rows !== undefined) return false;
    if (this.#packer === undefined) {
      this.#packer = new RunPacker(this.maxPackedRowBytes);
      this.#packer.add(this.chunk);
    }
    this.#packer.add(next);
    this.#end = next.sequence + next.itemCount;
    // Written as its own packed rows from now on, not packed with its neighbours as one part.
    this.packable = undefined;
    return true;
  }

  /**
   * Its chunks' rows: packed rows of at most `maxPackedRowBytes`, cut exactly as `runRows` cuts a
   * run of them appended one by one; their bytes in a payload file once `placePayload` put them
   * there.
   */
  rows(): (readonly unknown[])[] {
    const packer = this.#packer;
    if (packer === undefined) return [inputRow(this.chunk, this.payload?.ref)];
    this.#rows ??= runRowsOf(packer.rows(), undefined);
    return this.#rows;
  }

  /**
   * `WriteTask.placePayload`: a run of joined chunks that `placeRun` gives a place in its session's
   * payload file keeps its bytes there (written from the packer's buffer, where they lie back to
   * back), and its rows (the same cuts, the same part lists) point at their slices of it. Nothing
   * joins the run after this. A failure to place it (the file cannot be looked at) leaves its
   * bytes in the rows.
   */
  placePayload(): PendingPayload | undefined {
    const packer = this.#packer;
    if (packer === undefined || this.placeRun === undefined || this.#rows !== undefined) return undefined;
    const rows = packer.rows();
    let placed: PendingPayload | undefined;
    try {
      placed = this.placeRun(this.streamId, packer.bytes());
    } catch {
      placed = undefined;
    }
    if (placed === undefined) return undefined;
    this.#rows = runRowsOf(rows, placed.ref.offset);
    return placed;
  }

  run(): void {
    this.write(this);
  }
}

/**
 * The rows of a packed run: a row of one chunk, or a packed row. With `fileOffset`, the run's
 * bytes lie from there in the payload file, each row's slice after the one before it.
 */
function runRowsOf(rows: readonly PackedRunRow[], fileOffset: number | undefined): (readonly unknown[])[] {
  let offset = fileOffset ?? 0;
  return rows.map((row) => {
    const place = fileOffset === undefined ? undefined : { offset, length: row.data.byteLength };
    offset += row.data.byteLength;
    return row.parts === undefined
      ? inputRow(row.first, place)
      : packedInputRow(row.first.streamId, row.first.sequence, row.itemCount, row.data, row.parts, place);
  });
}
