/**
 * Builds `fixtures/stream-session-v1/tokens.json` from fixed keys and fields,
 * using only the independent writer of `raw-token.ts` (never the package's
 * encoder), so the file states the protocol, not this implementation.
 * `vectors.test.ts` checks the committed file equals this build and
 * rewrites it when run with UPDATE_VECTORS=1.
 */
import { bytesField, rawPayload, rawSignature, rawToken, rawTokenText, text, tokenBytes, u64, uuid, type RawField } from "./raw-token.js";

export type JsonFields = Record<string, string>;

/** decisions-v1 section 4, written out again independently of src/field-table.ts. */
export const TABLE: Record<string, readonly (readonly [number, string, "T" | "U" | "N" | "direction" | "event"])[]> = {
  session: [
    [1, "issuer", "T"],
    [2, "audience", "T"],
    [3, "account", "T"],
    [4, "principal", "T"],
    [5, "issuedAt", "N"],
    [16, "sessionId", "U"],
    [17, "application", "T"],
    [18, "environment", "T"],
    [19, "agentType", "T"],
    [20, "agentIdentity", "T"],
    [21, "method", "T"],
    [22, "generation", "N"],
    [23, "idempotencyKey", "T"],
    [24, "streamKeyId", "T"],
  ],
  stream: [
    [1, "issuer", "T"],
    [2, "audience", "T"],
    [3, "account", "T"],
    [4, "principal", "T"],
    [5, "issuedAt", "N"],
    [16, "sessionId", "U"],
    [32, "streamId", "U"],
    [33, "direction", "direction"],
    [34, "elementSchemaDigest", "T"],
    [35, "coordinate", "T"],
  ],
  cursor: [
    [1, "issuer", "T"],
    [2, "audience", "T"],
    [3, "account", "T"],
    [4, "principal", "T"],
    [5, "issuedAt", "N"],
    [16, "sessionId", "U"],
    [32, "streamId", "U"],
    [48, "position", "N"],
    [49, "event", "event"],
  ],
};

const KIND_BYTE: Record<string, number> = { session: 1, stream: 2, cursor: 3 };

export function rawFields(kind: string, fields: JsonFields): RawField[] {
  const out: RawField[] = [];
  for (const [id, name, type] of TABLE[kind]!) {
    const value = fields[name];
    if (value === undefined) continue;
    if (type === "T") out.push(text(id, value));
    else if (type === "U") out.push(uuid(id, value));
    else if (type === "N") out.push(u64(id, BigInt(value)));
    else if (type === "direction") out.push(u64(id, value === "input" ? 1n : 2n));
    else out.push(u64(id, value === "item" ? 1n : 2n));
  }
  return out;
}

const secret = (first: number): Buffer => Buffer.from(Array.from({ length: 32 }, (_, i) => first + i));
export const SECRETS: Record<string, Buffer> = {
  "k-2025": secret(0x00),
  "k-2026": secret(0x20),
  "k-other": secret(0x40),
};

const keyEntry = (id: string, verifyOnly = false) => ({
  id,
  secret: SECRETS[id]!.toString("base64url"),
  ...(verifyOnly ? { verifyOnly: true } : {}),
});

export const KEYRINGS = {
  before: { version: 1, active: "k-2025", keys: [keyEntry("k-2025")] },
  after: { version: 1, active: "k-2026", keys: [keyEntry("k-2026"), keyEntry("k-2025", true)] },
  retired: { version: 1, active: "k-2026", keys: [keyEntry("k-2026")] },
};

const COMMON: JsonFields = {
  issuer: "golem-stream.example",
  audience: "golem-stream",
  account: "account-7",
  principal: "user:alice",
  issuedAt: "1796083200000",
};
const SESSION_ID = "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f";
const INPUT_STREAM_ID = "0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3";
const OUTPUT_STREAM_ID = "ffeeddcc-bbaa-4998-8877-665544332211";
const DIGEST = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

