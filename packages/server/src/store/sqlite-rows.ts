/**
 * Rows of the SQLite store as better-sqlite3 returns them (safe integers on),
 * and their conversion to the records of `session-store.ts`.
 */
import type { ServerCancelReason, StreamDirection } from "@golem-stream/wire";
import type {
  ElementKind,
  InputChunk,
  InputTerminal,
  JournalEntry,
  OutputEvent,
  SessionRecord,
  SessionState,
  StreamParent,
  StreamRecord,
} from "./session-store.js";
import { packedInputChunks, packedOutputItems, type PackedRow } from "./packed-rows.js";

export interface SessionRow {
  session_id: string;
  account: string;
  principal: string;
  application: string;
  environment: string;
  agent_type: string;
  agent_identity: string;
  method: string;
  idempotency_key: string;
  selector: string;
  config: string;
  parameters: string;
  generation: bigint;
  session_token: string;
  stream_key_id: string;
  state: string;
  result: string | null;
  outcome: string | null;
  created_at: bigint;
  finished_at: bigint | null;
}

export interface StreamRow {
  stream_id: string;
  session_id: string;
  ordinal: bigint;
  direction: string;
  element_kind: string;
  element_graph: string;
  coordinate: string;
  provisional_ref: string | null;
  parent_kind: string;
  parent_stream_id: string | null;
  parent_sequence: bigint | null;
  token: string;
  count: bigint;
  input_terminal: string | null;
  output_terminal: bigint;
}

export interface AttemptRow {
  attempt_id: string;
  operation: string;
  descriptor_digest: string;
  session_id: string;
  generation: bigint;
}

export interface InputRow {
  stream_id: string;
  sequence: bigint;
  item_count: bigint;
  data: Buffer;
  mime_type: string | null;
  payload_offset: bigint | null;
  payload_length: bigint | null;
  /** Set when the row packs several appends (`packed-rows.ts`). */
  parts: Buffer | null;
}

export interface OutputRow {
  stream_id: string;
  sequence: bigint;
  event: string;
  item_count: bigint;
  data: Buffer | null;
  mime_type: string | null;
  outcome: string | null;
  payload_offset: bigint | null;
  payload_length: bigint | null;
  /** Set when the row packs several items (`packed-rows.ts`). */
  parts: Buffer | null;
}

export function toSession(row: SessionRow): SessionRecord {
  return {
    sessionId: row.session_id,
    account: row.account,
    principal: row.principal,
    application: row.application,
    environment: row.environment,
    agentType: row.agent_type,
    agentIdentity: row.agent_identity,
    method: row.method,
    idempotencyKey: row.idempotency_key,
    selector: row.selector,
    config: row.config,
    parameters: row.parameters,
    generation: row.generation,
    sessionToken: row.session_token,
    streamKeyId: row.stream_key_id,
    state: row.state as SessionState,
    result: row.result ?? undefined,
    outcome: row.outcome ?? undefined,
    createdAt: Number(row.created_at),
    finishedAt: row.finished_at === null ? undefined : Number(row.finished_at),
  };
}

export function toParent(row: StreamRow): StreamParent {
  if (row.parent_kind === "item" && row.parent_stream_id !== null && row.parent_sequence !== null) {
    return { kind: "item", streamId: row.parent_stream_id, sequence: row.parent_sequence };
  }
  return row.parent_kind === "result" ? { kind: "result" } : { kind: "params" };
}

export function toStream(row: StreamRow): StreamRecord {
  return {
    streamId: row.stream_id,
    sessionId: row.session_id,
    ordinal: Number(row.ordinal),
    direction: row.direction as StreamDirection,
    elementKind: row.element_kind as ElementKind,
    elementGraph: row.element_graph,
    coordinate: row.coordinate,
    provisionalRef: row.provisional_ref ?? undefined,
    parent: toParent(row),
    token: row.token,
    count: row.count,
    inputTerminal: row.input_terminal === null ? undefined : decodeInputTerminal(row.input_terminal),
    outputTerminal: row.output_terminal !== 0n,
  };
}

export function encodeInputTerminal(terminal: InputTerminal): string {
  return terminal.kind === "end" ? "end" : `cancelled:${terminal.by}:${terminal.reason}`;
}

export function decodeInputTerminal(text: string): InputTerminal {
  if (text === "end") return { kind: "end" };
  const [, by, reason] = text.split(":");
  return { kind: "cancelled", by: by === "client" ? "client" : "server", reason: reason as ServerCancelReason };
}

/** Reads the bytes of a row whose payload is in a file. */
export type PayloadReader = (row: InputRow | OutputRow) => Uint8Array | undefined;

function bytesOf(data: Buffer | null): Uint8Array {
  return data === null ? new Uint8Array(0) : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

export function toChunk(row: InputRow, readPayload: PayloadReader): InputChunk {
  return {
    streamId: row.stream_id,
    sequence: row.sequence,
    itemCount: row.item_count,
    data: readPayload(row) ?? bytesOf(row.data),
    mimeType: row.mime_type ?? undefined,
  };
}

/** Appends the chunks of `row` that overlap `[from, to)`: the row's own, or those it packs. */
export function pushChunks(row: InputRow, readPayload: PayloadReader, from: bigint, to: bigint, out: InputChunk[]): void {
  if (row.parts === null) {
    if (row.sequence < to && row.sequence + row.item_count > from) out.push(toChunk(row, readPayload));
    return;
  }
  // A packed row whose bytes are in a payload file: its chunks are views of the bytes the read fills.
  out.push(...packedInputChunks(packedRow(row, row.parts, readPayload(row)), from, to));
}

/** The items a packed row of `output_events` holds from sequence `from` on. */
export function packedEvents(row: OutputRow, parts: Buffer, from: bigint): Extract<OutputEvent, { event: "item" }>[] {
  return packedOutputItems(packedRow(row, parts), from);
}

/** A packed row as `packed-rows.ts` reads it; `fileBytes`: its bytes, when they are in a payload file. */
function packedRow(row: InputRow | OutputRow, parts: Buffer, fileBytes?: Uint8Array): PackedRow {
  const data = fileBytes ?? bytesOf(row.data);
  return { streamId: row.stream_id, sequence: row.sequence, itemCount: row.item_count, data, parts: bytesOf(parts) };
}

/** The payload bytes of a row that packs nothing, wherever they are kept. */
export function payloadLength(row: OutputRow): number {
  return row.payload_length === null ? (row.data?.length ?? 0) : Number(row.payload_length);
}

export function toEvent(row: OutputRow, readPayload: PayloadReader): OutputEvent {
  if (row.event === "terminal") {
    return { event: "terminal", streamId: row.stream_id, sequence: row.sequence, outcome: row.outcome ?? "" };
  }
  return {
    event: "item",
    streamId: row.stream_id,
    sequence: row.sequence,
    itemCount: row.item_count,
    data: readPayload(row) ?? bytesOf(row.data),
    mimeType: row.mime_type ?? undefined,
  };
}

export interface JournalRow {
  readonly session_id: string;
  readonly position: bigint;
  readonly name: string;
  readonly outcome: string;
}

export function toJournalEntry(row: JournalRow): JournalEntry {
  return { sessionId: row.session_id, position: Number(row.position), name: row.name, outcome: row.outcome };
}
