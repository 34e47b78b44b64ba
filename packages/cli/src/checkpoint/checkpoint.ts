/**
 * CLI checkpoint v1 (protocol section 13): what a restarted `golem-stream`
 * needs to claim its session again and continue output exactly where the
 * terminal, file or pipe stopped receiving it — and nothing else.
 *
 * It holds only public protocol data: the selector, the idempotency key, the
 * opaque session token, the cursor of the last output event delivered on
 * each output stream, the frozen start/resume/takeover in flight, and
 * evidence of the protocol and method schema it was written against. Never attachment ids,
 * generations, offsets, internal stream ids, fingerprints or key material:
 * those stay inside the opaque tokens the server signed.
 *
 * `encodeCheckpoint` and `decodeCheckpoint` are pure: data in, text out, and
 * back. The decoder treats the file as hostile (it may be truncated, edited
 * or from another version) and throws only `ProtocolError`.
 */
import { LIMITS, ProtocolError, SUBPROTOCOL, canonicalJson, decodeClientMessage, getMember, parseStrictJson } from "@golem-stream/wire";
import type { ConfigEntry, InvocationStart, JsonObject, JsonValue, ResumeAttach, Selector, SchemaValueJson } from "@golem-stream/wire";
import { expectArray, expectLiteral, expectObject, expectString, invalid } from "./json-reader.js";

export const CHECKPOINT_VERSION = 1;

/**
 * A resume or takeover that was sent but neither accepted nor rejected: its
 * outcome is uncertain, so a restarted CLI resends exactly this descriptor
 * with the same attempt id (protocol section 9).
 */
export interface PendingAttach {
  readonly operation: "resume" | "takeover";
  readonly attemptId: string;
  readonly sessionToken: string;
  readonly outputCursors: readonly string[];
}

/**
 * The start, frozen and saved before it was first sent, while its acceptance
 * is uncertain. With the checkpoint's selector and idempotency key it is the
 * complete `invocationStart` (provisional references included), resent
 * exactly with the same attempt id.
 */
export interface PendingStart {
  readonly operation: "start";
  readonly attemptId: string;
  readonly config: readonly ConfigEntry[];
  readonly methodParameters: SchemaValueJson;
}

export type PendingOperation = PendingAttach | PendingStart;

