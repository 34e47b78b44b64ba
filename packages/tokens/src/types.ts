/**
 * The typed view of the three token kinds (decisions-v1 section 4), with
 * camelCase names. Text is a JavaScript string, UUIDs are lower-case
 * hyphenated strings, u64 fields are `bigint`.
 */

export type TokenKind = "session" | "stream" | "cursor";

/** All kinds, in token-kind byte order (1, 2, 3). */
export const TOKEN_KINDS: readonly TokenKind[] = ["session", "stream", "cursor"];

/** Fields 1-5, present in every kind. */
export interface CommonTokenFields {
  /** 1: who issued the token (the deployment). */
  readonly issuer: string;
  /** 2: who the token is for. */
  readonly audience: string;
  /** 3: the account the session belongs to. */
  readonly account: string;
  /** 4: the effective principal that started the session. */
  readonly principal: string;
  /** 5: milliseconds since the Unix epoch. */
  readonly issuedAt: bigint;
}

export interface SessionTokenFields extends CommonTokenFields {
  /** 16: the durable session. */
  readonly sessionId: string;
  /** 17 */
  readonly application: string;
  /** 18 */
  readonly environment: string;
  /** 19 */
  readonly agentType: string;
  /** 20: lower-case hex SHA-256 of the canonical constructor parameters and phantom id. */
  readonly agentIdentity: string;
  /** 21 */
  readonly method: string;
  /** 22: attachment generation; a refreshed token carries the new one. */
  readonly generation: bigint;
  /** 23: the invocation idempotency key, 1..1024 UTF-8 bytes. */
  readonly idempotencyKey: string;
  /**
   * 24: the key id that signs this session's stream tokens. Absent in tokens
   * issued before the field existed; `streamTokenKeyId` applies the fallback.
   */
  readonly streamKeyId?: string | undefined;
}

export type StreamDirection = "input" | "output";

export interface StreamTokenFields extends CommonTokenFields {
  /** 16: the parent session. */
  readonly sessionId: string;
  /** 32: server-internal stream id, opaque to clients. */
  readonly streamId: string;
  /** 33 */
  readonly direction: StreamDirection;
  /** 34: lower-case hex SHA-256 of the canonical element SchemaGraph. */
  readonly elementSchemaDigest: string;
  /** 35: where the stream leaf sits inside the value that introduced it; non-empty. */
  readonly coordinate: string;
}

export type CursorEvent = "item" | "terminal";

export interface CursorTokenFields extends CommonTokenFields {
  /** 16: the parent session. */
  readonly sessionId: string;
  /** 32: the output stream. */
  readonly streamId: string;
  /** 48: count of logical items before this event. */
  readonly position: bigint;
  /** 49: an item (or packed batch), or the stream's terminal. */
  readonly event: CursorEvent;
}

export interface TokenFieldsByKind {
  session: SessionTokenFields;
  stream: StreamTokenFields;
  cursor: CursorTokenFields;
}

export type TokenFields<K extends TokenKind> = TokenFieldsByKind[K];

/** A token whose signature checked out against the keyring. */
export interface VerifiedToken<K extends TokenKind> {
  readonly kind: K;
  /** The key that signed it (not secret). */
  readonly keyId: string;
  readonly fields: TokenFields<K>;
}

/**
 * A token decoded without checking its signature: for operators, never for
 * decisions. Discriminated by `kind`, so `fields` narrows with it.
 */
export type InspectedToken = {
  readonly [K in TokenKind]: {
    readonly kind: K;
    readonly keyId: string;
    readonly fields: TokenFields<K>;
    /** Always `undefined`: inspection does not know the keys, so it says nothing about authenticity. */
    readonly signatureValid: undefined;
  };
}[TokenKind];
