/**
 * Packed log rows: a run of small appends of one stream, committed in one
 * group, written as a single row of its log.
 *
 * Why: a 64-byte item costs SQLite a row in the log's table and an entry in
 * its `(stream_id, sequence)` key index, and each entry is an insert through
 * both B-trees and their share of WAL pages. Small items arriving faster
 * than the disk syncs come in runs of hundreds per group commit; one row per
 * run of up to `maxPackedRowBytes` costs one insert instead of one per item.
 *
 * Layout: the row's `data` is the parts' bytes back to back, `sequence` the
 * first part's, `item_count` the sum of theirs, and `parts` the list of
 * (item count, byte length) of each part, as unsigned LEB128 varints. A row
 * with `parts` NULL is one append, as before packing. In the SQLite store,
 * a packed row of a run of input kept in a payload file has empty `data`
 * and points at its bytes there (`InputAppendTask.placePayload`); its part
 * list is the same. Only appends whose
 * bytes are in the row and that carry no MIME type are packed; reads split a
 * packed row back into exactly the chunks or events that were appended, so
 * nothing outside the SQLite store sees the difference.
 *
 * Pure functions: bytes in, records out.
 */
import type { InputChunk, OutputEvent } from "./session-store.js";

/** One append inside a packed row. */
export interface PackedPart {
  readonly sequence: bigint;
  readonly itemCount: bigint;
  readonly data: Uint8Array;
}

/** What packing needs of an append: its bytes when the row may be packed (held in the row, no MIME type). */
export interface PackableAppend {
  readonly itemCount: bigint;
  readonly packable: Uint8Array | undefined;
}

/**
 * Cuts a run of consecutive appends of one stream into rows: each entry is
 * the `[start, end)` indexes of the appends one row holds. Consecutive
 * packable appends share a row while their bytes and their entries in the
 * row's part list total at most `maxBytes`; every other append is a row of
 * its own. `maxBytes` 0 packs nothing (not even empty appends).
 *
 * The part list counts because a store sizes rows by `maxBytes` to keep
 * them within a page (PostgreSQL compresses or moves out of line a row that
 * is not): for items of a few bytes the list is a third of the row.
 */
export function packRun(run: readonly PackableAppend[], maxBytes: number): [number, number][] {
  const rows: [number, number][] = [];
  let start = 0;
  let bytes = 0;
  // The append before's bytes, read once.
  let previous: Uint8Array | undefined;
  for (let i = 0; i < run.length; i++) {
    const append = run[i] as PackableAppend;
    const packable = append.packable;
    const size = packable === undefined ? 0 : packable.byteLength + varintLength(append.itemCount) + varintLength(packable.byteLength);
    const joins = maxBytes > 0 && packable !== undefined && i > start && previous !== undefined && bytes + size <= maxBytes;
    if (!joins && i > start) {
      rows.push([start, i]);
      start = i;
      bytes = 0;
    }
    bytes += size;
    previous = packable;
  }
  if (start < run.length) rows.push([start, run.length]);
  return rows;
}

/** A packed row of `run[start..end)`: its parts' bytes back to back, their list, and their item count. */
export function joinParts(
  run: readonly PackableAppend[],
  start: number,
  end: number,
): { data: Uint8Array; parts: Uint8Array; itemCount: bigint } {
  let total = 0;
  let partsLength = 0;
  for (let i = start; i < end; i++) {
    const append = run[i] as PackableAppend;
    const packable = append.packable;
    if (packable === undefined) throw new TypeError("only packable appends share a row");
    total += packable.byteLength;
    partsLength += varintLength(append.itemCount) + varintLength(packable.byteLength);
  }
  // Written straight into their arrays: no object or bigint per part.
  const data = new Uint8Array(total);
  const parts = new Uint8Array(partsLength);
  let at = 0;
  let partsAt = 0;
  // Counts summed as numbers while exact (a bigint sum made a bigint per part), the rest as bigints.
  let counted = 0;
  let items = 0n;
  for (let i = start; i < end; i++) {
    const append = run[i] as PackableAppend;
    const itemCount = append.itemCount;
    const packable = append.packable as Uint8Array;
    data.set(packable, at);
    at += packable.byteLength;
    const count = Number(itemCount);
    if (itemCount <= MAX_SAFE_BIGINT && counted + count <= Number.MAX_SAFE_INTEGER) counted += count;
    else items += itemCount;
    partsAt = writeVarint(parts, writeVarint(parts, partsAt, itemCount), packable.byteLength);
  }
  return { data, parts, itemCount: items + BigInt(counted) };
}

