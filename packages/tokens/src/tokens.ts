/**
 * The public token operations: mint, verify, inspect.
 */
import { U64_MAX } from "@golem-stream/wire";
import { argumentFault, InvalidTokenError, readingArguments, usageError } from "./errors.js";
import { FIELD_NAMES, FIELD_TABLE, isTokenKind } from "./field-table.js";
import { prepareFieldValue } from "./field-values.js";
import { assertKeyring, mintingKeyFor, signerFor, type Keyring } from "./keyring.js";
import { decodeEnvelope, layoutPayload, readFields, readHeader, tokenText, type PreparedField } from "./payload.js";
import { constantTimeEqual, SIGNATURE_BYTES } from "./signature.js";
import type { InspectedToken, SessionTokenFields, TokenFields, TokenKind, VerifiedToken } from "./types.js";

export interface MintOptions {
  /**
   * Sign with this key instead of the active one. Only stream tokens may use
   * a key other than the active one: they keep the key named by their
   * session's field 24 (see `streamTokenKeyId`) so their text never changes.
   */
  readonly keyId?: string | undefined;
}

/**
 * Mints a `kind` token carrying `fields`, signed with the keyring's active
 * key (or `options.keyId` for stream tokens).
 *
 * Invalid fields are a programming error of the caller, not hostile input:
 * they throw `ProtocolError("internal-error")` whose `path` names the field
 * (`fields.sessionId`) and whose message says what the field must be,
 * without echoing the value.
 */
export function mintToken<K extends TokenKind>(kind: K, fields: TokenFields<K>, keyring: Keyring, options: MintOptions = {}): string {
  return readingArguments(() => mint(kind, fields, keyring, options));
}

function mint(kind: TokenKind, fields: unknown, keyring: Keyring, options: MintOptions): string {
  if (!isTokenKind(kind)) throw usageError('kind must be "session", "stream" or "cursor"', "kind");
  assertKeyring(keyring);
  if (typeof options !== "object" || options === null) throw usageError("options must be an object", "options");
  const keyId = options.keyId ?? keyring.activeKeyId;
  if (keyId !== keyring.activeKeyId) {
    if (kind !== "stream") throw usageError("only stream tokens may be signed with a non-active key", "options.keyId");
    if (typeof keyId !== "string" || !keyring.has(keyId)) throw usageError("options.keyId names no key of the keyring", "options.keyId");
  }
  const key = mintingKeyFor(keyring, keyId, kind);
  if (key === undefined) throw usageError("options.keyId names no key of the keyring", "options.keyId");

  const prepared = prepareFields(kind, fields);
  const bytes = layoutPayload(kind, key.keyIdBytes, prepared);
  const payloadEnd = bytes.length - SIGNATURE_BYTES;
  key.signer.macInto(bytes.subarray(0, payloadEnd), bytes.subarray(payloadEnd));
  return tokenText(bytes);
}

function prepareFields(kind: TokenKind, fields: unknown): PreparedField[] {
  if (typeof fields !== "object" || fields === null || Array.isArray(fields)) {
    throw usageError("fields must be an object", "fields");
  }
  const record = fields as Record<string, unknown>;
  const specs = FIELD_TABLE[kind];
  // An extra member is a mistake the caller wants to hear about (say, a
  // streamKeyId passed to a stream token), not something to drop silently.
  const names = FIELD_NAMES[kind];
  for (const name of Object.keys(record)) {
    if (record[name] !== undefined && !names.has(name)) {
      throw usageError(`${kind} tokens have no field ${JSON.stringify(name)}`, `fields.${name}`);
    }
  }
  const prepared: PreparedField[] = [];
  for (const spec of specs) {
    const value = record[spec.name];
    if (value === undefined && spec.optional) continue;
    const result = prepareFieldValue(spec, value);
    if (typeof result === "string") throw usageError(`${spec.name} (field ${spec.id}) ${result}`, `fields.${spec.name}`);
    prepared.push({ id: spec.id, value: result });
  }
  return prepared;
}

/** Scratch for the computed signature: verification is synchronous, so one buffer serves every call. */
const expectedSignature = new Uint8Array(SIGNATURE_BYTES);

/**
 * Verifies a token from the network and returns its typed fields.
 *
 * Bounded and ordered: length (8192) before decoding, strict base64url,
 * format version, kind byte against `expectedKind` (which also fixes the
 * signature domain), key id and its presence in the keyring, a constant-time
 * signature comparison, and only then the fields. Any failure throws
 * `InvalidTokenError` (code `invalid-token`, generic message, `reason` for
 * logs).
 *
 * This proves the server minted the token. Whether it belongs to this
 * caller and this session is the caller's check (`assertTokenIdentity`).
 */