export interface Checkpoint {
  readonly selector: Selector;
  readonly idempotencyKey: string;
  /** The session token of the latest accepted attach; absent exactly while the start is pending. */
  readonly sessionToken?: string;
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
export const MAX_CHECKPOINT_BYTES = LIMITS.maxTextMessageBytes + 2 * LIMITS.maxStreamsPerSession * (LIMITS.maxTokenBytes + 8);

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
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
  // Round-trip through the decoder so an invalid checkpoint is never written. Bounded as it is
  // read, not by the 8 MiB of a message: a selector near that size and many cursors pass it.
  const text = canonicalJson(document, { maxBytes: MAX_CHECKPOINT_BYTES });
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
    outputCursors: [...checkpoint.outputCursors],
  };
  if (checkpoint.sessionToken !== undefined) document["sessionToken"] = checkpoint.sessionToken;
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
    ["version", "protocol", "schema", "selector", "idempotencyKey", "outputCursors"],
    ["sessionToken", "pending"],
  );
  const version = getMember(root, "version");
  if (version !== CHECKPOINT_VERSION) {
    throw new ProtocolError("invalid-message", "checkpoint.version: this CLI reads checkpoint version 1 only", {
      path: "checkpoint.version",
    });
  }
  const protocol = expectObject(getMember(root, "protocol"), "checkpoint.protocol", ["subprotocol", "version"]);
  expectLiteral(getMember(protocol, "subprotocol"), "checkpoint.protocol.subprotocol", SUBPROTOCOL);
  expectLiteral(getMember(protocol, "version"), "checkpoint.protocol.version", 1);
  const schema = expectObject(getMember(root, "schema"), "checkpoint.schema", ["methodDigest"]);
  const methodSchemaDigest = expectString(getMember(schema, "methodDigest"), "checkpoint.schema.methodDigest");
  if (!SHA256_HEX.test(methodSchemaDigest)) throw invalid("checkpoint.schema.methodDigest", "must be 64 lower-case hex digits");

  const selector = decodeSelector(getMember(root, "selector"), "checkpoint.selector");
  const idempotencyKey = decodeIdempotencyKey(getMember(root, "idempotencyKey"), "checkpoint.idempotencyKey");
  const outputCursors = decodeCursorList(getMember(root, "outputCursors"), "checkpoint.outputCursors");
  const pendingJsonValue = getMember(root, "pending");
  const pending =
    pendingJsonValue === undefined ? undefined : decodePending(pendingJsonValue, "checkpoint.pending", selector, idempotencyKey);
  const sessionTokenJson = getMember(root, "sessionToken");
  if (pending?.operation === "start") {
    // Before acceptance there is no session yet, and nothing was delivered.
    if (sessionTokenJson !== undefined) throw invalid("checkpoint.sessionToken", "must be absent while the start is pending");
    if (outputCursors.length > 0) throw invalid("checkpoint.outputCursors", "must be empty while the start is pending");
    return { selector, idempotencyKey, outputCursors, methodSchemaDigest, pending };
  }
  if (sessionTokenJson === undefined) throw invalid("checkpoint.sessionToken", "is required once the start was accepted");
  const sessionToken = decodeToken(sessionTokenJson, "checkpoint.sessionToken");
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
  const object = expectObject(value, path, ["agentType", "application", "constructorParameters", "environment", "method"], ["phantomId"]);
  const text = (name: string): string => expectString(getMember(object, name), `${path}.${name}`, { minBytes: 1 });
  const phantomId = getMember(object, "phantomId");
  // The wire codec's rule, any UUID version (protocol 2): a selector reaches a checkpoint only after
  // the wire encoder accepted it.
  if (phantomId !== undefined && !UUID.test(expectString(phantomId, `${path}.phantomId`, { maxBytes: 36 }))) {
    throw invalid(`${path}.phantomId`, "must be a lower-case hyphenated UUID");
  }
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

/** Attempt ids and provisional references are lower-case UUIDv4 on the wire (protocol 2). */
function decodeUuidV4(value: JsonValue | undefined, path: string): string {
  const text = expectString(value, path, { maxBytes: 36 });
  if (!UUID_V4.test(text)) throw invalid(path, "must be a lower-case UUIDv4");
  return text;
}

/** At most one cursor per output stream, so never more than the session's streams, and no duplicates (protocol 5.2). */
function decodeCursorList(value: JsonValue | undefined, path: string): string[] {
  const cursors = expectArray(value, path, LIMITS.maxStreamsPerSession).map((c, i) => decodeToken(c, `${path}[${i}]`));
  if (new Set(cursors).size !== cursors.length) throw invalid(path, "has duplicates");
  return cursors;
}

function decodePending(value: JsonValue, path: string, selector: Selector, idempotencyKey: string): PendingOperation {
  const operation = getMember(
    expectObject(value, path, ["operation"], ["attemptId", "sessionToken", "outputCursors", "config", "methodParameters"]),
    "operation",
  );
  if (operation === "start") return decodePendingStart(value, path, selector, idempotencyKey);
  const object = expectObject(value, path, ["operation", "attemptId", "sessionToken", "outputCursors"]);
  if (operation !== "resume" && operation !== "takeover") {
    throw invalid(`${path}.operation`, 'must be "start", "resume" or "takeover"');
  }
  return {
    operation,
    attemptId: decodeUuidV4(getMember(object, "attemptId"), `${path}.attemptId`),
    sessionToken: decodeToken(getMember(object, "sessionToken"), `${path}.sessionToken`),
    outputCursors: decodeCursorList(getMember(object, "outputCursors"), `${path}.outputCursors`),
  };
}

