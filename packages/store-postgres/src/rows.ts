/**
 * Rows as node-postgres returns them (`bigint` columns as decimal strings,
 * `bytea` as Buffer) and their conversion to the records of the server's
 * `SessionStore` contract. Every bigint is converted exactly with `BigInt`.
 */
import type {
  AttemptOperation,
  AttemptRecord,
  ElementKind,
  InputChunk,
  InputTerminal,
  OutputEvent,
  SessionRecord,
  SessionState,
  StreamParent,
  StreamRecord,
} from "@golem-stream/server/store";
import { packedInputChunks, packedOutputItems, type PackedRow } from "@golem-stream/server/store";

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
  generation: string;
  session_token: string;
  stream_key_id: string;
  state: string;
  result: string | null;
  outcome: string | null;
  created_at: string;
  finished_at: string | null;
}

export interface StreamRow {
  stream_id: string;
  session_id: string;
  ordinal: number;
  direction: string;
  element_kind: string;
  element_graph: string;
  coordinate: string;
  provisional_ref: string | null;
  parent_kind: string;
  parent_stream_id: string | null;
  parent_sequence: string | null;
  token: string;
  count: string;
  input_terminal: string | null;
  output_terminal: boolean;
}

export interface AttemptRow {
  attempt_id: string;
  operation: string;
  descriptor_digest: string;
  session_id: string;
  generation: string;
}

export interface InputRow {
  stream_id: string;
  sequence: string;
  item_count: string;
  data: Buffer;
  mime_type: string | null;
  /** Set when the row packs several appends (schema version 2; @golem-stream/server's `splitPacked`). */
  parts: Buffer | null;
}

export interface OutputRow {
  stream_id: string;
  sequence: string;
  event: string;
  item_count: string;
  data: Buffer | null;
  mime_type: string | null;
  outcome: string | null;
  /** Set when the row packs several items. */
  parts: Buffer | null;
}

/** A millisecond time stored as bigint: a JS number, exactly, or an error. */
function millis(text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw new RangeError(`stored time ${text} is not a safe integer`);
  return value;
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
    generation: BigInt(row.generation),
    sessionToken: row.session_token,
    streamKeyId: row.stream_key_id,
    state: row.state as SessionState,
    result: row.result ?? undefined,
    outcome: row.outcome ?? undefined,
    createdAt: millis(row.created_at),
    finishedAt: row.finished_at === null ? undefined : millis(row.finished_at),
  };
}

export function toAttempt(row: AttemptRow): AttemptRecord {
  return {
    attemptId: row.attempt_id,
    operation: row.operation as AttemptOperation,
    descriptorDigest: row.descriptor_digest,
    sessionId: row.session_id,
    generation: BigInt(row.generation),
  };
}

function toParent(row: StreamRow): StreamParent {
  if (row.parent_kind === "item" && row.parent_stream_id !== null && row.parent_sequence !== null) {
    return { kind: "item", streamId: row.parent_stream_id, sequence: BigInt(row.parent_sequence) };
  }
  return row.parent_kind === "result" ? { kind: "result" } : { kind: "params" };
}

export function toStream(row: StreamRow): StreamRecord {
  return {
    streamId: row.stream_id,
    sessionId: row.session_id,
    ordinal: row.ordinal,
    direction: row.direction === "output" ? "output" : "input",
    elementKind: row.element_kind as ElementKind,
    elementGraph: row.element_graph,
    coordinate: row.coordinate,
    provisionalRef: row.provisional_ref ?? undefined,
    parent: toParent(row),
    token: row.token,
    count: BigInt(row.count),
    inputTerminal: row.input_terminal === null ? undefined : decodeInputTerminal(row.input_terminal),
    outputTerminal: row.output_terminal,
  };
}

/** Same text as the SQLite store: `end` or `cancelled:<by>:<reason>`. */
export function encodeInputTerminal(terminal: InputTerminal): string {
  return terminal.kind === "end" ? "end" : `cancelled:${terminal.by}:${terminal.reason}`;
}

export function decodeInputTerminal(text: string): InputTerminal {
  if (text === "end") return { kind: "end" };
  const [, by, reason] = text.split(":");
  return {
    kind: "cancelled",
    by: by === "client" ? "client" : "server",
    reason: reason as Extract<InputTerminal, { kind: "cancelled" }>["reason"],
  };
}

/** A copy: node-postgres may decode small values into a shared pool buffer. */
function bytesOf(data: Buffer | null): Uint8Array {
  return data === null ? new Uint8Array(0) : new Uint8Array(data);
}

export function toChunk(row: InputRow): InputChunk {
  return {
    streamId: row.stream_id,
    sequence: BigInt(row.sequence),
    itemCount: BigInt(row.item_count),
    data: bytesOf(row.data),
    mimeType: row.mime_type ?? undefined,
  };
}

export function toEvent(row: OutputRow): OutputEvent {
  if (row.event === "terminal") {
    return { event: "terminal", streamId: row.stream_id, sequence: BigInt(row.sequence), outcome: row.outcome ?? "" };
  }
  return {
    event: "item",
    streamId: row.stream_id,
    sequence: BigInt(row.sequence),
    itemCount: BigInt(row.item_count),
    data: bytesOf(row.data),
    mimeType: row.mime_type ?? undefined,
  };
}

/** Appends the chunks of `row` that overlap `[from, to)`: the row's own, or those it packs. */
export function pushChunks(row: InputRow, from: bigint, to: bigint, out: InputChunk[]): void {
  if (row.parts === null) out.push(toChunk(row));
  else out.push(...packedInputChunks(packedRow(row, row.parts), from, to));
}

/** The events of `row` from `from` on: its own (if it starts there or later), or those it packs. */
export function eventsFrom(row: OutputRow, from: bigint): OutputEvent[] {
  if (row.parts === null) return BigInt(row.sequence) < from ? [] : [toEvent(row)];
  return packedOutputItems(packedRow(row, row.parts), from);
}

function packedRow(row: InputRow | OutputRow, parts: Buffer): PackedRow {
  return {
    streamId: row.stream_id,
    sequence: BigInt(row.sequence),
    itemCount: BigInt(row.item_count),
    data: bytesOf(row.data),
    parts: bytesOf(parts),
  };
}