export function verifyToken<K extends TokenKind>(token: string, expectedKind: K, keyring: Keyring): VerifiedToken<K> {
  if (!isTokenKind(expectedKind)) throw usageError('expectedKind must be "session", "stream" or "cursor"', "expectedKind");
  try {
    assertKeyring(keyring);
  } catch (cause) {
    // A proxy posing as a keyring throws from its own traps: the caller's mistake, as any non-keyring.
    throw argumentFault(cause);
  }
  const bytes = decodeEnvelope(token);
  const header = readHeader(bytes, expectedKind);
  const signer = signerFor(keyring, header.keyId, expectedKind);
  if (signer === undefined) throw new InvalidTokenError("unknown-key");
  signer.macInto(bytes.subarray(0, header.payloadEnd), expectedSignature);
  if (!constantTimeEqual(bytes, header.payloadEnd, expectedSignature, SIGNATURE_BYTES)) {
    throw new InvalidTokenError("bad-signature");
  }
  const fields = readFields(expectedKind, bytes, header.fieldsStart, header.payloadEnd);
  return { kind: expectedKind, keyId: header.keyId, fields };
}

/**
 * Decodes a token without trusting it, for operators and debugging: the
 * signature is not checked (`signatureValid` is always `undefined`), so
 * nothing returned may drive a decision. Still bounded and strict: input that
 * does not decode throws `InvalidTokenError` like `verifyToken` would.
 */
export function inspectToken(token: string): InspectedToken {
  const bytes = decodeEnvelope(token);
  const header = readHeader(bytes, undefined);
  const fields = readFields(header.kind, bytes, header.fieldsStart, header.payloadEnd);
  // readFields built `fields` for `header.kind`; TypeScript cannot correlate the two.
  return { kind: header.kind, keyId: header.keyId, fields, signatureValid: undefined } as InspectedToken;
}

/**
 * The key that signs a session's stream tokens (protocol section 10.1):
 * session field 24 when present, otherwise the session token's own signing
 * key (tokens issued before field 24 existed).
 */
export function streamTokenKeyId(sessionFields: SessionTokenFields, sessionTokenKeyId: string): string {
  return readingArguments(() => keyIdOfStreams(sessionFields, sessionTokenKeyId));
}

function keyIdOfStreams(sessionFields: SessionTokenFields, sessionTokenKeyId: string): string {
  if (typeof sessionFields !== "object" || sessionFields === null) throw usageError("sessionFields must be an object", "sessionFields");
  const fromField = sessionFields.streamKeyId;
  if (fromField !== undefined) {
    if (typeof fromField !== "string") throw usageError("streamKeyId must be a string", "sessionFields.streamKeyId");
    return fromField;
  }
  if (typeof sessionTokenKeyId !== "string" || sessionTokenKeyId.length === 0) {
    throw usageError("sessionTokenKeyId must be a non-empty string", "sessionTokenKeyId");
  }
  return sessionTokenKeyId;
}

/**
 * The fields of a refreshed session token (resume or takeover): the old
 * token's fields with a new generation and issue time, and field 24 pinned
 * so stream tokens keep their key even when the refreshed token is signed by
 * a newer active key.
 */
export function refreshedSessionFields(
  previous: VerifiedToken<"session">,
  changes: { readonly generation: bigint; readonly issuedAt: bigint },
): SessionTokenFields {
  return readingArguments(() => refreshed(previous, changes));
}

function refreshed(
  previous: VerifiedToken<"session">,
  changes: { readonly generation: bigint; readonly issuedAt: bigint },
): SessionTokenFields {
  if (typeof previous !== "object" || previous === null || previous.kind !== "session") {
    throw usageError("previous must be a verified session token", "previous");
  }
  if (typeof changes !== "object" || changes === null) throw usageError("changes must be an object", "changes");
  for (const name of ["generation", "issuedAt"] as const) {
    const value: unknown = changes[name];
    if (typeof value !== "bigint" || value < 0n || value > U64_MAX) {
      throw usageError(`${name} must be a bigint from 0 to 2^64-1`, `changes.${name}`);
    }
  }
  return {
    ...previous.fields,
    generation: changes.generation,
    issuedAt: changes.issuedAt,
    streamKeyId: streamTokenKeyId(previous.fields, previous.keyId),
  };
}
