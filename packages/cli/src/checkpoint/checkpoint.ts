/**
 * CLI checkpoint v1 (protocol section 13): what a restarted `golem-stream`
 * needs to claim its session again and continue output exactly where the
 * terminal, file or pipe stopped receiving it — and nothing else.
 *
 * It holds only public protocol data: the selector, the idempotency key, the
 * opaque session token, the cursor of the last output event delivered on
 * each output stream, the frozen resume/takeover in flight, and evidence of
 * the protocol and method schema it was written against. Never attachment ids,
 * generations, offsets, internal stream ids, fingerprints or key material:
 * those stay inside the opaque tokens the server signed.
 *
 * `encodeCheckpoint` and `decodeCheckpoint` are pure: data in, text out, and
 * back. The decoder treats the file as hostile (it may be truncated, edited
 * or from another version) and throws only `ProtocolError`.
 */
import { LIMITS, ProtocolError, SUBPROTOCOL, canonicalJson, getMember, parseStrictJson } from "@golem-stream/wire";
import type { JsonObject, JsonValue, ResumeAttach, Selector, SchemaValueJson } from "@golem-stream/wire";
import { expectArray, expectLiteral, expectObject, expectString, invalid } from "./json-reader.js";

export const CHECKPOINT_VERSION = 1;

/**
 * A resume or takeover that was sent but neither accepted nor rejected: its
 * outcome is uncertain, so a restarted CLI resends exactly this descriptor
 * with the same attempt id (protocol section 9).
 */
export interface PendingOperation {
  readonly operation: "resume" | "takeover";
  readonly attemptId: string;
  readonly sessionToken: string;
  readonly outputCursors: readonly string[];
}

export interface Checkpoint {
  readonly selector: Selector;
  readonly idempotencyKey: string;
  /** The session token of the latest accepted attach. */
  readonly sessionToken: string;
  /** The cursor of the last delivered event of each output stream that delivered anything. */
  readonly outputCursors: readonly string[];
  readonly pending?: PendingOperation;
  /** Lower-case hex SHA-256 of the canonical method signature the arguments were encoded against. */
  readonly methodSchemaDigest: string;
}

/**
 * Size of the largest valid checkpoint: the selector is bounded by the text
 * message it travelled in, plus two lists of at most one maximal cursor token
 * per stream.
 */
export const MAX_CHECKPOINT_BYTES =
  LIMITS.maxTextMessageBytes + 2 * LIMITS.maxStreamsPerSession * (LIMITS.maxTokenBytes + 8);

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const TOKEN = /^gai1_[A-Za-z0-9_-]+$/;
const SHA256_HEX = /^[0-9a-f]{64}$/;

/**
 * Canonical JSON text of the checkpoint, newline-terminated so `cat` shows
 * it cleanly. Throws only `ProtocolError` (`invalid-message`) for anything
 * that is not a valid checkpoint, so an invalid file is never written.
 */
export function encodeCheckpoint(checkpoint: Checkpoint): string {
  let document: JsonObject;
  try {
    document = checkpointDocument(checkpoint);
  } catch (cause) {
    if (cause instanceof ProtocolError) throw cause;
    throw new ProtocolError("invalid-message", "checkpoint: not a checkpoint object", { cause, path: "checkpoint" });
  }
  // Round-trip through the decoder so an invalid checkpoint is never written.
  const text = canonicalJson(document);
  decodeCheckpoint(text);
  return `${text}\n`;
}

function checkpointDocument(checkpoint: Checkpoint): JsonObject {
  const document: JsonObject = {
    version: CHECKPOINT_VERSION,
    protocol: { subprotocol: SUBPROTOCOL, version: 1 },
    schema: { methodDigest: checkpoint.methodSchemaDigest },
    selector: selectorJson(checkpoint.selector),
    idempotencyKey: checkpoint.idempotencyKey,
    sessionToken: checkpoint.sessionToken,
    outputCursors: [...checkpoint.outputCursors],
  };
  if (checkpoint.pending !== undefined) document["pending"] = pendingJson(checkpoint.pending);
  return document;
}

export interface DecodeCheckpointOptions {
  /** Largest accepted input in bytes. Default: `MAX_CHECKPOINT_BYTES`, the size of the largest valid checkpoint. */
  readonly maxBytes?: number;
}

