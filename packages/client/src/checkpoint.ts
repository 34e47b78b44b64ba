/**
 * The state a later process needs to continue an invocation (protocol
 * section 13): everything is public protocol data — opaque tokens, the
 * selector, the idempotency key, a frozen descriptor in flight — and nothing
 * internal. The CLI stores it as its checkpoint; `client.takeover(state)`
 * continues from it.
 */
import type { InvocationStart, ResumeAttach, Selector } from "@golem-stream/wire";

/** Saved once the start was accepted: the session exists and has a token. */
export interface AcceptedState {
  /** The session token of the latest accepted attach. */
  readonly sessionToken: string;
  /** One delivered cursor per output stream that has delivered anything. */
  readonly outputCursors: readonly string[];
  /** What the invocation calls (application, environment, agent type, constructor, method). */
  readonly selector: Selector;
  /** The start's idempotency key. */
  readonly idempotencyKey: string;
  /**
   * A resume or takeover that was sent but neither accepted nor rejected yet.
   * Its outcome is uncertain, so whoever continues must retry it exactly.
   */
  readonly pendingOperation?: ResumeAttach;
}

/**
 * Saved before the start is first sent, until it is accepted: the frozen
 * start (attempt id, every provisional reference) whose outcome is not known.
 * Continuing retries it exactly (protocol 9): the server replays its
 * committed acceptance, or accepts it now. Its input sources stay behind with
 * the process that saved it; the continuing process cancels those inputs
 * with `source-unavailable`.
 */
export interface PendingStartState {
  /** Absent: no session exists before acceptance (this is how the two states are told apart). */
  readonly sessionToken?: undefined;
  /** Always empty: nothing can have been delivered before acceptance. */
  readonly outputCursors: readonly string[];
  /** Equal to the start's selector. */
  readonly selector: Selector;
  /** Equal to the start's idempotency key. */
  readonly idempotencyKey: string;
  /** The frozen start (its attempt id and provisional references), retried exactly. */
  readonly pendingOperation: InvocationStart;
}

/**
 * What `onCheckpoint` and `detach()` give and `client.resume`/`client.takeover` take: plain JSON
 * to store as it is (a file, a database row). `client.takeover` checks it and throws
 * `invalid-argument` for one that is malformed or contradicts itself.
 */
export type ResumeState = AcceptedState | PendingStartState;
