/**
 * Cursor tokens of one output stream, minted many times a second (one per
 * output event). `mintToken("cursor", …)` checks and lays out every field of
 * every token and hashes the whole payload; here the fields that do not
 * change along a stream (issuer, audience, account, principal, session and
 * stream ids) are checked and laid out once, the signature's HMAC state is
 * advanced over the bytes before the first varying field once, and each
 * token writes only `issuedAt`, `position` and `event`, and encodes as text
 * only the bytes from the base64 group holding `issuedAt` on. The text is
 * what `mintToken` makes for the same fields (test/cursor-minter.test.ts).
 */
import { readingArguments, usageError } from "./errors.js";
import { FIELD_TABLE } from "./field-table.js";
import { assertKeyring, mintingKeyFor, type Keyring } from "./keyring.js";
import { base64UrlEncoderOf } from "./base64url.js";
import { layoutPayload, tokenText } from "./payload.js";
import { prepareFieldValue } from "./field-values.js";
import { SIGNATURE_BYTES, type PreparedHmac } from "./signature.js";
import { U64_MAX } from "@golem-stream/wire";
import type { CommonTokenFields, CursorEvent } from "./types.js";

/** The fields a stream's cursor tokens share. */
export type CursorStreamFields = Omit<CommonTokenFields, "issuedAt"> & { readonly sessionId: string; readonly streamId: string };

export interface CursorMinter {
  /** The cursor token for `position` and `event`, issued at `issuedAt` (ms since the epoch), signed with the keyring's active key. */
  mint(issuedAt: bigint, position: bigint, event: CursorEvent): string;
}

const VARYING = new Set(["issuedAt", "position", "event"]);

/** A minter for one stream's cursors under `keyring`'s active key; checks `fields` once, as `mintToken` would. */
export function cursorMinter(keyring: Keyring, fields: CursorStreamFields): CursorMinter {
  return readingArguments(() => minterOf(keyring, fields));
}

function minterOf(keyring: Keyring, fields: CursorStreamFields): CursorMinter {
  assertKeyring(keyring);
  if (typeof fields !== "object" || fields === null) throw usageError("fields must be an object", "fields");
  const key = mintingKeyFor(keyring, keyring.activeKeyId, "cursor")!;
  const record = fields as unknown as Record<string, unknown>;
  for (const name of Object.keys(record)) {
    if (record[name] !== undefined && !FIELD_TABLE.cursor.some((spec) => spec.name === name && !VARYING.has(name))) {
      throw usageError(`a cursor minter has no field ${JSON.stringify(name)}`, `fields.${name}`);
    }
  }
  // Placeholders for the varying fields (same widths: three u64s); their offsets are found below.
  const prepared = FIELD_TABLE.cursor.map((spec) => {
    const value = VARYING.has(spec.name) ? { wire: "u64" as const, value: 0n } : prepareFieldValue(spec, record[spec.name]);
    if (typeof value === "string") throw usageError(`${spec.name} (field ${spec.id}) ${value}`, `fields.${spec.name}`);
    return { id: spec.id, value };
  });
  const template = layoutPayload("cursor", key.keyIdBytes, prepared);
  const offsets = offsetsOf(template, key.keyIdBytes.length, prepared);
  // Everything before issuedAt's value is the same in every token: hash it once.
  const signer: PreparedHmac = key.signer.extended(template.subarray(0, offsets.issuedAt));
  const payloadEnd = template.length - SIGNATURE_BYTES;
  const bytes = template.slice();
  const view = new DataView(bytes.buffer);
  // Views made once: each token rewrites the same bytes in place.
  const sinceIssuedAt = bytes.subarray(offsets.issuedAt, offsets.position);
  const sincePosition = bytes.subarray(offsets.position, payloadEnd);
  const signature = bytes.subarray(payloadEnd);
  // The bytes from issuedAt to position (issuedAt, then the session and
  // stream ids) are the same for every token of one millisecond: the HMAC
  // state over them is made at the first token of each millisecond, and the
  // others hash only position, event and what follows. Where a SHA-256
  // block ends inside those bytes, that saves one of the token's four
  // compressions. One state, made here and set again in place at each new
  // millisecond (no state allocated per millisecond).
  let stateIssuedAt = -1n;
  const sinceIssuedAtSigner: PreparedHmac = signer.extended(sinceIssuedAt);
  // Base64url maps each 3 bytes to 4 characters on their own, so the text of
  // the whole 3-byte groups before issuedAt is the same in every token:
  // written once, and each token encodes only the bytes after it.
  const fixedBytes = offsets.issuedAt - (offsets.issuedAt % 3);
  const fixedText = tokenText(bytes.subarray(0, fixedBytes));
  // Encoded from the same view every time (the bytes under it are rewritten per token).
  const varyingText = base64UrlEncoderOf(bytes.subarray(fixedBytes));
  return {
    mint(issuedAt, position, event) {
      if (typeof issuedAt !== "bigint" || issuedAt < 0n || issuedAt > U64_MAX)
        throw usageError("issuedAt (field 5) must be a bigint from 0 to 2^64-1", "issuedAt");
      if (typeof position !== "bigint" || position < 0n || position > U64_MAX)
        throw usageError("position (field 48) must be a bigint from 0 to 2^64-1", "position");
      // Compared, never used as a key: a key lookup converts an object to a string first, which
      // throws for one without a prototype and finds inherited members such as "toString".
      const eventValue = event === "item" ? 1n : event === "terminal" ? 2n : undefined;
      if (eventValue === undefined) throw usageError('event (field 49) must be one of "item", "terminal"', "event");
      view.setBigUint64(offsets.issuedAt, issuedAt, false);
      view.setBigUint64(offsets.position, position, false);
      view.setBigUint64(offsets.event, eventValue, false);
      if (issuedAt !== stateIssuedAt) {
        signer.extendInto(sinceIssuedAt, sinceIssuedAtSigner);
        stateIssuedAt = issuedAt;
      }
      sinceIssuedAtSigner.macInto(sincePosition, signature);
      return fixedText + varyingText();
    },
  };
}

/** Where the values of the three varying fields start in the laid-out payload. */
function offsetsOf(
  template: Uint8Array,
  keyIdLength: number,
  prepared: readonly { readonly id: number; readonly value: { readonly wire: string } }[],
): { issuedAt: number; position: number; event: number } {
  const ids = { issuedAt: 5, position: 48, event: 49 };
  const found: Record<number, number> = {};
  let pos = 3 + keyIdLength;
  for (const { id } of prepared) {
    const length = new DataView(template.buffer).getUint32(pos + 1, false);
    found[id] = pos + 5;
    pos += 5 + length;
  }
  const offsets = { issuedAt: found[ids.issuedAt]!, position: found[ids.position]!, event: found[ids.event]! };
  // The minter signs in two steps split at position (see cursorMinter); field ids are laid out in order.
  if (!(offsets.issuedAt < offsets.position && offsets.position < offsets.event)) throw new Error("cursor fields out of order");
  return offsets;
}