const SESSION: JsonFields = {
  ...COMMON,
  sessionId: SESSION_ID,
  application: "demo",
  environment: "default",
  agentType: "echo",
  agentIdentity: DIGEST,
  method: "reverse",
  generation: "1",
  idempotencyKey: "upload-42",
  streamKeyId: "k-2025",
};
const { streamKeyId: _dropped, ...LEGACY_SESSION } = SESSION;
const STREAM_INPUT: JsonFields = {
  ...COMMON,
  sessionId: SESSION_ID,
  streamId: INPUT_STREAM_ID,
  direction: "input",
  elementSchemaDigest: DIGEST,
  coordinate: "params/value/fields/0",
};
const STREAM_OUTPUT: JsonFields = {
  ...STREAM_INPUT,
  streamId: OUTPUT_STREAM_ID,
  direction: "output",
  coordinate: "result",
};
const CURSOR_ITEM: JsonFields = { ...COMMON, sessionId: SESSION_ID, streamId: OUTPUT_STREAM_ID, position: "0", event: "item" };

interface Signed {
  readonly kind: string;
  readonly keyId: string;
  readonly fields: JsonFields;
  readonly payloadHex: string;
  readonly signatureHex: string;
  readonly token: string;
}

function sign(kind: string, keyId: string, fields: JsonFields): Signed {
  const payload = rawPayload({ kindByte: KIND_BYTE[kind]!, keyId, fields: rawFields(kind, fields) });
  const signature = rawSignature(SECRETS[keyId]!, kind, payload);
  return {
    kind,
    keyId,
    fields,
    payloadHex: payload.toString("hex"),
    signatureHex: signature.toString("hex"),
    token: rawToken(payload, signature),
  };
}

function valid(name: string, description: string, keyring: string, kind: string, keyId: string, fields: JsonFields) {
  return { name, description, keyring, ...sign(kind, keyId, fields) };
}

/** A payload signed with k-2025 under the domain of `kindWord` (the kind byte may disagree). */
function signedRaw(kindWord: string, payload: Buffer, keyId = "k-2025"): string {
  return rawToken(payload, rawSignature(SECRETS[keyId]!, kindWord, payload));
}

function flipBit(token: string, byteIndex: number, bit: number): string {
  const bytes = tokenBytes(token);
  const index = byteIndex < 0 ? bytes.length + byteIndex : byteIndex;
  bytes[index] = bytes[index]! ^ (1 << bit);
  return rawTokenText(bytes);
}

function replaceChar(token: string, index: number, char: string): string {
  return token.slice(0, index) + char + token.slice(index + 1);
}