/** Thrown when a packed row does not describe its own bytes (a damaged database). */
export class PackedRowError extends Error {
  override readonly name = "PackedRowError";
}

/** Bytes of `value` as an unsigned LEB128 varint. */
export function varintLength(value: bigint | number): number {
  let length = 1;
  if (typeof value === "number") {
    for (let rest = value; rest >= 0x80; rest = Math.floor(rest / 0x80)) length++;
    return length;
  }
  for (let rest = value; rest >= 0x80n; rest >>= 7n) length++;
  return length;
}

/** Writes `value` (a byte length or an item count) as an unsigned LEB128 varint at `at`; returns where it ends. */
export function writeVarint(out: Uint8Array, at: number, value: bigint | number): number {
  let pos = at;
  // Below 2^53 (byte lengths, nearly all item counts) without bigint arithmetic.
  if (typeof value === "number" || value <= MAX_SAFE_BIGINT) {
    let rest = Number(value);
    while (rest >= 0x80) {
      out[pos++] = (rest % 0x80) | 0x80;
      rest = Math.floor(rest / 0x80);
    }
    out[pos++] = rest;
    return pos;
  }
  let rest = value;
  while (rest >= 0x80n) {
    out[pos++] = Number(rest & 0x7fn) | 0x80;
    rest >>= 7n;
  }
  out[pos++] = Number(rest);
  return pos;
}

const MAX_SAFE_BIGINT = BigInt(Number.MAX_SAFE_INTEGER);

/** A u64 takes at most 10 LEB128 bytes. */
const MAX_VARINT_BYTES = 10;

/**
 * Splits a packed row into its parts. Checks that the parts cover the row's
 * bytes and items exactly, so a damaged row fails here instead of being
 * replayed wrong.
 */
export function splitPacked(sequence: bigint, itemCount: bigint, data: Uint8Array, parts: Uint8Array): PackedPart[] {
  const out: PackedPart[] = [];
  let at = 0;
  let offset = 0;
  let next = sequence;
  const readVarint = (): bigint => {
    let value = 0n;
    for (let shift = 0n, read = 0; read < MAX_VARINT_BYTES; shift += 7n, read++) {
      const byte = parts[at++];
      if (byte === undefined) break;
      value |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return value;
    }
    throw new PackedRowError(`the packed row at sequence ${sequence} has a truncated part list`);
  };
  while (at < parts.length) {
    const count = readVarint();
    const length = Number(readVarint());
    if (count < 1n || offset + length > data.byteLength) {
      throw new PackedRowError(`the packed row at sequence ${sequence} lists a part past its bytes`);
    }
    out.push({ sequence: next, itemCount: count, data: data.subarray(offset, offset + length) });
    next += count;
    offset += length;
  }
  if (offset !== data.byteLength || next !== sequence + itemCount || out.length === 0) {
    throw new PackedRowError(`the packed row at sequence ${sequence} lists parts that do not add up to it`);
  }
  return out;
}

/**
 * The parts of a packed row that overlap the items `[from, to)`, checked exactly as `splitPacked`
 * checks the whole row (the same `PackedRowError`s): the whole part list is walked, but only the
 * parts in the range become objects. A read of one item (a resend's duplicate check, a replay's
 * first row) out of a row of hundreds cost a `bigint` per varint and an object per part.
 */