/**
 * The frozen start is checked exactly as the server will check it: the
 * complete `invocationStart` it stands for goes through the wire decoder.
 * Its stream leaves must be provisional references, each placed once
 * (protocol 3.2): nothing else can be in a start.
 */
function decodePendingStart(value: JsonValue, path: string, selector: Selector, idempotencyKey: string): PendingStart {
  const object = expectObject(value, path, ["operation", "attemptId", "config", "methodParameters"]);
  const attemptId = decodeUuidV4(getMember(object, "attemptId"), `${path}.attemptId`);
  const methodParametersJson = getMember(object, "methodParameters") as JsonValue;
  checkProvisionalLeaves(methodParametersJson, `${path}.methodParameters`);
  let start: InvocationStart;
  try {
    const message = decodeClientMessage(
      canonicalJson({
        version: 1,
        type: "invocationStart",
        attemptId,
        config: getMember(object, "config") as JsonValue,
        idempotencyKey,
        methodParameters: methodParametersJson,
        selector: selectorJson(selector),
      }),
      false,
    );
    if (message.type !== "invocationStart") throw invalid(path, "is not a start");
    start = message;
  } catch (cause) {
    if (!(cause instanceof ProtocolError)) throw cause;
    throw new ProtocolError(cause.code, `${path}: not a valid frozen start: ${cause.message}`, { path, cause });
  }
  return { operation: "start", attemptId, config: start.config, methodParameters: start.methodParameters };
}

function checkProvisionalLeaves(value: JsonValue, path: string): void {
  const seen = new Set<string>();
  const visit = (node: JsonValue, depth: number): void => {
    if (depth > LIMITS.maxJsonDepth)
      throw new ProtocolError("limit-exceeded", `${path}: nests deeper than ${LIMITS.maxJsonDepth}`, { path });
    if (Array.isArray(node)) {
      for (const child of node) visit(child, depth + 1);
      return;
    }
    if (typeof node !== "object" || node === null) return;
    const payload = getMember(node, "value");
    if (getMember(node, "kind") === "stream" && typeof payload === "object" && payload !== null && !Array.isArray(payload)) {
      const ref = getMember(payload, "provisionalRef");
      if (typeof ref !== "string" || Object.keys(payload).length !== 1) {
        throw invalid(path, "a stream in a frozen start must be a provisional reference");
      }
      if (!UUID_V4.test(ref)) throw invalid(path, "provisional references are lower-case UUIDv4");
      if (seen.has(ref)) throw new ProtocolError("stream-already-consumed", `${path}: provisional reference ${ref} placed twice`, { path });
      seen.add(ref);
      return;
    }
    for (const child of Object.values(node)) visit(child, depth + 1);
  };
  visit(value, 0);
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
    return {
      operation: "start",
      attemptId: pending.attemptId,
      config: pending.config.map((entry) => ({ path: [...entry.path], value: entry.value })),
      methodParameters: { kind: pending.methodParameters.kind, value: pending.methodParameters.value },
    };
  }
  return {
    operation: pending.operation,
    attemptId: pending.attemptId,
    sessionToken: pending.sessionToken,
    outputCursors: [...pending.outputCursors],
  };
}

/** The complete invocationStart a pending start froze (protocol 5.1). */
export function pendingAsInvocationStart(pending: PendingStart, selector: Selector, idempotencyKey: string): InvocationStart {
  return {
    type: "invocationStart",
    attemptId: pending.attemptId,
    config: pending.config,
    idempotencyKey,
    methodParameters: pending.methodParameters,
    selector,
  };
}

/** The resumeAttach a pending resume or takeover froze (protocol 5.2). */
export function pendingAsResumeAttach(pending: PendingAttach): ResumeAttach {
  return {
    type: "resumeAttach",
    attemptId: pending.attemptId,
    operation: pending.operation,
    outputCursors: pending.outputCursors,
    sessionToken: pending.sessionToken,
  };
}
