/**
 * The member tables of the five client and nine server text messages
 * (protocol sections 5 and 6). `version` and `type` are common to all of
 * them and are checked by the caller before a table is used.
 */
import { type Codec, type MembersOf, MemberTable, arrayCodec, invalidAt, objectCodec, optional, required } from "./codec.js";
import { configCodec } from "./config.js";
import {
  booleanCodec,
  channelCodec,
  errorCodeCodec,
  idempotencyKeyCodec,
  literalCodec,
  nameCodec,
  oneOfCodec,
  schemaGraphCodec,
  schemaValueCodec,
  textCodec,
  tokenCodec,
  u64Codec,
  uuidCodec,
  uuidV4Codec,
} from "./fields.js";
import type { JsonObject } from "./json.js";
import { LIMITS, U64_MAX } from "./limits.js";
import { mappingsCodec } from "./mappings.js";
import {
  CLIENT_CANCEL_REASONS,
  type ClientTextMessage,
  type InvocationOutcome,
  type InvocationResultBody,
  type OutputOutcome,
  type OutputStreamItem,
  type OutputStreamItemHead,
  SERVER_CANCEL_REASONS,
  type Selector,
  type ServerTextMessage,
} from "./messages.js";

/** One text variant: its table, plus rules that span members. */
export interface TextVariant<M extends { readonly type: string }> {
  readonly type: M["type"];
  /** Reads the variant's members from a root whose `version` and `type` are already checked. */
  decode(root: JsonObject): M;
  /** The variant's members as wire JSON, without `version` and `type`. */
  encode(message: unknown): JsonObject;
}

const RESERVED: ReadonlySet<string> = new Set(["type", "version"]);
/** The typed form keeps `type` and leaves `version` implicit. */
const TYPED_RESERVED: ReadonlySet<string> = new Set(["type"]);

function variant<M extends { readonly type: string }>(
  type: M["type"],
  members: MembersOf<Omit<M, "type">>,
  check?: (message: M) => void,
): TextVariant<M> {
  const table = new MemberTable(members);
  return {
    type,
    decode(root) {
      const into: Record<string, unknown> = { type };
      table.decode(root, "", type, into, RESERVED);
      const message = into as unknown as M;
      check?.(message);
      return message;
    },
    encode(message) {
      const into: JsonObject = {};
      table.encode(message, "", type, into, TYPED_RESERVED);
      check?.(message as M);
      return into;
    },
  };
}

/**
 * An item's sequence is the count of items before it; the item itself must
 * still be countable, so `sequence + 1` fits a u64 (as section 7 requires of
 * `sequence + itemCount` for binary batches).
 */
function itemSequenceFits(message: { readonly sequence: bigint }): void {
  if (message.sequence >= U64_MAX) throw invalidAt("sequence", "leaves no room for the item (sequence + 1 > 2^64 - 1)");
}

// ---- shared structures ----

const selectorCodec = objectCodec<Selector>("a selector", {
  agentType: required(nameCodec),
  application: required(nameCodec),
  constructorParameters: required(schemaValueCodec),
  environment: required(nameCodec),
  method: required(nameCodec),
  phantomId: optional(uuidCodec),
});

/** At most one cursor per output stream: no duplicates, no more than a session's streams. */
const outputCursorsCodec: Codec<readonly string[]> = arrayCodec(tokenCodec, { max: LIMITS.maxStreamsPerSession }, (cursors, at) => {
  if (new Set(cursors).size !== cursors.length) throw invalidAt(at, "must not contain the same cursor twice");
});

const resultBodyCodec = taggedUnion<InvocationResultBody>("a result", {
  none: objectCodec("a result without value", { kind: required(literalCodec("none")) }),
  value: objectCodec("a value result", {
    graph: required(schemaGraphCodec),
    kind: required(literalCodec("value")),
    value: required(schemaValueCodec),
  }),
});

const serverCancelReasonCodec = oneOfCodec(SERVER_CANCEL_REASONS);

const outputOutcomeCodec = taggedUnion<OutputOutcome>("an output outcome", {
  ok: objectCodec("an ok outcome", { kind: required(literalCodec("ok")) }),
  error: objectCodec("an error outcome", {
    code: required(errorCodeCodec),
    kind: required(literalCodec("error")),
    message: required(textCodec),
  }),
  cancelled: objectCodec("a cancelled outcome", {
    kind: required(literalCodec("cancelled")),
    reason: required(serverCancelReasonCodec),
  }),
});

const invocationOutcomeCodec = taggedUnion<InvocationOutcome>("an invocation outcome", {
  success: objectCodec("a success outcome", { kind: required(literalCodec("success")) }),
  failure: objectCodec("a failure outcome", {
    code: required(errorCodeCodec),
    kind: required(literalCodec("failure")),
    message: required(textCodec),
  }),
});

