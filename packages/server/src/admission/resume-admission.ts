/**
 * `resumeAttach` (section 9): resume (the client's current generation) and
 * takeover (any earlier one) of a session it holds a session token of. The
 * token and the output cursors are verified, then, under the session's
 * queue, either the attempt's exact replay is answered or a new generation
 * is committed and its attachment made the session's owner.
 */
import { ProtocolError, type JsonValue, type ResumeAttach } from "@golem-stream/wire";
import { refreshedSessionFields, type VerifiedToken } from "@golem-stream/tokens";
import type { Attachment } from "../attachment/attachment.js";
import type { LiveSession } from "../invocation/live-session.js";
import type { RuntimeDeps } from "./runtime-deps.js";
import type { Authorizer, Principal } from "../options.js";
import type { AttemptRecord } from "../store/session-store.js";
import { ATTEMPT_RECORD_BYTES } from "../store/record-bytes.js";
import type { SessionTransport } from "../transport/transport.js";
import type { SessionCache } from "../sessions/session-cache.js";
import { digestOf } from "../values.js";
import { authorizeOrThrow, verifyUnderAnyName } from "./caller-checks.js";
import { checkRetained, openDecided, type DecidedAttachment, type ExactReplay } from "./exact-replay.js";
import { verifyCursors } from "./output-cursors.js";
import { asInvalidToken } from "./token-service.js";

export class ResumeAdmission {
  readonly #deps: RuntimeDeps;
  readonly #cache: SessionCache;
  readonly #replay: ExactReplay;
  readonly #authorize: Authorizer;

  constructor(deps: RuntimeDeps, cache: SessionCache, replay: ExactReplay, authorize: Authorizer) {
    this.#deps = deps;
    this.#cache = cache;
    this.#replay = replay;
    this.#authorize = authorize;
  }

  async resume(message: ResumeAttach, caller: Principal, transport: SessionTransport): Promise<Attachment> {
    const descriptorDigest = digestOf(resumeDescriptor(message));
    let verified: VerifiedToken<"session">;
    try {
      ({ verified, caller } = verifyUnderAnyName(this.#deps.tokens, message.sessionToken, caller));
    } catch (error) {
      throw asInvalidToken(error);
    }
    const sessionId = verified.fields.sessionId;
    return openDecided(
      this.#cache.exclusive(sessionId, async () => {
        const existing = await this.#deps.store.getAttempt(message.attemptId);
        const live = await this.#cache.load(sessionId);
        if (live === undefined) throw new ProtocolError("session-expired", "the session is no longer retained");
        return this.#cache.evictOnFailure(live, () =>
          this.#resumeLoaded(live, message, caller, transport, verified, existing, descriptorDigest),
        );
      }),
    );
  }

  async #resumeLoaded(
    live: LiveSession,
    message: ResumeAttach,
    caller: Principal,
    transport: SessionTransport,
    verified: VerifiedToken<"session">,
    existing: AttemptRecord | undefined,
    descriptorDigest: string,
  ): Promise<DecidedAttachment> {
    const fields = verified.fields;
    const record = live.record;
    if (
      record.application !== fields.application ||
      record.environment !== fields.environment ||
      record.agentType !== fields.agentType ||
      record.agentIdentity !== fields.agentIdentity ||
      record.method !== fields.method ||
      record.idempotencyKey !== fields.idempotencyKey ||
      record.account !== caller.account ||
      record.principal !== caller.principal
    ) {
      throw new ProtocolError("invalid-token", "the token is not valid here");
    }
    const cursors = await verifyCursors(this.#deps, message.outputCursors, caller, live);
    if (existing !== undefined) {
      return this.#replay.decide(existing, descriptorDigest, message.operation, caller, transport, cursors);
    }
    checkRetained(this.#deps, live);
    await authorizeOrThrow(this.#authorize, {
      caller,
      operation: message.operation,
      application: record.application,
      environment: record.environment,
      agentType: record.agentType,
      agentIdentity: record.agentIdentity,
      method: record.method,
    });
    // In a cluster the same attempt may have been decided at another node meanwhile (an exact
    // replay racing the original): then it is that attempt's replay, not a superseded resume.
    const supersededUnlessDecided = async (): Promise<DecidedAttachment> => {
      const decided = await this.#deps.store.getAttempt(message.attemptId);
      if (decided !== undefined) return this.#replay.decide(decided, descriptorDigest, message.operation, caller, transport, cursors);
      throw new ProtocolError("superseded", "a newer attachment of this session exists; use takeover");
    };
    if (message.operation === "resume" && fields.generation !== record.generation) return supersededUnlessDecided();
    if (fields.generation > record.generation) throw new ProtocolError("invalid-token", "the token is not valid here");

    const generation = record.generation + 1n;
    const sessionToken = this.#deps.tokens.mintSession(caller, {
      ...refreshedSessionFields(verified, { generation, issuedAt: BigInt(this.#deps.now()) }),
      streamKeyId: record.streamKeyId,
    });
    const attempt: AttemptRecord = {
      attemptId: message.attemptId,
      operation: message.operation,
      descriptorDigest,
      sessionId: record.sessionId,
      generation,
    };
    const expected = message.operation === "resume" ? fields.generation : record.generation;
    // The attempt's record stays as long as the session (an exact replay must find it), so it
    // counts against the caller's stored bytes (store/record-bytes.ts): a loop of resumes cannot
    // fill the disk. It may go past the bound by a headroom, so that a principal at its bound can
    // still reach its sessions. An exact replay above stores nothing and is never refused for it.
    const refused = this.#deps.storedBytes.chargeAttempt(live.owner, ATTEMPT_RECORD_BYTES);
    if (refused !== undefined) throw refused;
    const attached = await this.#deps.store.attach(attempt, sessionToken, expected);
    if (attached.kind !== "attached") this.#deps.storedBytes.refund(live.owner, ATTEMPT_RECORD_BYTES);
    if (attached.kind === "superseded") return supersededUnlessDecided();
    if (attached.kind === "attempt-exists") {
      const raced = await this.#deps.store.getAttempt(message.attemptId);
      if (raced === undefined) throw new ProtocolError("internal-error", "internal error");
      return this.#replay.decide(raced, descriptorDigest, message.operation, caller, transport, cursors);
    }
    live.record = { ...live.record, generation, sessionToken };
    const attachment = this.#cache.newAttachment(live, message.attemptId, generation, transport, message.operation);
    live.attach(attachment);
    return { attachment, open: () => attachment.open({ cursors, resolveProvisionalRefs: false }, record.idempotencyKey, true) };
  }
}

/** What an exact replay of a resume or takeover must repeat (section 9). */
function resumeDescriptor(message: ResumeAttach): JsonValue {
  return {
    attemptId: message.attemptId,
    operation: message.operation,
    // The cursor set is a set: order does not change the descriptor.
    outputCursors: [...message.outputCursors].sort(),
    sessionToken: message.sessionToken,
  };
}
