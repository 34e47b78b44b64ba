/**
 * The state a later process needs to continue an invocation (protocol
 * section 13): everything is public protocol data — opaque tokens, the
 * selector, the idempotency key — and nothing internal. The CLI stores it as
 * its checkpoint; `client.takeover(state)` continues from it.
 */
import type { ResumeAttach, Selector } from "@golem-stream/wire";

export interface ResumeState {
  /** The session token of the latest accepted attach. */
  readonly sessionToken: string;
  /** One delivered cursor per output stream that has delivered anything. */
  readonly outputCursors: readonly string[];
  readonly selector: Selector;
  readonly idempotencyKey: string;
  /**
   * A resume or takeover that was sent but neither accepted nor rejected yet.
   * Its outcome is uncertain, so whoever continues must retry it exactly.
   */
  readonly pendingOperation?: ResumeAttach;
}
