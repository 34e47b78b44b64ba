/**
 * The token field table of decisions-v1 section 4, as data. Everything that
 * knows field ids, their types and which kind carries them reads this table,
 * so the encoder, the decoder and the typed view cannot drift apart.
 */
import type { TokenKind } from "./types.js";

/** Wire types: T = UTF-8 text, U = 16-byte UUID, N = u64 big-endian. */
export type FieldWireType = "text" | "uuid" | "u64";

/**
 * What a well-typed value must additionally satisfy. Checked when minting
 * (a programming error) and when verifying (a malformed field).
 */
export type FieldRule =
  /** Any non-empty text. */
  | "text"
  /** 64 lower-case hex digits (fields 20 and 34). */
  | "sha256-hex"
  /** A key id: 1..64 UTF-8 bytes (field 24). */
  | "key-id"
  /** An invocation idempotency key: 1..1024 UTF-8 bytes (field 23). */
  | "idempotency-key"
  /** A lower-case hyphenated UUID string (16 bytes on the wire). */
  | "uuid"
  /** Any u64. */
  | "u64"
  /** A u64 that names one of `names` (1-based). */
  | "enum";

export interface FieldSpec {
  readonly id: number;
  /** The camelCase member of the typed field object. */
  readonly name: string;
  readonly wire: FieldWireType;
  readonly rule: FieldRule;
  readonly optional: boolean;
  /** For `enum` fields: the typed names of wire values 1, 2, ... */
  readonly names?: readonly string[];
}

const text = (id: number, name: string, rule: FieldRule = "text", optional = false): FieldSpec => ({
  id,
  name,
  wire: "text",
  rule,
  optional,
});
const uuid = (id: number, name: string): FieldSpec => ({ id, name, wire: "uuid", rule: "uuid", optional: false });
const u64 = (id: number, name: string): FieldSpec => ({ id, name, wire: "u64", rule: "u64", optional: false });
const enumField = (id: number, name: string, names: readonly string[]): FieldSpec => ({
  id,
  name,
  wire: "u64",
  rule: "enum",
  optional: false,
  names,
});

const COMMON: readonly FieldSpec[] = [text(1, "issuer"), text(2, "audience"), text(3, "account"), text(4, "principal"), u64(5, "issuedAt")];

/** Each kind's fields in strictly increasing id order, the order they are written in. */
export const FIELD_TABLE: Readonly<Record<TokenKind, readonly FieldSpec[]>> = {
  session: [
    ...COMMON,
    uuid(16, "sessionId"),
    text(17, "application"),
    text(18, "environment"),
    text(19, "agentType"),
    text(20, "agentIdentity", "sha256-hex"),
    text(21, "method"),
    u64(22, "generation"),
    text(23, "idempotencyKey", "idempotency-key"),
    text(24, "streamKeyId", "key-id", true),
  ],
  stream: [
    ...COMMON,
    uuid(16, "sessionId"),
    uuid(32, "streamId"),
    enumField(33, "direction", ["input", "output"]),
    text(34, "elementSchemaDigest", "sha256-hex"),
    text(35, "coordinate"),
  ],
  cursor: [...COMMON, uuid(16, "sessionId"), uuid(32, "streamId"), u64(48, "position"), enumField(49, "event", ["item", "terminal"])],
};

/** Per kind, the typed member names it has. */
export const FIELD_NAMES: Readonly<Record<TokenKind, ReadonlySet<string>>> = {
  session: new Set(FIELD_TABLE.session.map((spec) => spec.name)),
  stream: new Set(FIELD_TABLE.stream.map((spec) => spec.name)),
  cursor: new Set(FIELD_TABLE.cursor.map((spec) => spec.name)),
};

/** Field ids are one byte. */
const FIELD_ID_SPACE = 256;

/** Per kind, the spec of each field id (or undefined), for O(1) lookup while decoding. */
export const FIELD_BY_ID: Readonly<Record<TokenKind, readonly (FieldSpec | undefined)[]>> = {
  session: indexById(FIELD_TABLE.session),
  stream: indexById(FIELD_TABLE.stream),
  cursor: indexById(FIELD_TABLE.cursor),
};

function indexById(specs: readonly FieldSpec[]): (FieldSpec | undefined)[] {
  const byId = new Array<FieldSpec | undefined>(FIELD_ID_SPACE).fill(undefined);
  for (const spec of specs) byId[spec.id] = spec;
  return byId;
}

/** The token-kind byte of the payload (protocol section 10.1). */
export const KIND_BYTE: Readonly<Record<TokenKind, number>> = { session: 1, stream: 2, cursor: 3 };

/** The kind of a token-kind byte, or undefined. */
export function kindOfByte(byte: number): TokenKind | undefined {
  return byte === 1 ? "session" : byte === 2 ? "stream" : byte === 3 ? "cursor" : undefined;
}

export function isTokenKind(value: unknown): value is TokenKind {
  return value === "session" || value === "stream" || value === "cursor";
}