/** Parses and validates checkpoint v1 text or bytes. Throws only `ProtocolError`. */
export function decodeCheckpoint(input: string | Uint8Array, options: DecodeCheckpointOptions = {}): Checkpoint {
  const root = expectObject(
    parseStrictJson(input, { maxBytes: options.maxBytes ?? MAX_CHECKPOINT_BYTES, what: "checkpoint" }),
    "checkpoint",
    ["version", "protocol", "schema", "selector", "idempotencyKey", "sessionToken", "outputCursors"],
    ["pending"],
  );
  const version = getMember(root, "version");
  if (version !== CHECKPOINT_VERSION) {
    throw new ProtocolError(
      "invalid-message",
      "checkpoint.version: this CLI reads checkpoint version 1 only",
      { path: "checkpoint.version" },
    );
  }
  const protocol = expectObject(getMember(root, "protocol"), "checkpoint.protocol", ["subprotocol", "version"]);
  expectLiteral(getMember(protocol, "subprotocol"), "checkpoint.protocol.subprotocol", SUBPROTOCOL);
  expectLiteral(getMember(protocol, "version"), "checkpoint.protocol.version", 1);
  const schema = expectObject(getMember(root, "schema"), "checkpoint.schema", ["methodDigest"]);
  const methodSchemaDigest = expectString(getMember(schema, "methodDigest"), "checkpoint.schema.methodDigest");
  if (!SHA256_HEX.test(methodSchemaDigest)) throw invalid("checkpoint.schema.methodDigest", "must be 64 lower-case hex digits");

  const selector = decodeSelector(getMember(root, "selector"), "checkpoint.selector");
  const idempotencyKey = decodeIdempotencyKey(getMember(root, "idempotencyKey"), "checkpoint.idempotencyKey");
  const sessionToken = decodeToken(getMember(root, "sessionToken"), "checkpoint.sessionToken");
  const outputCursors = decodeCursorList(getMember(root, "outputCursors"), "checkpoint.outputCursors");
  const pendingJsonValue = getMember(root, "pending");
  const pending = pendingJsonValue === undefined ? undefined : decodePending(pendingJsonValue, "checkpoint.pending");
  return {
    selector,
    idempotencyKey,
    outputCursors,
    methodSchemaDigest,
    sessionToken,
    ...(pending === undefined ? {} : { pending }),
  };
}

function decodeSelector(value: JsonValue | undefined, path: string): Selector {
  const object = expectObject(
    value,
    path,
    ["agentType", "application", "constructorParameters", "environment", "method"],
    ["phantomId"],
  );
  const text = (name: string): string => expectString(getMember(object, name), `${path}.${name}`, { minBytes: 1 });
  const phantomId = getMember(object, "phantomId");
  if (phantomId !== undefined) decodeUuid(phantomId, `${path}.phantomId`, false);
  return {
    agentType: text("agentType"),
    application: text("application"),
    constructorParameters: decodeSchemaValueShape(getMember(object, "constructorParameters"), `${path}.constructorParameters`),
    environment: text("environment"),
    method: text("method"),
    ...(typeof phantomId === "string" ? { phantomId } : {}),
  };
}

/** Only the `{kind, value}` envelope is checked here; the server validates the value against the pinned schema. */
function decodeSchemaValueShape(value: JsonValue | undefined, path: string): SchemaValueJson {
  const object = expectObject(value, path, ["kind", "value"]);
  const kind = expectString(getMember(object, "kind"), `${path}.kind`, { minBytes: 1 });
  return { kind, value: getMember(object, "value") as JsonValue };
}

function decodeIdempotencyKey(value: JsonValue | undefined, path: string): string {
  return expectString(value, path, { minBytes: 1, maxBytes: LIMITS.maxIdempotencyKeyBytes });
}

function decodeToken(value: JsonValue | undefined, path: string): string {
  const token = expectString(value, path, { minBytes: 1, maxBytes: LIMITS.maxTokenBytes });
  if (!TOKEN.test(token)) throw invalid(path, "is not a gai1_ token");
  return token;
}

function decodeUuid(value: JsonValue | undefined, path: string, requireV4: boolean): string {
  const text = expectString(value, path, { maxBytes: 36 });
  const pattern = requireV4 ? UUID_V4 : /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
  if (!pattern.test(text)) throw invalid(path, requireV4 ? "must be a lower-case UUIDv4" : "must be a lower-case UUID");
  return text;
}

/** At most one cursor per output stream, so never more than the session's streams, and no duplicates (protocol 5.2). */
function decodeCursorList(value: JsonValue | undefined, path: string): string[] {
  const cursors = expectArray(value, path, LIMITS.maxStreamsPerSession).map((c, i) => decodeToken(c, `${path}[${i}]`));
  if (new Set(cursors).size !== cursors.length) throw invalid(path, "has duplicates");
  return cursors;
}

function decodePending(value: JsonValue, path: string): PendingOperation {
  const object = expectObject(value, path, ["operation", "attemptId", "sessionToken", "outputCursors"]);
  const operation = getMember(object, "operation");
  if (operation !== "resume" && operation !== "takeover") {
    throw invalid(`${path}.operation`, 'must be "resume" or "takeover"');
  }
  return {
    operation,
    attemptId: decodeUuid(getMember(object, "attemptId"), `${path}.attemptId`, true),
    sessionToken: decodeToken(getMember(object, "sessionToken"), `${path}.sessionToken`),
    outputCursors: decodeCursorList(getMember(object, "outputCursors"), `${path}.outputCursors`),
  };
}

export function selectorJson(selector: Selector): JsonObject {
  const json: JsonObject = {
    agentType: selector.agentType,
    application: selector.application,
    constructorParameters: { kind: selector.constructorParameters.kind, value: selector.constructorParameters.value },
    environment: selector.environment,
    method: selector.method,
  };
  if (selector.phantomId !== undefined) json["phantomId"] = selector.phantomId;
  return json;
}

function pendingJson(pending: PendingOperation): JsonObject {
  return {
    operation: pending.operation,
    attemptId: pending.attemptId,
    sessionToken: pending.sessionToken,
    outputCursors: [...pending.outputCursors],
  };
}

/** The resumeAttach a pending resume or takeover froze (protocol 5.2). */
export function pendingAsResumeAttach(pending: PendingOperation): ResumeAttach {
  return {
    type: "resumeAttach",
    attemptId: pending.attemptId,
    operation: pending.operation,
    outputCursors: pending.outputCursors,
    sessionToken: pending.sessionToken,
  };
}
