/**
 * Exact-attempt replay (section 9): an attempt id the store already holds
 * is answered from what that attempt decided, never decided again. Start
 * and resume both end here when their attempt exists (or appears meanwhile,
 * decided by a racing copy or another node). Also what every accepted
 * attach shares: the decided attachment, opened outside the session's
 * queue, and the retention check.
 */
import { ProtocolError } from "@golem-stream/wire";
import type { Attachment } from "../attachment/attachment.js";
import type { LiveSession } from "../invocation/live-session.js";
import type { RuntimeDeps } from "./runtime-deps.js";
import type { Authorizer, Principal } from "../options.js";
import type { AttemptRecord } from "../store/session-store.js";
import type { SessionTransport } from "../transport/transport.js";
import type { SessionCache } from "../sessions/session-cache.js";
import { authorizeOrThrow, underRecordedName } from "./caller-checks.js";
import type { CursorPosition } from "./token-service.js";

/** An attachment whose ownership is decided; `open` sends its acceptance. */
export interface DecidedAttachment {
  readonly attachment: Attachment;
  open(): Promise<void>;
}

/** Sends the acceptance of an attachment decided under the session's queue (`SessionCache.exclusive`). */
export async function openDecided(decided: Promise<DecidedAttachment>): Promise<Attachment> {
  const { attachment, open } = await decided;
  await open();
  return attachment;
}

/** `session-expired` once a finished session is past `limits.sessionRetentionMs`. */
export function checkRetained(deps: RuntimeDeps, live: LiveSession): void {
  const finishedAt = live.record.finishedAt;
  if (finishedAt !== undefined && finishedAt + deps.limits.sessionRetentionMs < deps.now()) {
    throw new ProtocolError("session-expired", "the session is no longer retained");
  }
}

export class ExactReplay {
  readonly #deps: RuntimeDeps;
  readonly #cache: SessionCache;
  readonly #authorize: Authorizer;

  constructor(deps: RuntimeDeps, cache: SessionCache, authorize: Authorizer) {
    this.#deps = deps;
    this.#cache = cache;
    this.#authorize = authorize;
  }

  /**
   * Section 9: acceptance is replayable by exact attempt. The replay does not
   * create a generation; it takes the session over in memory if its
   * generation is still current, and otherwise reports the current token
   * and mappings, then revokes this transport.
   */
  async decide(
    attempt: AttemptRecord,
    descriptorDigest: string,
    operation: AttemptRecord["operation"],
    caller: Principal,
    transport: SessionTransport,
    cursors: Map<string, CursorPosition>,
  ): Promise<DecidedAttachment> {
    if (attempt.descriptorDigest !== descriptorDigest || attempt.operation !== operation) {
      throw new ProtocolError("attempt-conflict", "the attempt id was already used with a different request");
    }
    const live = await this.#cache.load(attempt.sessionId);
    if (live === undefined) throw new ProtocolError("session-expired", "the session is no longer retained");
    return this.#cache.evictOnFailure(live, () => this.#decideLoaded(live, attempt, operation, caller, transport, cursors));
  }

  async #decideLoaded(
    live: LiveSession,
    attempt: AttemptRecord,
    operation: AttemptRecord["operation"],
    caller: Principal,
    transport: SessionTransport,
    cursors: Map<string, CursorPosition>,
  ): Promise<DecidedAttachment> {
    const record = live.record;
    caller = underRecordedName(caller, record);
    if (record.account !== caller.account || record.principal !== caller.principal) {
      throw new ProtocolError("forbidden", "the caller may not perform this operation");
    }
    checkRetained(this.#deps, live);
    await authorizeOrThrow(this.#authorize, {
      caller,
      operation,
      application: record.application,
      environment: record.environment,
      agentType: record.agentType,
      agentIdentity: record.agentIdentity,
      method: record.method,
    });
    // A replay whose own transport closed while it was decided takes nothing over: it is a retry
    // its client gave up on (a handshake that timed out at a paused node), read late, and the
    // transport it would revoke may be the client's live one, carrying the same attempt. Taken
    // over, that client was told `attachmentRevoked` by its own stale retry and ended `revoked`.
    // Best effort: the transport is known closed once Node has handled the close, which comes
    // after the data it follows; a paused node woken with both queued may decide first.
    const owner = attempt.generation === record.generation && transport.isOpen;
    const attachment = this.#cache.newAttachment(live, attempt.attemptId, attempt.generation, transport, "replay");
    if (owner) {
      live.attach(attachment);
      // Other nodes revoke their transports of this generation (section 9: sole owner).
      await live.claimAttachment(attachment);
    }
    return {
      attachment,
      open: () => attachment.open({ cursors, resolveProvisionalRefs: operation === "start" }, record.idempotencyKey, owner),
    };
  }
}
