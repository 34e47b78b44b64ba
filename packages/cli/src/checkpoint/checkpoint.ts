/**
 * CLI checkpoint v1 (protocol section 13): what a restarted `golem-stream`
 * needs to claim its session again and continue output exactly where the
 * terminal, file or pipe stopped receiving it — and nothing else.
 *
 * It holds only public protocol data: the selector, the idempotency key, the
 * opaque session token, the cursor of the last output event delivered on
 * each output stream, the frozen operation in flight, and evidence of the
 * protocol and method schema it was written against. Never attachment ids,
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

/** The cursor of the last output event (item, packed batch or terminal) written to the user. */
export interface DeliveredCursor {
  /** The stable opaque token of the output stream (protocol 4.3). */
  readonly streamToken: string;
  /** The opaque cursor token of the last delivered event of that stream. */
  readonly cursorToken: string;
}

/**
 * The frozen first message of an operation that may be in flight. A
 * restarted CLI resends exactly this, with the same attempt id (protocol
 * section 9): a start is kept as its complete wire JSON, a resume or
 * takeover as its descriptor.
 */
export type PendingOperation =
  | { readonly operation: "start"; readonly attemptId: string; readonly message: JsonObject }
  | {
      readonly operation: "resume" | "takeover";
      readonly attemptId: string;
      readonly sessionToken: string;
      readonly outputCursors: readonly string[];
    };

export interface Checkpoint {
  readonly selector: Selector;
  readonly idempotencyKey: string;
  /** Absent until the server accepted the start. */
  readonly sessionToken?: string;
  /** At most one per output stream, in the order streams were first delivered. */
  readonly outputCursors: readonly DeliveredCursor[];
  readonly pending?: PendingOperation;
  /** Lower-case hex SHA-256 of the canonical method signature the arguments were encoded against. */
  readonly methodSchemaDigest: string;
}

/**
 * Size of the largest valid checkpoint: a frozen start is at most one text
 * message, plus two maximal tokens for each of the session's streams.
 */
export const MAX_CHECKPOINT_BYTES =
  LIMITS.maxTextMessageBytes + LIMITS.maxStreamsPerSession * 2 * (LIMITS.maxTokenBytes + 64) + 64 * 1024;

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const TOKEN = /^gai1_[A-Za-z0-9_-]+$/;
const SHA256_HEX = /^[0-9a-f]{64}$/;