export function buildVectors() {
  const session = sign("session", "k-2025", SESSION);
  const stream = sign("stream", "k-2025", STREAM_INPUT);
  const cursor = sign("cursor", "k-2025", CURSOR_ITEM);
  const sessionFields = rawFields("session", SESSION);
  const sessionPayload = (fields: RawField[], extra: Partial<Parameters<typeof rawPayload>[0]> = {}) =>
    rawPayload({ kindByte: 1, keyId: "k-2025", fields, ...extra });
  const sessionWith = (fields: RawField[], extra: Partial<Parameters<typeof rawPayload>[0]> = {}) =>
    signedRaw("session", sessionPayload(fields, extra));
  const replaceField = (fields: RawField[], id: number, field: RawField) => fields.map((f) => (f.id === id ? field : f));
  const without = (fields: RawField[], id: number) => fields.filter((f) => f.id !== id);
  const streamFields = rawFields("stream", STREAM_INPUT);
  const cursorFields = rawFields("cursor", CURSOR_ITEM);
  // Offsets inside the base session token: version 0, kind 1, key-id length 2, key id 3..8, first field header 9.
  const body = session.token.slice(5);
  const canonicalBase = [session, stream, cursor].find((t) => tokenBytes(t.token).length % 3 !== 0)!;

  const invalid = (name: string, description: string, token: string, expectedKind: string, reason: string, keyring = "before") => ({
    name,
    description,
    keyring,
    expectedKind,
    token,
    reason,
  });

  const lastChar = canonicalBase.token.at(-1)!;
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const nonCanonicalLast = alphabet[alphabet.indexOf(lastChar) | 1]!;

  return {
    name: "tokens",
    description:
      "Opaque gai1_ tokens of protocol section 10 with the fields of decisions-v1 section 4: deterministic valid tokens, a key-rotation set, and invalid tokens with the reason verification reports.",
    notes: [
      "Fields use the camelCase names of the TypeScript API; u64 fields are canonical decimal strings; direction and event are their names (input=1, output=2; item=1, terminal=2).",
      "Secrets in keyrings are unpadded base64url. payloadHex is the TLV payload; the token is gai1_ + base64url-no-pad(payload || signature).",
      "Every invalid case fails verifyToken(token, expectedKind, keyrings[keyring]) with code invalid-token and the given reason.",
    ],
    signatureDomain: "golem.agent-invocation.token.v1",
    keyrings: KEYRINGS,
    valid: [
      valid("session", "A session token with every field, field 24 naming the signing key.", "before", "session", "k-2025", SESSION),
      valid("session-without-field-24", "A session token issued before field 24 existed.", "before", "session", "k-2025", LEGACY_SESSION),
      valid(
        "session-non-ascii-text",
        "Text fields carrying multi-byte UTF-8, including a four-byte scalar.",
        "before",
        "session",
        "k-2025",
        {
          ...SESSION,
          principal: "user:zoë",
          idempotencyKey: "Ünïcødé-κλειδί-🔑",
        },
      ),
      valid("session-u64-extremes", "generation 2^64-1 and issued-at 0 are both valid u64 values.", "before", "session", "k-2025", {
        ...SESSION,
        issuedAt: "0",
        generation: "18446744073709551615",
      }),
      valid("stream-input", "An input stream token inside the method parameters.", "before", "stream", "k-2025", STREAM_INPUT),
      valid("stream-output", "An output stream token that is the method result itself.", "before", "stream", "k-2025", STREAM_OUTPUT),
      valid("cursor-item", "A cursor at the first item of an output stream.", "before", "cursor", "k-2025", CURSOR_ITEM),
      valid("cursor-terminal", "A cursor at the terminal event, after 3 items.", "before", "cursor", "k-2025", {
        ...CURSOR_ITEM,
        position: "3",
        event: "terminal",
      }),
    ],
    rotation: {
      name: "key-rotation",
      description:
        "k-2025 is replaced by k-2026. The old session token still verifies, the refreshed one is signed by k-2026 and pins k-2025 in field 24, so the stream token stays byte-identical; a keyring without k-2025 rejects the old tokens.",
      cases: [
        {
          name: "old-session-token",
          description: "Issued under k-2025 before field 24 existed; verifies with keyrings before and after.",
          verifiesWith: ["before", "after"],
          rejectedWith: { keyring: "retired", reason: "unknown-key" },
          ...sign("session", "k-2025", LEGACY_SESSION),
        },
        {
          name: "stream-token",
          description:
            "Minted before rotation with the session token's own key (field 24 absent); also minted after rotation, identically.",
          verifiesWith: ["before", "after"],
          rejectedWith: { keyring: "retired", reason: "unknown-key" },
          ...sign("stream", "k-2025", STREAM_OUTPUT),
        },
        {
          name: "refreshed-session-token",
          description: "The resume after rotation: generation 2, signed by the active k-2026, field 24 = k-2025.",
          verifiesWith: ["after", "retired"],
          ...sign("session", "k-2026", { ...SESSION, issuedAt: "1796086800000", generation: "2", streamKeyId: "k-2025" }),
        },
        {
          name: "cursor-token-after-rotation",
          description: "New cursor tokens are signed by the active key.",
          verifiesWith: ["after", "retired"],
          ...sign("cursor", "k-2026", { ...CURSOR_ITEM, position: "1" }),
        },
      ],
    },
    invalid: [
      invalid("too-long", "8193 characters: rejected before decoding.", `gai1_${"A".repeat(8188)}`, "session", "too-long"),
      invalid(
        "at-length-limit-is-decoded",
        "Exactly 8192 characters is not too long; its zero bytes fail the version check.",
        `gai1_${"A".repeat(8187)}`,
        "session",
        "bad-version",
      ),
      invalid("empty", "The empty string.", "", "session", "bad-prefix"),
      invalid("wrong-prefix", "gai2_ instead of gai1_.", `gai2_${body}`, "session", "bad-prefix"),
      invalid("upper-case-prefix", "The prefix is case-sensitive.", `GAI1_${body}`, "session", "bad-prefix"),
      invalid("padding", "A trailing = (padding is not allowed).", `${session.token}=`, "session", "bad-base64"),
      invalid(
        "standard-alphabet-plus",
        "A + from the standard base64 alphabet.",
        replaceChar(session.token, 20, "+"),
        "session",
        "bad-base64",
      ),
      invalid(
        "standard-alphabet-slash",
        "A / from the standard base64 alphabet.",
        replaceChar(session.token, 20, "/"),
        "session",
        "bad-base64",
      ),
      invalid("inner-space", "A space inside the base64url text.", replaceChar(session.token, 20, " "), "session", "bad-base64"),
      invalid("trailing-newline", "A trailing line feed.", `${session.token}\n`, "session", "bad-base64"),
      invalid("non-ascii", "A non-ASCII letter inside the base64url text.", replaceChar(session.token, 20, "é"), "session", "bad-base64"),
      invalid(
        "impossible-length",
        "A base64url length of 4n+1 characters encodes no byte string.",
        `gai1_${"AAAA".repeat(12)}A`,
        "session",
        "bad-base64",
      ),
      invalid(
        "non-canonical-final-bits",
        "The last character has non-zero unused low bits; the canonical text differs.",
        replaceChar(canonicalBase.token, canonicalBase.token.length - 1, nonCanonicalLast),
        canonicalBase.kind,
        "bad-base64",
      ),
      invalid(
        "too-short",
        "Ten bytes: less than a header and a signature.",
        rawTokenText(tokenBytes(session.token).subarray(0, 10)),
        "session",
        "too-short",
      ),
      invalid(
        "truncated-by-3-bytes",
        "The last three bytes removed and re-encoded: the signature now covers other bytes.",
        rawTokenText(tokenBytes(session.token).subarray(0, -3)),
        "session",
        "bad-signature",
      ),
      invalid(
        "truncated-by-1-character",
        "The last character removed: the final character's unused bits are no longer zero.",
        session.token.slice(0, -1),
        "session",
        "bad-base64",
      ),
      invalid("version-2", "Format version 2, validly signed.", sessionWith(sessionFields, { version: 2 }), "session", "bad-version"),
      invalid("kind-byte-0", "Token-kind byte 0, validly signed.", sessionWith(sessionFields, { kindByte: 0 }), "session", "bad-kind"),
      invalid("kind-byte-4", "Token-kind byte 4, validly signed.", sessionWith(sessionFields, { kindByte: 4 }), "session", "bad-kind"),
      invalid("stream-token-as-session", "A valid stream token where a session token is expected.", stream.token, "session", "wrong-kind"),
      invalid("cursor-token-as-stream", "A valid cursor token where a stream token is expected.", cursor.token, "stream", "wrong-kind"),
      invalid(
        "kind-byte-disagrees-with-domain",
        "Kind byte 2 (stream) signed under the session domain word.",
        signedRaw("session", rawPayload({ kindByte: 2, keyId: "k-2025", fields: streamFields })),
        "stream",
        "bad-signature",
      ),
      invalid("key-id-empty", "Key-id length 0.", sessionWith(sessionFields, { keyId: "", keyIdLength: 0 }), "session", "bad-key-id"),
      invalid("key-id-65-bytes", "A 65-byte key id.", sessionWith(sessionFields, { keyId: "k".repeat(65) }), "session", "bad-key-id"),
      invalid(
        "key-id-past-payload",
        "Key-id length 200 in a shorter payload.",
        signedRaw("session", Buffer.concat([Buffer.from([1, 1, 200]), Buffer.alloc(40, 0x6b)])),
        "session",
        "bad-key-id",
      ),
      invalid(
        "key-id-invalid-utf8",
        "Key id bytes 6b ff.",
        sessionWith(sessionFields, { keyId: Buffer.from([0x6b, 0xff]) }),
        "session",
        "bad-key-id",
      ),
      invalid(
        "unknown-key",
        "Signed by k-other, which the keyring does not hold.",
        sign("session", "k-other", SESSION).token,
        "session",
        "unknown-key",
      ),
      invalid(
        "right-key-id-wrong-secret",
        "Names k-2025 but is signed with another secret.",
        rawToken(sessionPayload(sessionFields), rawSignature(SECRETS["k-other"]!, "session", sessionPayload(sessionFields))),
        "session",
        "bad-signature",
      ),
      invalid("bit-flip-version", "Bit 0 of the version byte (1 -> 0).", flipBit(session.token, 0, 0), "session", "bad-version"),
      invalid(
        "bit-flip-kind-to-cursor",
        "Bit 1 of the kind byte (session 1 -> cursor 3).",
        flipBit(session.token, 1, 1),
        "session",
        "wrong-kind",
      ),
      invalid("bit-flip-kind-to-5", "Bit 2 of the kind byte (1 -> 5).", flipBit(session.token, 1, 2), "session", "bad-kind"),
      invalid(
        "bit-flip-key-id-length-high",
        "Bit 7 of the key-id length (6 -> 134).",
        flipBit(session.token, 2, 7),
        "session",
        "bad-key-id",
      ),
      invalid(
        "bit-flip-key-id-length-low",
        "Bit 0 of the key-id length (6 -> 7): another key id.",
        flipBit(session.token, 2, 0),
        "session",
        "unknown-key",
      ),
      invalid(
        "bit-flip-key-id",
        "Bit 0 of the last key-id byte (k-2025 -> k-2024).",
        flipBit(session.token, 8, 0),
        "session",
        "unknown-key",
      ),
      invalid("bit-flip-field-id", "Bit 0 of the first field id.", flipBit(session.token, 9, 0), "session", "bad-signature"),
      invalid("bit-flip-field-length", "Bit 0 of the first field's length.", flipBit(session.token, 13, 0), "session", "bad-signature"),
      invalid("bit-flip-field-value", "Bit 5 of the first byte of the issuer.", flipBit(session.token, 14, 5), "session", "bad-signature"),
      invalid("bit-flip-signature-first", "Bit 0 of the first signature byte.", flipBit(session.token, -32, 0), "session", "bad-signature"),
      invalid("bit-flip-signature-last", "Bit 7 of the last signature byte.", flipBit(session.token, -1, 7), "session", "bad-signature"),
      invalid(
        "field-header-truncated",
        "One byte after the last field: half a field header.",
        signedRaw("session", Buffer.concat([sessionPayload(sessionFields), Buffer.from([25])])),
        "session",
        "truncated-field",
      ),
      invalid(
        "field-value-past-payload",
        "The last field's length is one more than the bytes left.",
        sessionWith(sessionFields, { lengthOverride: { index: sessionFields.length - 1, length: sessionFields.at(-1)!.bytes.length + 1 } }),
        "session",
        "truncated-field",
      ),
      invalid(
        "fields-out-of-order",
        "Fields 2 and 3 swapped.",
        sessionWith([sessionFields[0]!, sessionFields[2]!, sessionFields[1]!, ...sessionFields.slice(3)]),
        "session",
        "field-order",
      ),
      invalid("field-repeated", "The issuer twice.", sessionWith([sessionFields[0]!, ...sessionFields]), "session", "duplicate-field"),
      invalid(
        "unknown-field-6",
        "Field 6 is not defined.",
        sessionWith([...sessionFields.slice(0, 5), text(6, "x"), ...sessionFields.slice(5)]),
        "session",
        "unknown-field",
      ),
      invalid(
        "stream-field-in-session",
        "Field 35 belongs to stream tokens.",
        sessionWith([...sessionFields, text(35, "result")]),
        "session",
        "unknown-field",
      ),
      invalid(
        "session-field-in-cursor",
        "Field 22 belongs to session tokens.",
        signedRaw(
          "cursor",
          rawPayload({ kindByte: 3, keyId: "k-2025", fields: [...cursorFields.slice(0, 6), u64(22, 1n), ...cursorFields.slice(6)] }),
        ),
        "cursor",
        "unknown-field",
      ),
      invalid("missing-issuer", "Field 1 absent.", sessionWith(without(sessionFields, 1)), "session", "missing-field"),
      invalid("missing-idempotency-key", "Field 23 absent.", sessionWith(without(sessionFields, 23)), "session", "missing-field"),
      invalid("no-fields", "A header and a signature, no fields.", sessionWith([]), "session", "missing-field"),
      invalid(
        "uuid-15-bytes",
        "The session id is 15 bytes.",
        sessionWith(replaceField(sessionFields, 16, bytesField(16, new Uint8Array(15)))),
        "session",
        "bad-field-length",
      ),
      invalid(
        "u64-4-bytes",
        "The issued-at is 4 bytes.",
        sessionWith(replaceField(sessionFields, 5, bytesField(5, new Uint8Array(4)))),
        "session",
        "bad-field-length",
      ),
      invalid("empty-text", "The issuer is empty.", sessionWith(replaceField(sessionFields, 1, text(1, ""))), "session", "empty-field"),
      invalid(
        "utf8-truncated-sequence",
        "The principal holds c3 28.",
        sessionWith(replaceField(sessionFields, 4, bytesField(4, Buffer.from([0xc3, 0x28])))),
        "session",
        "bad-utf8",
      ),
      invalid(
        "utf8-overlong",
        "The principal holds the overlong c0 af.",
        sessionWith(replaceField(sessionFields, 4, bytesField(4, Buffer.from([0xc0, 0xaf])))),
        "session",
        "bad-utf8",
      ),
      invalid(
        "utf8-surrogate",
        "The principal holds an encoded surrogate ed a0 80.",
        sessionWith(replaceField(sessionFields, 4, bytesField(4, Buffer.from([0xed, 0xa0, 0x80])))),
        "session",
        "bad-utf8",
      ),
      invalid(
        "agent-identity-upper-case",
        "Field 20 in upper-case hex.",
        sessionWith(replaceField(sessionFields, 20, text(20, DIGEST.toUpperCase()))),
        "session",
        "bad-field-value",
      ),
      invalid(
        "idempotency-key-1025-bytes",
        "Field 23 longer than 1 KiB.",
        sessionWith(replaceField(sessionFields, 23, text(23, "x".repeat(1025)))),
        "session",
        "bad-field-value",
      ),
      invalid(
        "stream-key-id-65-bytes",
        "Field 24 longer than a key id may be.",
        sessionWith(replaceField(sessionFields, 24, text(24, "k".repeat(65)))),
        "session",
        "bad-field-value",
      ),
      invalid(
        "direction-3",
        "Field 33 is neither 1 (input) nor 2 (output).",
        signedRaw("stream", rawPayload({ kindByte: 2, keyId: "k-2025", fields: replaceField(streamFields, 33, u64(33, 3n)) })),
        "stream",
        "bad-field-value",
      ),
      invalid(
        "event-0",
        "Field 49 is neither 1 (item) nor 2 (terminal).",
        signedRaw("cursor", rawPayload({ kindByte: 3, keyId: "k-2025", fields: replaceField(cursorFields, 49, u64(49, 0n)) })),
        "cursor",
        "bad-field-value",
      ),
    ],
  };
}
