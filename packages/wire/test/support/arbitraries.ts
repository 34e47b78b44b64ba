/**
 * fast-check generators of valid typed messages, one per variant, obeying
 * every cross-member rule (distinct mappings, high-water on inputs only,
 * sequence room, derived itemCount).
 */
import fc from "fast-check";
import {
  CLIENT_CANCEL_REASONS,
  type ClientMessage,
  ERROR_CODES,
  type JsonValue,
  SERVER_CANCEL_REASONS,
  type ServerMessage,
  type StreamMapping,
  U64_MAX,
  utf8ByteLength,
} from "../../src/index.js";

const visibleAscii = fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c));
export const token = fc.string({ unit: visibleAscii, minLength: 1, maxLength: 240 });
export const uuidV4 = fc.uuid({ version: 4 });
export const channel = fc.integer({ min: 1, max: 0xffff_ffff });
export const u64 = fc.bigInt({ min: 0n, max: U64_MAX });
const itemSequence = fc.bigInt({ min: 0n, max: U64_MAX - 1n });
const name = fc.string({ minLength: 1, maxLength: 20, unit: "grapheme" });
const text = fc.string({ maxLength: 40, unit: "grapheme" });
const idempotencyKey = fc.string({ minLength: 1, maxLength: 120, unit: "grapheme" }).filter((key) => utf8ByteLength(key) <= 1024);
const json = fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<JsonValue>;
export const schemaValue = fc.record({ kind: fc.string({ maxLength: 12 }), value: json });

/** No object with exactly `kind` = "stream" and an object `value`, anywhere. */
function hasStreamShape(value: JsonValue): boolean {
  if (typeof value !== "object" || value === null) return false;
  if (Array.isArray(value)) return value.some(hasStreamShape);
  const names = Object.keys(value);
  const inner = value["value"];
  if (names.length === 2 && value["kind"] === "stream" && typeof inner === "object" && inner !== null && !Array.isArray(inner)) {
    return true;
  }
  return names.some((member) => hasStreamShape(value[member] as JsonValue));
}

const configEntries = fc.uniqueArray(
  fc.record({ path: fc.array(name, { minLength: 1, maxLength: 4 }), value: json.filter((v) => !hasStreamShape(v)) }),
  { maxLength: 4, selector: (entry) => JSON.stringify(entry.path) },
);

/** Up to four mappings with distinct channels, tokens and provisional references. */
const mappings: fc.Arbitrary<StreamMapping[]> = fc
  .tuple(
    fc.uniqueArray(channel, { maxLength: 4 }),
    fc.uniqueArray(token, { minLength: 4, maxLength: 4 }),
    fc.uniqueArray(uuidV4, { minLength: 4, maxLength: 4 }),
    fc.array(fc.record({ input: fc.boolean(), withRef: fc.boolean(), sequence: u64, terminal: fc.boolean() }), {
      minLength: 4,
      maxLength: 4,
    }),
  )
  .map(([channels, tokens, refs, shapes]) =>
    channels.map((ch, i) => {
      const shape = shapes[i] as { input: boolean; withRef: boolean; sequence: bigint; terminal: boolean };
      const streamToken = tokens[i] as string;
      if (!shape.input) return { channel: ch, direction: "output", streamToken };
      return {
        channel: ch,
        direction: "input",
        inputHighWater: { sequence: shape.sequence, terminal: shape.terminal },
        streamToken,
        ...(shape.withRef ? { provisionalRef: refs[i] as string } : {}),
      };
    }),
  );

