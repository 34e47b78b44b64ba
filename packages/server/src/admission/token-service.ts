/**
 * The admission folder owns what decides whether a caller gets in and under
 * which identity: the tokens (minted and checked here), how a token's room
 * is shared out (token-budget.ts), and the per-principal bounds on
 * connections, running sessions (principal-slots.ts) and stored bytes
 * (stored-bytes.ts), and the first-message rules that apply them: start,
 * exact-attempt replay, resume and takeover (`SessionRuntime`,
 * session-runtime.ts, and the files it names).
 *
 * This file: minting and checking the three opaque tokens for one deployment. The
 * keyring is held here and nowhere else; nothing in this file logs a token.
 *
 * Identity checks (protocol section 10.2): issuer, audience, account and
 * effective principal must match the deployment and the authenticated
 * caller; the parent session must match; kind is fixed by the call.
 */
import { LIMITS, ProtocolError, type StreamDirection } from "@golem-stream/wire";
import {
  TokenTooLongError,
  assertTokenIdentity,
  cursorMinter,
  mintToken,
  type CursorMinter,
  verifyToken,
  type CursorEvent,
  type CommonTokenFields,
  type Keyring,
  type SessionTokenFields,
  type VerifiedToken,
} from "@golem-stream/tokens";
import type { Principal } from "../options.js";
import type { CursorPosition } from "../attachment/output-pumps.js";
import type { StreamTokens } from "../invocation/session-deps.js";

/** What a verified cursor says: declared where the attachment places its output at one (output-pumps.ts). */
export type { CursorPosition } from "../attachment/output-pumps.js";

export interface TokenIdentity {
  readonly issuer: string;
  readonly audience: string;
}

/**
 * What the session supplies for a session token; the common fields come from
 * the deployment and the caller. Every session the server mints names its
 * stream-token key (field 24), so that field is required here.
 */
export type SessionTokenInput = Omit<SessionTokenFields, keyof CommonTokenFields | "streamKeyId"> & {
  readonly streamKeyId: string;
};

export class TokenService implements StreamTokens {
  #keyring: Keyring;
  readonly #identity: TokenIdentity;
  readonly #now: () => number;

  constructor(keyring: Keyring, identity: TokenIdentity, now: () => number = Date.now) {
    this.#keyring = keyring;
    this.#identity = identity;
    this.#now = now;
  }

  /** Replaces the keyring (rotation): new tokens use its active key. */
  setKeyring(keyring: Keyring): void {
    this.#keyring = keyring;
  }

  get activeKeyId(): string {
    return this.#keyring.activeKeyId;
  }

  #common(caller: Principal) {
    return {
      issuer: this.#identity.issuer,
      audience: this.#identity.audience,
      account: caller.account,
      principal: caller.principal,
      issuedAt: BigInt(this.#now()),
    };
  }

  /**
   * Throws `TokenTooLongError` (`limit-exceeded`) when the selector's names,
   * the idempotency key and the caller's identity are too long together:
   * every caller mints before anything is committed, so the start, resume or
   * takeover is refused and nothing is left behind.
   */
  mintSession(caller: Principal, input: SessionTokenInput): string {
    try {
      return mintToken("session", { ...this.#common(caller), ...input }, this.#keyring);
    } catch (error) {
      if (!(error instanceof TokenTooLongError)) throw error;
      throw new TokenTooLongError(
        "session",
        error.characters,
        `the session token would be ${error.characters} characters long, over the limit of ${LIMITS.maxTokenBytes}: ` +
          "the application, environment, agent type and method names, the idempotency key and the caller's identity are too long together",
      );
    }
  }

  /**
   * Stream tokens are minted once per stream with the session's stream key, and stored.
   * Throws `TokenTooLongError` (`limit-exceeded`) for a stream too deep in its value
   * (its coordinate) for the caller's identity; nothing is committed before.
   */
  mintStream(
    caller: Principal,
    sessionId: string,
    streamKeyId: string,
    stream: { streamId: string; direction: StreamDirection; elementSchemaDigest: string; coordinate: string },
  ): string {
    const keyId = this.#keyring.has(streamKeyId) ? streamKeyId : this.#keyring.activeKeyId;
    try {
      return mintToken("stream", { ...this.#common(caller), sessionId, ...stream }, this.#keyring, { keyId });
    } catch (error) {
      if (!(error instanceof TokenTooLongError)) throw error;
      throw new TokenTooLongError(
        "stream",
        error.characters,
        `the token of an ${stream.direction} stream would be ${error.characters} characters long, over the limit of ${LIMITS.maxTokenBytes}: ` +
          `the stream lies too deep in its value (a coordinate of ${stream.coordinate.length} characters) for the caller's identity`,
      );
    }
  }

  /**
   * The cursors of one output stream: the bytes `mintToken("cursor", …)` makes
   * for the caller, the session and the stream (tokens' cursor-minter.ts), with
   * the fields they share checked and hashed once. A new keyring (rotation) is
   * picked up at the next token.
   */
  cursorsOf(caller: Principal, sessionId: string, streamId: string): (position: bigint, event: CursorEvent) => string {
    const fields = {
      issuer: this.#identity.issuer,
      audience: this.#identity.audience,
      account: caller.account,
      principal: caller.principal,
      sessionId,
      streamId,
    };
    let keyring = this.#keyring;
    let minter: CursorMinter = cursorMinter(keyring, fields);
    return (position, event) => {
      if (keyring !== this.#keyring) {
        keyring = this.#keyring;
        minter = cursorMinter(keyring, fields);
      }
      return minter.mint(BigInt(this.#now()), position, event);
    };
  }

  /** Verifies a session token presented by `caller`; throws `invalid-token`. */
  verifySession(token: string, caller: Principal): VerifiedToken<"session"> {
    const verified = verifyToken(token, "session", this.#keyring);
    this.#checkIdentity(verified.fields, caller, undefined);
    return verified;
  }

  /** Verifies an output cursor of `sessionId` presented by `caller`; throws `invalid-token`. */
  verifyCursor(token: string, caller: Principal, sessionId: string): CursorPosition {
    const { fields } = verifyToken(token, "cursor", this.#keyring);
    this.#checkIdentity(fields, caller, sessionId);
    return { streamId: fields.streamId, position: fields.position, event: fields.event };
  }

  #checkIdentity(fields: SessionTokenFields | VerifiedToken<"cursor">["fields"], caller: Principal, sessionId: string | undefined): void {
    assertTokenIdentity(fields, {
      issuer: this.#identity.issuer,
      audience: this.#identity.audience,
      account: caller.account,
      principal: caller.principal,
      sessionId,
    });
  }
}

/** Re-throws anything a token check raised as a safe `invalid-token`. */
export function asInvalidToken(error: unknown): ProtocolError {
  if (error instanceof ProtocolError && error.code === "invalid-token") return error;
  return new ProtocolError("invalid-token", "the token is not valid here", { cause: error });
}