export function splitPackedRange(
  sequence: bigint,
  itemCount: bigint,
  data: Uint8Array,
  parts: Uint8Array,
  from: bigint,
  to: bigint,
): PackedPart[] {
  if (itemCount > MAX_SAFE_BIGINT) {
    return splitPacked(sequence, itemCount, data, parts).filter((part) => part.sequence < to && part.sequence + part.itemCount > from);
  }
  // Item positions within the row, as numbers (exact: the row holds fewer than 2^53 items).
  const total = Number(itemCount);
  const low = from <= sequence ? 0 : from - sequence >= itemCount ? total : Number(from - sequence);
  const high = to <= sequence ? 0 : to - sequence >= itemCount ? total : Number(to - sequence);
  const out: PackedPart[] = [];
  let at = 0;
  let offset = 0;
  let position = 0;
  while (at < parts.length) {
    const count = readVarintNumber(parts, at, sequence);
    at = varintEnd;
    const length = readVarintNumber(parts, at, sequence);
    at = varintEnd;
    if (count < 1 || offset + length > data.byteLength) {
      throw new PackedRowError(`the packed row at sequence ${sequence} lists a part past its bytes`);
    }
    // More items than the row holds: it does not add up (and past 2^53 the sum would not be exact).
    if (position + count > total) {
      throw new PackedRowError(`the packed row at sequence ${sequence} lists parts that do not add up to it`);
    }
    if (position < high && position + count > low) {
      out.push({ sequence: sequence + BigInt(position), itemCount: BigInt(count), data: data.subarray(offset, offset + length) });
    }
    position += count;
    offset += length;
  }
  if (offset !== data.byteLength || position !== total || at === 0) {
    throw new PackedRowError(`the packed row at sequence ${sequence} lists parts that do not add up to it`);
  }
  return out;
}

/** Where the varint `readVarintNumber` read last ends (one number, no pair per call). */
let varintEnd = 0;

/** The LEB128 varint at `at`, as a number (past 2^53 only approximately: larger than any count the caller accepts). */
function readVarintNumber(parts: Uint8Array, at: number, sequence: bigint): number {
  let value = 0;
  let scale = 1;
  for (let read = 0; read < MAX_VARINT_BYTES; read++) {
    const byte = parts[at + read];
    if (byte === undefined) break;
    value += (byte & 0x7f) * scale;
    scale *= 0x80;
    if ((byte & 0x80) === 0) {
      varintEnd = at + read + 1;
      return value;
    }
  }
  throw new PackedRowError(`the packed row at sequence ${sequence} has a truncated part list`);
}

/** A packed row as a store reads it back: the stream, its first sequence, item count, bytes and part list. */
export interface PackedRow {
  readonly streamId: string;
  readonly sequence: bigint;
  readonly itemCount: bigint;
  readonly data: Uint8Array;
  readonly parts: Uint8Array;
}

/** The input chunks a packed row holds that overlap `[from, to)`, as they were appended. */
export function packedInputChunks(row: PackedRow, from: bigint, to: bigint): InputChunk[] {
  const chunks: InputChunk[] = [];
  for (const part of splitPackedRange(row.sequence, row.itemCount, row.data, row.parts, from, to)) {
    chunks.push({ streamId: row.streamId, sequence: part.sequence, itemCount: part.itemCount, data: part.data, mimeType: undefined });
  }
  return chunks;
}

/** The output items a packed row holds from sequence `from` on, as they were appended. */
export function packedOutputItems(row: PackedRow, from: bigint): Extract<OutputEvent, { event: "item" }>[] {
  const items: Extract<OutputEvent, { event: "item" }>[] = [];
  for (const part of splitPackedRange(row.sequence, row.itemCount, row.data, row.parts, from, row.sequence + row.itemCount)) {
    if (part.sequence >= from) {
      items.push({
        event: "item",
        streamId: row.streamId,
        sequence: part.sequence,
        itemCount: part.itemCount,
        data: part.data,
        mimeType: undefined,
      });
    }
  }
  return items;
}
