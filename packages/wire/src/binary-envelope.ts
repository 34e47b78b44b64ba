/**
 * The binary WebSocket message (protocol section 7, decisions section 3):
 *
 *   u32 big-endian metadata length | metadata: strict UTF-8 JSON | raw payload
 *
 * Every length is checked against its limit before the bytes it covers are
 * read. Decoding never copies the payload: the message's `payload` is a view
 * of the input bytes.
 */
import { MemberTable, invalidAt, limitAt, optional, required } from "./codec.js";
import { canonicalJson } from "./canonical-json.js";
import { ProtocolError } from "./errors.js";
import { channelCodec, mimeTypeCodec, tokenCodec, u64Codec } from "./fields.js";
import { type JsonObject, getMember, isJsonObject } from "./json.js";
import { LIMITS, U64_MAX } from "./limits.js";
import type { BinaryMessage, InputBinaryItem, InputU8Batch, OutputBinaryItem, OutputU8Batch } from "./messages.js";
import { parseStrictJson } from "./strict-json.js";
import { encodeUtf8, isBytes } from "./utf8.js";

/** The metadata `kind`s, which are also the binary messages' `type`s. */
export const BINARY_KINDS = ["input-u8", "input-binary", "output-u8", "output-binary"] as const;
export type BinaryKind = (typeof BINARY_KINDS)[number];

type MetadataOf<M extends BinaryMessage> = Omit<M, "type" | "payload">;

interface KindRules<M extends BinaryMessage> {
  readonly direction: "client" | "server";
  /** Packed u8: one item per payload byte. Otherwise one item per message. */
  readonly packed: boolean;
  /** Metadata members besides version, kind and itemCount (which is derived). */
  readonly members: MemberTable<MetadataOf<M>>;
}

const KINDS: { readonly [K in BinaryKind]: KindRules<Extract<BinaryMessage, { type: K }>> } = {
  "input-u8": {
    direction: "client",
    packed: true,
    members: new MemberTable<MetadataOf<InputU8Batch>>({ channel: required(channelCodec), sequence: required(u64Codec) }),
  },
  "input-binary": {
    direction: "client",
    packed: false,
    members: new MemberTable<MetadataOf<InputBinaryItem>>({
      channel: required(channelCodec),
      mimeType: optional(mimeTypeCodec),
      sequence: required(u64Codec),
    }),
  },
  "output-u8": {
    direction: "server",
    packed: true,
    members: new MemberTable<MetadataOf<OutputU8Batch>>({
      channel: required(channelCodec),
      cursorToken: required(tokenCodec),
      sequence: required(u64Codec),
    }),
  },
  "output-binary": {
    direction: "server",
    packed: false,
    members: new MemberTable<MetadataOf<OutputBinaryItem>>({
      channel: required(channelCodec),
      cursorToken: required(tokenCodec),
      mimeType: optional(mimeTypeCodec),
      sequence: required(u64Codec),
    }),
  },
};

type AnyKindRules = KindRules<BinaryMessage>;

function rulesOf(kind: unknown): AnyKindRules | undefined {
  return typeof kind === "string" && Object.prototype.hasOwnProperty.call(KINDS, kind)
    ? (KINDS[kind as BinaryKind] as unknown as AnyKindRules)
    : undefined;
}

export function isBinaryKind(value: unknown): value is BinaryKind {
  return rulesOf(value) !== undefined;
}

const LENGTH_PREFIX_BYTES = 4;
const METADATA_RESERVED: ReadonlySet<string> = new Set(["itemCount", "kind", "version"]);
/** Typed binary messages carry `type` (the kind) and `payload` beside their metadata members. */
const TYPED_RESERVED: ReadonlySet<string> = new Set(["type", "payload"]);

/**
 * Decodes one binary WebSocket message sent by `direction`. The returned
 * `payload` aliases `data`: copy it before reusing the input buffer.
 */
