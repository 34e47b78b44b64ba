/**
 * The typed form of every protocol message (sections 4-7). Decoders produce
 * these; `encodeMessage` consumes them. `version` is implicit: it is always 1
 * on the wire and never stored here. Unsigned 64-bit positions are `bigint`.
 * SchemaValue payloads are carried in their JSON shape (`SchemaValueJson`);
 * validating them against a schema is the job of `@golem-stream/schema-value`.
 */
import type { ErrorCode } from "./errors.js";
import type { JsonObject, JsonValue } from "./json.js";

/** The subprotocol the server must select (section 1). */
export const SUBPROTOCOL = "golem.agent-invocation.v1";
/** The session endpoint (section 1). */
export const SESSION_PATH = "/v1/agents/invoke-agent-session";
export const PROTOCOL_VERSION = 1;

/** A native SchemaValue node as JSON: exactly `kind` and `value` (section 3). */
export interface SchemaValueJson {
  readonly kind: string;
  readonly value: JsonValue;
}

/** A SchemaGraph as JSON (decisions section 1); structure is checked by schema-value. */
export type SchemaGraphJson = JsonObject;

/** Section 4.1. */
export interface Selector {
  readonly agentType: string;
  readonly application: string;
  readonly constructorParameters: SchemaValueJson;
  readonly environment: string;
  readonly method: string;
  /** Lower-case UUID; omitted rather than null. */
  readonly phantomId?: string;
}

/** Section 4.2: `value` is application JSON, never a SchemaValue. */
export interface ConfigEntry {
  readonly path: readonly string[];
  readonly value: JsonValue;
}

export type StreamDirection = "input" | "output";

export interface InputHighWater {
  readonly sequence: bigint;
  readonly terminal: boolean;
}

/** Section 4.3. `inputHighWater` is present exactly on input mappings. */
export interface StreamMapping {
  readonly channel: number;
  readonly direction: StreamDirection;
  readonly streamToken: string;
  readonly provisionalRef?: string;
  readonly inputHighWater?: InputHighWater;
}

export const CLIENT_CANCEL_REASONS = ["cancelled", "consumer-drop", "source-unavailable"] as const;
export type ClientCancelReason = (typeof CLIENT_CANCEL_REASONS)[number];

export const SERVER_CANCEL_REASONS = [
  "cancelled",
  "consumer-drop",
  "transport-detached",
  "source-unavailable",
  "producer-deleted",
  "invocation-failed",
  "protocol-error",
] as const;
export type ServerCancelReason = (typeof SERVER_CANCEL_REASONS)[number];

// ---- client to server, text (section 5) ----

export interface InvocationStart {
  readonly type: "invocationStart";
  readonly attemptId: string;
  readonly config: readonly ConfigEntry[];
  readonly idempotencyKey: string;
  readonly methodParameters: SchemaValueJson;
  readonly selector: Selector;
}

export interface ResumeAttach {
  readonly type: "resumeAttach";
  readonly attemptId: string;
  readonly operation: "resume" | "takeover";
  readonly outputCursors: readonly string[];
  readonly sessionToken: string;
}

export interface InputStreamItem {
  readonly type: "inputStreamItem";
  readonly channel: number;
  readonly sequence: bigint;
  readonly value: SchemaValueJson;
}

export interface InputStreamEnd {
  readonly type: "inputStreamEnd";
  readonly channel: number;
  /** The next expected logical item sequence. */
  readonly sequence: bigint;
}

export interface ClientStreamCancel {
  readonly type: "streamCancel";
  readonly channel: number;
  readonly reason: ClientCancelReason;
}

// ---- server to client, text (section 6) ----

export interface InvocationAccepted {
  readonly type: "invocationAccepted";
  readonly attemptId: string;
  readonly idempotencyKey: string;
  readonly mappings: readonly StreamMapping[];
  readonly sessionToken: string;
}

export interface InvocationRejected {
  readonly type: "invocationRejected";
  /** Omitted only when the first message could not be decoded far enough. */
  readonly attemptId?: string;
  readonly code: ErrorCode;
  readonly message: string;
  readonly retryable: boolean;
}

