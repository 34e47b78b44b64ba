/**
 * Fencing (docs/cluster.md, *Fencing*): every session has an ownership
 * epoch, 1 when it is created and one more at each claim of it by another
 * node. The owner remembers the epoch it holds and hands it with each of
 * its writes (output, its own input acceptance and terminals, the result,
 * the outcome); the store refuses a write whose epoch is no longer the
 * session's, in the same statement or transaction that would have made it,
 * so nothing a former owner writes after a claim is ever stored. A write
 * without an epoch (a node that only serves an attachment committing the
 * client's input) is not fenced.
 *
 * A store that never claims (one node) keeps every session at
 * `FIRST_EPOCH`.
 */

/** The epoch of a session's creator. */
export const FIRST_EPOCH = 1n;

/** The stable code of `OwnershipLostError`. */
export const OWNERSHIP_LOST = "ownership-lost";

/**
 * The store refused a write because its epoch is not the session's any
 * more: another node claimed the session. Nothing of the write was stored.
 * The writer must stop the session at once and never retry the write.
 */
export class OwnershipLostError extends Error {
  override readonly name = "OwnershipLostError";
  readonly code = OWNERSHIP_LOST;

  constructor(sessionId: string | undefined, epoch: bigint, current?: bigint) {
    const held = current === undefined ? "" : ` (it is at epoch ${current})`;
    super(`write refused: ownership epoch ${epoch} of session ${sessionId ?? "(unknown)"} is no longer current${held}`);
  }
}

/** Whether `error` is a refusal by fencing (by its code, so a copy of this class from another install counts too). */
export function isOwnershipLost(error: unknown): boolean {
  return typeof error === "object" && error !== null && (error as { code?: unknown }).code === OWNERSHIP_LOST;
}