export function decodeBinaryMessage(data: unknown, direction: "client" | "server"): BinaryMessage {
  if (!isBytes(data)) throw invalidAt("", "must be a Uint8Array when it is binary");
  if (data.length < LENGTH_PREFIX_BYTES) throw invalidAt("", "is shorter than the 4-byte metadata length");
  const metadataLength = readU32(data);
  if (metadataLength > LIMITS.maxBinaryMetadataBytes) {
    throw limitAt("", `has metadata longer than ${LIMITS.maxBinaryMetadataBytes} bytes`);
  }
  const payloadStart = LENGTH_PREFIX_BYTES + metadataLength;
  if (payloadStart > data.length) throw invalidAt("", "is shorter than its metadata length says");
  if (data.length - payloadStart > LIMITS.maxBinaryPayloadBytes) {
    throw limitAt("", `has a payload larger than ${LIMITS.maxBinaryPayloadBytes} bytes`);
  }

  const root = parseStrictJson(data.subarray(LENGTH_PREFIX_BYTES, payloadStart), {
    maxBytes: LIMITS.maxBinaryMetadataBytes,
    what: "binary metadata",
  });
  if (!isJsonObject(root)) throw invalidAt("", "metadata must be a JSON object");
  if (getMember(root, "version") !== 1) throw invalidAt("version", "must be the number 1");
  const kind = getMember(root, "kind");
  const rules = rulesOf(kind);
  if (rules === undefined) throw invalidAt("kind", `must be one of ${BINARY_KINDS.join(", ")}`);
  if (rules.direction !== direction) {
    throw invalidAt("kind", `${String(kind)} is sent by the ${rules.direction}, not the ${direction}`);
  }

  const payload = data.subarray(payloadStart);
  checkPayloadSize(rules, payload.length);
  const into: Record<string, unknown> = { type: kind };
  rules.members.decode(root, "", `${String(kind)} metadata`, into, METADATA_RESERVED);
  const itemCountJson = getMember(root, "itemCount");
  if (itemCountJson === undefined) throw invalidAt("itemCount", "is required in binary metadata");
  const itemCount = u64Codec.decode(itemCountJson, "itemCount");
  const expected = itemCountOf(rules, payload.length);
  if (itemCount !== expected) {
    throw invalidAt("itemCount", `must be ${expected} for a ${payload.length}-byte ${String(kind)} payload`);
  }
  checkSequenceRoom(into["sequence"] as bigint, itemCount);
  into["payload"] = payload;
  return into as unknown as BinaryMessage;
}

/**
 * Where an encoder writes a binary message's envelope: returns memory for
 * `byteLength` bytes (a longer array is fine; its first `byteLength` bytes are
 * used). Every byte of those is overwritten, so the memory need not be zeroed:
 * a sender that reuses the buffers of envelopes its socket has finished with
 * saves a fresh allocation (page faults included) and a copy's worth of cache
 * misses per large message.
 */
export type EnvelopeAllocator = (byteLength: number) => Uint8Array;

const freshEnvelope: EnvelopeAllocator = (byteLength) => new Uint8Array(byteLength);

/** Encodes a binary message: one allocation (from `allocate`), metadata then payload. */
export function encodeBinaryMessage(message: object, allocate: EnvelopeAllocator = freshEnvelope): Uint8Array {
  const kind = (message as { readonly type?: unknown }).type;
  const rules = rulesOf(kind);
  if (rules === undefined) throw invalidAt("type", `must be one of ${BINARY_KINDS.join(", ")}`);
  const payload = (message as { readonly payload?: unknown }).payload;
  if (!isBytes(payload)) throw invalidAt("payload", "must be a Uint8Array");
  checkPayloadSize(rules, payload.length);

  const metadata: JsonObject = { kind: kind as string, version: 1 };
  rules.members.encode(message, "", String(kind), metadata, TYPED_RESERVED);
  const itemCount = itemCountOf(rules, payload.length);
  checkSequenceRoom((message as { readonly sequence: bigint }).sequence, itemCount);
  metadata["itemCount"] = itemCount.toString();

  const metadataBytes = encodeUtf8(canonicalJson(metadata));
  if (metadataBytes.length > LIMITS.maxBinaryMetadataBytes) {
    throw limitAt("", `has metadata longer than ${LIMITS.maxBinaryMetadataBytes} bytes`);
  }
  const byteLength = LENGTH_PREFIX_BYTES + metadataBytes.length + payload.length;
  const memory = allocate(byteLength);
  if (!isBytes(memory) || memory.length < byteLength) {
    // The allocator is the calling code's: a wrong one is its bug.
    throw new ProtocolError("internal-error", `an envelope allocator must return a Uint8Array of at least ${byteLength} bytes`);
  }
  const out = memory.length === byteLength ? memory : memory.subarray(0, byteLength);
  new DataView(out.buffer, out.byteOffset, LENGTH_PREFIX_BYTES).setUint32(0, metadataBytes.length, false);
  out.set(metadataBytes, LENGTH_PREFIX_BYTES);
  out.set(payload, LENGTH_PREFIX_BYTES + metadataBytes.length);
  return out;
}

function readU32(data: Uint8Array): number {
  return (data[0] as number) * 0x1000000 + (((data[1] as number) << 16) | ((data[2] as number) << 8) | (data[3] as number));
}

function checkPayloadSize(rules: AnyKindRules, length: number): void {
  if (rules.packed) {
    if (length === 0) throw invalidAt("payload", "of a packed u8 batch must not be empty");
    if (length > LIMITS.maxPackedU8PayloadBytes) {
      throw limitAt("payload", `of a packed u8 batch is larger than ${LIMITS.maxPackedU8PayloadBytes} bytes`);
    }
  } else if (length > LIMITS.maxBinaryPayloadBytes) {
    throw limitAt("payload", `is larger than ${LIMITS.maxBinaryPayloadBytes} bytes`);
  }
}

function itemCountOf(rules: AnyKindRules, payloadLength: number): bigint {
  return rules.packed ? BigInt(payloadLength) : 1n;
}

/** Section 7: `sequence + itemCount` must not overflow a u64. */
function checkSequenceRoom(sequence: bigint, itemCount: bigint): void {
  if (sequence + itemCount > U64_MAX) throw invalidAt("sequence", "plus itemCount is larger than 2^64 - 1");
}