const errorCode = fc.constantFrom(...ERROR_CODES);
const mimeType = fc.stringMatching(/^[A-Za-z0-9!#$&^_.+-]{1,12}\/[A-Za-z0-9!#$&^_.+-]{1,12}$/);

/** Batch payloads leave room for their items: sequence + length <= 2^64 - 1. */
const u8Batch = fc
  .uint8Array({ minLength: 1, maxLength: 64 })
  .chain((payload) => fc.tuple(fc.constant(payload), fc.bigInt({ min: 0n, max: U64_MAX - BigInt(payload.length) })));
const binaryPayload = fc.uint8Array({ maxLength: 64 });

export const clientMessage: fc.Arbitrary<ClientMessage> = fc.oneof(
  fc.record({
    type: fc.constant("invocationStart" as const),
    attemptId: uuidV4,
    config: configEntries,
    idempotencyKey,
    methodParameters: schemaValue,
    selector: fc.record(
      {
        agentType: name,
        application: name,
        constructorParameters: schemaValue,
        environment: name,
        method: name,
        phantomId: uuidV4,
      },
      { requiredKeys: ["agentType", "application", "constructorParameters", "environment", "method"] },
    ),
  }),
  fc.record({
    type: fc.constant("resumeAttach" as const),
    attemptId: uuidV4,
    operation: fc.constantFrom("resume" as const, "takeover" as const),
    outputCursors: fc.uniqueArray(token, { maxLength: 4 }),
    sessionToken: token,
  }),
  fc.record({ type: fc.constant("inputStreamItem" as const), channel, sequence: itemSequence, value: schemaValue }),
  fc.record({ type: fc.constant("inputStreamEnd" as const), channel, sequence: u64 }),
  fc.record({ type: fc.constant("streamCancel" as const), channel, reason: fc.constantFrom(...CLIENT_CANCEL_REASONS) }),
  fc.tuple(channel, u8Batch).map(([ch, [payload, sequence]]) => ({ type: "input-u8" as const, channel: ch, sequence, payload })),
  fc.record(
    { type: fc.constant("input-binary" as const), channel, sequence: itemSequence, payload: binaryPayload, mimeType },
    { requiredKeys: ["type", "channel", "sequence", "payload"] },
  ),
);

export const outputStreamItem = fc.record({
  type: fc.constant("outputStreamItem" as const),
  channel,
  cursorToken: token,
  mappings,
  sequence: itemSequence,
  value: schemaValue,
});

export const serverMessage: fc.Arbitrary<ServerMessage> = fc.oneof(
  fc.record({
    type: fc.constant("invocationAccepted" as const),
    attemptId: uuidV4,
    idempotencyKey,
    mappings,
    sessionToken: token,
  }),
  fc.record(
    { type: fc.constant("invocationRejected" as const), attemptId: uuidV4, code: errorCode, message: text, retryable: fc.boolean() },
    { requiredKeys: ["type", "code", "message", "retryable"] },
  ),
  fc.record({
    type: fc.constant("invocationResult" as const),
    mappings,
    result: fc.oneof(
      fc.constant({ kind: "none" as const }),
      fc.record({ kind: fc.constant("value" as const), graph: fc.dictionary(fc.string(), json), value: schemaValue }),
    ),
  }),
  outputStreamItem,
  fc.record(
    {
      type: fc.constant("outputStreamEnd" as const),
      channel,
      cursorToken: token,
      outcome: fc.oneof(
        fc.constant({ kind: "ok" as const }),
        fc.record({ kind: fc.constant("error" as const), code: errorCode, message: text }),
        fc.record({ kind: fc.constant("cancelled" as const), reason: fc.constantFrom(...SERVER_CANCEL_REASONS) }),
      ),
      sequence: u64,
    },
    { requiredKeys: ["type", "channel", "outcome", "sequence"] },
  ),
  fc.record({ type: fc.constant("inputStreamAck" as const), channel, highestContiguousSequence: u64, mappings, terminal: fc.boolean() }),
  fc.record({ type: fc.constant("streamCancel" as const), channel, reason: fc.constantFrom(...SERVER_CANCEL_REASONS) }),
  fc.constant({ type: "attachmentRevoked" as const, reason: "replaced" as const }),
  fc.record({
    type: fc.constant("invocationFinished" as const),
    outcome: fc.oneof(
      fc.constant({ kind: "success" as const }),
      fc.record({ kind: fc.constant("failure" as const), code: errorCode, message: text }),
    ),
  }),
  fc
    .tuple(channel, token, u8Batch)
    .map(([ch, cursorToken, [payload, sequence]]) => ({ type: "output-u8" as const, channel: ch, cursorToken, sequence, payload })),
  fc.record(
    { type: fc.constant("output-binary" as const), channel, cursorToken: token, sequence: itemSequence, payload: binaryPayload, mimeType },
    { requiredKeys: ["type", "channel", "cursorToken", "sequence", "payload"] },
  ),
);
