/**
 * A second, deliberately independent writer of token bytes for the tests:
 * Node's Buffer and node:crypto HMAC instead of the package's own code, and
 * free to write what the package never would (fields out of order, wrong
 * kinds, bad key ids) with a valid signature, so that every check behind the
 * signature can be reached.
 */
import { createHmac } from "node:crypto";

export interface RawField {
  readonly id: number;
  readonly bytes: Uint8Array;
}

export const text = (id: number, value: string): RawField => ({ id, bytes: Buffer.from(value, "utf8") });
export const uuid = (id: number, value: string): RawField => ({ id, bytes: Buffer.from(value.replace(/-/g, ""), "hex") });
export const u64 = (id: number, value: bigint): RawField => {
  const bytes = Buffer.alloc(8);
  bytes.writeBigUInt64BE(value);
  return { id, bytes };
};
export const bytesField = (id: number, bytes: Uint8Array): RawField => ({ id, bytes });

export interface RawPayload {
  readonly version?: number;
  readonly kindByte: number;
  readonly keyId: string | Uint8Array;
  /** Overrides the key-id length byte. */
  readonly keyIdLength?: number;
  readonly fields: readonly RawField[];
  /** Overrides a field's u32 length (by position in `fields`). */
  readonly lengthOverride?: { readonly index: number; readonly length: number };
}

export function rawPayload(spec: RawPayload): Buffer {
  const keyId = typeof spec.keyId === "string" ? Buffer.from(spec.keyId, "utf8") : Buffer.from(spec.keyId);
  const parts: Buffer[] = [Buffer.from([spec.version ?? 1, spec.kindByte, spec.keyIdLength ?? keyId.length]), keyId];
  spec.fields.forEach((field, index) => {
    const header = Buffer.alloc(5);
    header[0] = field.id;
    const length = spec.lengthOverride?.index === index ? spec.lengthOverride.length : field.bytes.length;
    header.writeUInt32BE(length, 1);
    parts.push(header, Buffer.from(field.bytes));
  });
  return Buffer.concat(parts);
}

/** HMAC-SHA256(secret, "golem.agent-invocation.token.v1" 0x00 kindWord 0x00 payload), protocol 10.2. */
export function rawSignature(secret: Uint8Array, kindWord: string, payload: Uint8Array): Buffer {
  return createHmac("sha256", secret)
    .update(Buffer.from(`golem.agent-invocation.token.v1\u0000${kindWord}\u0000`, "ascii"))
    .update(payload)
    .digest();
}

export function rawTokenText(bytes: Uint8Array): string {
  return `gai1_${Buffer.from(bytes).toString("base64url")}`;
}

/** `gai1_` + base64url(payload || signature). */
export function rawToken(payload: Uint8Array, signature: Uint8Array): string {
  return rawTokenText(Buffer.concat([payload, signature]));
}

/** The decoded bytes of a token text (Node's lenient decoder: only for tokens the tests made). */
export function tokenBytes(token: string): Buffer {
  return Buffer.from(token.slice("gai1_".length), "base64url");
}
