/**
 * Tokens of the scripted server: real `gai1_` tokens (protocol 10), signed
 * with a key made for the run, so a client that peeks at them (as ours does
 * for stream identity) sees the layout of decisions §4, and a cursor the
 * client sends back is verified: one it invented or altered is caught.
 */
import { randomUUID } from "node:crypto";
import { Keyring, mintToken, verifyToken, type CursorEvent } from "@golem-stream/tokens";

const COMMON = { issuer: "conformance", audience: "client-under-test", account: "conformance", principal: "conformance" } as const;
const DIGEST = "0".repeat(64);

export interface CursorPosition {
  readonly streamId: string;
  /** Count of items before the event: an item's sequence, or the terminal's. */
  readonly position: bigint;
  readonly event: CursorEvent;
}

export class ScriptTokens {
  readonly #keyring = Keyring.generate("conformance");
  readonly sessionId = randomUUID();

  session(generation: number): string {
    return mintToken(
      "session",
      {
        ...COMMON,
        issuedAt: 0n,
        sessionId: this.sessionId,
        application: "demo",
        environment: "default",
        agentType: "echo",
        agentIdentity: DIGEST,
        method: "scripted",
        generation: BigInt(generation),
        idempotencyKey: "scripted",
      },
      this.#keyring,
    );
  }

  /** A stream token; `streamId` is a UUID naming the stream inside the script. */
  stream(streamId: string, direction: "input" | "output"): string {
    return mintToken(
      "stream",
      { ...COMMON, issuedAt: 0n, sessionId: this.sessionId, streamId, direction, elementSchemaDigest: DIGEST, coordinate: "0" },
      this.#keyring,
    );
  }

  cursor(streamId: string, position: bigint, event: CursorEvent): string {
    return mintToken("cursor", { ...COMMON, issuedAt: 0n, sessionId: this.sessionId, streamId, position, event }, this.#keyring);
  }

  /** The position a cursor names; throws if this server never issued it. */
  readCursor(token: string): CursorPosition {
    const { fields } = verifyToken(token, "cursor", this.#keyring);
    return { streamId: fields.streamId, position: fields.position, event: fields.event };
  }

  /** Whether a session token is one this server issued. */
  isSession(token: string): boolean {
    try {
      verifyToken(token, "session", this.#keyring);
      return true;
    } catch {
      return false;
    }
  }
}
