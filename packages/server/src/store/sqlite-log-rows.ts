/**
 * The rows of the SQLite store's two logs, in their tables' column order:
 * an input chunk, an output item or terminal, a packed row holding several
 * appends (`packed-rows.ts`), and `RecordAppend`, an append as the group
 * commit writes it in a run. A payload kept in a file (`payload-files.ts`)
 * leaves the row's data empty and points at its place.
 */
import type { LogAppend, WriteOutcome, WriteTask } from "./group-commit.js";
import type { PendingPayload } from "./payload-files.js";
import type { InputChunk, OutputEvent } from "./session-store.js";

const EMPTY = new Uint8Array(0);

/** The outcome of every append written in a run (one shared object: a burst of small items allocated one each). */
export const APPENDED: WriteOutcome = Object.freeze({ ok: true, value: undefined });

export const INPUT_COLUMNS = 8;
export const OUTPUT_COLUMNS = 10;

/** An input chunk's row of `input_chunks`, in column order (a payload in a file leaves the row's data empty). */
export function inputRow(chunk: InputChunk, payload: PendingPayload | undefined): unknown[] {
  return [
    chunk.streamId,
    chunk.sequence,
    chunk.itemCount,
    payload === undefined ? chunk.data : EMPTY,
    chunk.mimeType ?? null,
    payload?.ref.offset ?? null,
    payload?.ref.length ?? null,
    null,
  ];
}

/** A row of `input_chunks` holding several appends (`packed-rows.ts`). */
export function packedInputRow(streamId: string, sequence: bigint, itemCount: bigint, data: Uint8Array, parts: Uint8Array): unknown[] {
  return [streamId, sequence, itemCount, data, null, null, null, parts];
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

  row(): unknown[] {
    return this.log === "input"
      ? inputRow(this.record as InputChunk, this.payload)
      : outputItemRow(this.record as OutputItemEvent, this.payload);
  }
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
 * An input chunk that introduces no stream, as one object that is both its append and its
 * write (`run`: the chunk written on its own, when its run could not be), instead of an append
 * and a closure per chunk.
 */
export class InputAppendTask extends RecordAppend implements WriteTask {
  constructor(
    private readonly write: (chunk: InputChunk, payload: PendingPayload | undefined) => void,
    chunk: InputChunk,
    payload: PendingPayload | undefined,
  ) {
    super("input", chunk, payload);
  }

  run(): void {
    this.write(this.record as InputChunk, this.payload);
  }
}