export type InvocationResultBody =
  { readonly kind: "none" } | { readonly kind: "value"; readonly graph: SchemaGraphJson; readonly value: SchemaValueJson };

export interface InvocationResult {
  readonly type: "invocationResult";
  readonly mappings: readonly StreamMapping[];
  readonly result: InvocationResultBody;
}

export interface OutputStreamItem {
  readonly type: "outputStreamItem";
  readonly channel: number;
  readonly cursorToken: string;
  readonly mappings: readonly StreamMapping[];
  readonly sequence: bigint;
  readonly value: SchemaValueJson;
}

/** An `outputStreamItem` without its value (see `encodeOutputStreamItemWithCanonicalValue`). */
export type OutputStreamItemHead = Omit<OutputStreamItem, "value">;

export type OutputOutcome =
  | { readonly kind: "ok" }
  | { readonly kind: "error"; readonly code: ErrorCode; readonly message: string }
  | { readonly kind: "cancelled"; readonly reason: ServerCancelReason };

export interface OutputStreamEnd {
  readonly type: "outputStreamEnd";
  readonly channel: number;
  /** Omitted only when the stream produced no durable event. */
  readonly cursorToken?: string;
  readonly outcome: OutputOutcome;
  /** The next expected logical item sequence. */
  readonly sequence: bigint;
}

export interface InputStreamAck {
  readonly type: "inputStreamAck";
  readonly channel: number;
  /** Count of durably accepted logical items. */
  readonly highestContiguousSequence: bigint;
  readonly mappings: readonly StreamMapping[];
  readonly terminal: boolean;
}

export interface ServerStreamCancel {
  readonly type: "streamCancel";
  readonly channel: number;
  readonly reason: ServerCancelReason;
}

export interface AttachmentRevoked {
  readonly type: "attachmentRevoked";
  readonly reason: "replaced";
}

export type InvocationOutcome =
  { readonly kind: "success" } | { readonly kind: "failure"; readonly code: ErrorCode; readonly message: string };

export interface InvocationFinished {
  readonly type: "invocationFinished";
  readonly outcome: InvocationOutcome;
}

// ---- binary messages (section 7, decisions section 3) ----
// `type` is the metadata `kind`. `itemCount` is derived, never stored: the
// payload length for packed u8, 1 for binary.

export interface InputU8Batch {
  readonly type: "input-u8";
  readonly channel: number;
  readonly sequence: bigint;
  /** 1 byte .. 1 MiB; each byte is one logical item. */
  readonly payload: Uint8Array;
}

export interface InputBinaryItem {
  readonly type: "input-binary";
  readonly channel: number;
  readonly sequence: bigint;
  readonly payload: Uint8Array;
  readonly mimeType?: string;
}

export interface OutputU8Batch {
  readonly type: "output-u8";
  readonly channel: number;
  readonly sequence: bigint;
  /** Identifies the final logical item of the batch. */
  readonly cursorToken: string;
  readonly payload: Uint8Array;
}

export interface OutputBinaryItem {
  readonly type: "output-binary";
  readonly channel: number;
  readonly sequence: bigint;
  readonly cursorToken: string;
  readonly payload: Uint8Array;
  readonly mimeType?: string;
}

export type ClientTextMessage = InvocationStart | ResumeAttach | InputStreamItem | InputStreamEnd | ClientStreamCancel;
export type ClientBinaryMessage = InputU8Batch | InputBinaryItem;
export type ClientMessage = ClientTextMessage | ClientBinaryMessage;

export type ServerTextMessage =
  | InvocationAccepted
  | InvocationRejected
  | InvocationResult
  | OutputStreamItem
  | OutputStreamEnd
  | InputStreamAck
  | ServerStreamCancel
  | AttachmentRevoked
  | InvocationFinished;
export type ServerBinaryMessage = OutputU8Batch | OutputBinaryItem;
export type ServerMessage = ServerTextMessage | ServerBinaryMessage;

export type BinaryMessage = ClientBinaryMessage | ServerBinaryMessage;
export type Message = ClientMessage | ServerMessage;