/** A union of objects told apart by their `kind` member. */
function taggedUnion<T extends { readonly kind: string }>(
  what: string,
  cases: { readonly [K in T["kind"]]: Codec<Extract<T, { kind: K }>> },
): Codec<T> {
  const table = cases as unknown as Readonly<Record<string, Codec<T>>>;
  const kinds = Object.keys(table);
  const pick = (value: unknown, at: string): Codec<T> => {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw invalidAt(at, `must be an object (${what})`);
    }
    const kind = (value as { kind?: unknown }).kind;
    const codec = typeof kind === "string" && Object.prototype.hasOwnProperty.call(table, kind) ? table[kind] : undefined;
    if (codec === undefined) throw invalidAt(`${at}.kind`, `must be one of ${kinds.join(", ")}`);
    return codec;
  };
  return {
    decode: (json, at) => pick(json, at).decode(json, at),
    encode: (value, at) => pick(value, at).encode(value, at),
  };
}

// ---- client to server (section 5) ----

export const CLIENT_TEXT_VARIANTS: readonly TextVariant<ClientTextMessage>[] = [
  variant<Extract<ClientTextMessage, { type: "invocationStart" }>>("invocationStart", {
    attemptId: required(uuidV4Codec),
    config: required(configCodec),
    idempotencyKey: required(idempotencyKeyCodec),
    methodParameters: required(schemaValueCodec),
    selector: required(selectorCodec),
  }),
  variant<Extract<ClientTextMessage, { type: "resumeAttach" }>>("resumeAttach", {
    attemptId: required(uuidV4Codec),
    operation: required(oneOfCodec(["resume", "takeover"] as const)),
    outputCursors: required(outputCursorsCodec),
    sessionToken: required(tokenCodec),
  }),
  variant<Extract<ClientTextMessage, { type: "inputStreamItem" }>>(
    "inputStreamItem",
    {
      channel: required(channelCodec),
      sequence: required(u64Codec),
      value: required(schemaValueCodec),
    },
    itemSequenceFits,
  ),
  variant<Extract<ClientTextMessage, { type: "inputStreamEnd" }>>("inputStreamEnd", {
    channel: required(channelCodec),
    sequence: required(u64Codec),
  }),
  variant<Extract<ClientTextMessage, { type: "streamCancel" }>>("streamCancel", {
    channel: required(channelCodec),
    reason: required(oneOfCodec(CLIENT_CANCEL_REASONS)),
  }),
];

// ---- server to client (section 6) ----

/**
 * The members of an `outputStreamItem` other than its value. The value comes
 * last in the table, so the full variant and the head alone report the same
 * first error for the same head.
 */
const OUTPUT_ITEM_HEAD_MEMBERS: MembersOf<Omit<OutputStreamItemHead, "type">> = {
  channel: required(channelCodec),
  cursorToken: required(tokenCodec),
  mappings: required(mappingsCodec),
  sequence: required(u64Codec),
};

/** An `outputStreamItem` without its value: the same rules as the full variant for every other member. */
export const OUTPUT_ITEM_HEAD_VARIANT: TextVariant<OutputStreamItemHead> = variant<OutputStreamItemHead>(
  "outputStreamItem",
  OUTPUT_ITEM_HEAD_MEMBERS,
  itemSequenceFits,
);

export const SERVER_TEXT_VARIANTS: readonly TextVariant<ServerTextMessage>[] = [
  variant<Extract<ServerTextMessage, { type: "invocationAccepted" }>>("invocationAccepted", {
    attemptId: required(uuidV4Codec),
    idempotencyKey: required(idempotencyKeyCodec),
    mappings: required(mappingsCodec),
    sessionToken: required(tokenCodec),
  }),
  variant<Extract<ServerTextMessage, { type: "invocationRejected" }>>("invocationRejected", {
    attemptId: optional(uuidV4Codec),
    code: required(errorCodeCodec),
    message: required(textCodec),
    retryable: required(booleanCodec),
  }),
  variant<Extract<ServerTextMessage, { type: "invocationResult" }>>("invocationResult", {
    mappings: required(mappingsCodec),
    result: required(resultBodyCodec),
  }),
  variant<OutputStreamItem>("outputStreamItem", { ...OUTPUT_ITEM_HEAD_MEMBERS, value: required(schemaValueCodec) }, itemSequenceFits),
  variant<Extract<ServerTextMessage, { type: "outputStreamEnd" }>>("outputStreamEnd", {
    channel: required(channelCodec),
    cursorToken: optional(tokenCodec),
    outcome: required(outputOutcomeCodec),
    sequence: required(u64Codec),
  }),
  variant<Extract<ServerTextMessage, { type: "inputStreamAck" }>>("inputStreamAck", {
    channel: required(channelCodec),
    highestContiguousSequence: required(u64Codec),
    mappings: required(mappingsCodec),
    terminal: required(booleanCodec),
  }),
  variant<Extract<ServerTextMessage, { type: "streamCancel" }>>("streamCancel", {
    channel: required(channelCodec),
    reason: required(serverCancelReasonCodec),
  }),
  variant<Extract<ServerTextMessage, { type: "attachmentRevoked" }>>("attachmentRevoked", {
    reason: required(literalCodec("replaced")),
  }),
  variant<Extract<ServerTextMessage, { type: "invocationFinished" }>>("invocationFinished", {
    outcome: required(invocationOutcomeCodec),
  }),
];