/** Canonical JSON text of the checkpoint, newline-terminated so `cat` shows it cleanly. */
export function encodeCheckpoint(checkpoint: Checkpoint): string {
  const document: JsonObject = {
    version: CHECKPOINT_VERSION,
    protocol: { subprotocol: SUBPROTOCOL, version: 1 },
    schema: { methodDigest: checkpoint.methodSchemaDigest },
    selector: selectorJson(checkpoint.selector),
    idempotencyKey: checkpoint.idempotencyKey,
    outputCursors: checkpoint.outputCursors.map((c) => ({ streamToken: c.streamToken, cursorToken: c.cursorToken })),
  };
  if (checkpoint.sessionToken !== undefined) document["sessionToken"] = checkpoint.sessionToken;
  if (checkpoint.pending !== undefined) document["pending"] = pendingJson(checkpoint.pending);
  // Round-trip through the decoder so an invalid checkpoint is never written.
  const text = canonicalJson(document);
  decodeCheckpoint(text);
  return `${text}\n`;
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
    ["version", "protocol", "schema", "selector", "idempotencyKey", "outputCursors"],
    ["sessionToken", "pending"],
  );
  const version = getMember(root, "version");
  if (version !== CHECKPOINT_VERSION) {
    throw new ProtocolError(
      "invalid-message",
      `checkpoint.version: this CLI reads checkpoint version 1, the file says ${JSON.stringify(version)}`,
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
  const sessionTokenJson = getMember(root, "sessionToken");
  const sessionToken = sessionTokenJson === undefined ? undefined : decodeToken(sessionTokenJson, "checkpoint.sessionToken");
  const outputCursors = decodeCursors(getMember(root, "outputCursors"), "checkpoint.outputCursors");
  const pendingJsonValue = getMember(root, "pending");
  const pending = pendingJsonValue === undefined ? undefined : decodePending(pendingJsonValue, "checkpoint.pending");

  if (sessionToken === undefined && (pending === undefined || pending.operation !== "start")) {
    throw invalid("checkpoint.sessionToken", "is required once the start is no longer pending");
  }
  if (sessionToken === undefined && outputCursors.length > 0) {
    throw invalid("checkpoint.outputCursors", "cannot exist before the start was accepted");
  }
  if (pending?.operation === "start") checkStartMatches(pending.message, selector, idempotencyKey);
  return {
    selector,
    idempotencyKey,
    outputCursors,
    methodSchemaDigest,
    ...(sessionToken === undefined ? {} : { sessionToken }),
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

function decodeCursors(value: JsonValue | undefined, path: string): DeliveredCursor[] {
  const entries = expectArray(value, path, LIMITS.maxStreamsPerSession);
  const seenStreams = new Set<string>();
  return entries.map((entry, index) => {
    const at = `${path}[${index}]`;
    const object = expectObject(entry, at, ["streamToken", "cursorToken"]);
    const streamToken = decodeToken(getMember(object, "streamToken"), `${at}.streamToken`);
    const cursorToken = decodeToken(getMember(object, "cursorToken"), `${at}.cursorToken`);
    if (seenStreams.has(streamToken)) throw invalid(`${at}.streamToken`, "repeats an earlier stream");
    seenStreams.add(streamToken);
    return { streamToken, cursorToken };
  });
}

function decodePending(value: JsonValue, path: string): PendingOperation {
  const operation = expectObject(value, path, ["operation"], [
    "attemptId",
    "message",
    "outputCursors",
    "sessionToken",
  ]);
  const kind = getMember(operation, "operation");
  if (kind === "start") {
    const object = expectObject(value, path, ["operation", "attemptId", "message"]);
    const attemptId = decodeUuid(getMember(object, "attemptId"), `${path}.attemptId`, true);
    const message = expectObject(getMember(object, "message"), `${path}.message`, [
      "attemptId",
      "config",
      "idempotencyKey",
      "methodParameters",
      "selector",
      "type",
      "version",
    ]);
    expectLiteral(getMember(message, "type"), `${path}.message.type`, "invocationStart");
    expectLiteral(getMember(message, "version"), `${path}.message.version`, 1);
    if (getMember(message, "attemptId") !== attemptId) throw invalid(`${path}.message.attemptId`, "must equal pending.attemptId");
    return { operation: "start", attemptId, message };
  }
  if (kind === "resume" || kind === "takeover") {
    const object = expectObject(value, path, ["operation", "attemptId", "sessionToken", "outputCursors"]);
    const cursors = expectArray(getMember(object, "outputCursors"), `${path}.outputCursors`, LIMITS.maxStreamsPerSession);
    const outputCursors = cursors.map((c, i) => decodeToken(c, `${path}.outputCursors[${i}]`));
    if (new Set(outputCursors).size !== outputCursors.length) throw invalid(`${path}.outputCursors`, "has duplicates");
    return {
      operation: kind,
      attemptId: decodeUuid(getMember(object, "attemptId"), `${path}.attemptId`, true),
      sessionToken: decodeToken(getMember(object, "sessionToken"), `${path}.sessionToken`),
      outputCursors,
    };
  }
  throw invalid(`${path}.operation`, 'must be "start", "resume" or "takeover"');
}

/** A pending start must be the start of this checkpoint's invocation, not another one. */
function checkStartMatches(message: JsonObject, selector: Selector, idempotencyKey: string): void {
  if (getMember(message, "idempotencyKey") !== idempotencyKey) {
    throw invalid("checkpoint.pending.message.idempotencyKey", "must equal checkpoint.idempotencyKey");
  }
  const messageSelector = getMember(message, "selector");
  if (messageSelector === undefined || canonicalJson(messageSelector) !== canonicalJson(selectorJson(selector))) {
    throw invalid("checkpoint.pending.message.selector", "must equal checkpoint.selector");
  }
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
  if (pending.operation === "start") {
    return { operation: "start", attemptId: pending.attemptId, message: pending.message };
  }
  return {
    operation: pending.operation,
    attemptId: pending.attemptId,
    sessionToken: pending.sessionToken,
    outputCursors: [...pending.outputCursors],
  };
}

/** The resumeAttach a pending resume or takeover freezes (protocol 5.2). */
export function pendingAsResumeAttach(pending: Extract<PendingOperation, { operation: "resume" | "takeover" }>): ResumeAttach {
  return {
    type: "resumeAttach",
    attemptId: pending.attemptId,
    operation: pending.operation,
    outputCursors: pending.outputCursors,
    sessionToken: pending.sessionToken,
  };
}
