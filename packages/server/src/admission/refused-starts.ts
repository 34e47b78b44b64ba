/**
 * The starts this node refused before accepting them, by attempt id (protocol sections 5.1 and
 * 6.2): "Before acceptance, rejection is definitive for this attempt", and "Reusing an attempt ID
 * with changed contents is attempt-conflict". Only accepted attempts are stored, so without this a
 * refused attempt id sent again (a client retrying after it lost the answer, or a buggy one
 * reusing the id for another call) was decided afresh: accepted once the catalogue had the method,
 * or once the node was not overloaded. Now the same attempt gets the same refusal, another
 * descriptor under its id `attempt-conflict`.
 *
 * In memory, per node, and bounded (`MAX_REFUSED_STARTS`, oldest forgotten first): a refusal
 * stores nothing durable (a hostile client must not fill the store with them), so a restart, or
 * another node of a cluster, decides a forgotten attempt afresh. A client that keeps to the
 * protocol sends a new attempt id after any refusal, so it meets the same answers either way.
 */
import { ProtocolError } from "@golem-stream/wire";
import type { Principal } from "../options.js";

/** How many refused attempts a node remembers: about 1 MiB at most. */
export const MAX_REFUSED_STARTS = 4096;

interface Refusal {
  /** Whose attempt it was: another caller's start under the id is decided as its own. */
  readonly caller: string;
  readonly descriptorDigest: string;
  readonly error: ProtocolError;
}

export class RefusedStarts {
  readonly #refused = new Map<string, Refusal>();

  /** Throws what a start of `attemptId` with `descriptorDigest` gets because of an earlier refusal; nothing if there was none. */
  check(attemptId: string, descriptorDigest: string, caller: Principal): void {
    const refusal = this.#refused.get(attemptId);
    if (refusal === undefined || refusal.caller !== callerKey(caller)) return;
    if (refusal.descriptorDigest !== descriptorDigest)
      throw new ProtocolError("attempt-conflict", "this attempt id was refused for another descriptor");
    throw refusal.error;
  }

  /** Remembers the refusal of a start (a protocol error; a fault of the server's is not an answer). */
  remember(attemptId: string, descriptorDigest: string, caller: Principal, error: unknown): void {
    if (!(error instanceof ProtocolError) || error.code === "internal-error") return;
    this.#refused.delete(attemptId);
    this.#refused.set(attemptId, { caller: callerKey(caller), descriptorDigest, error });
    if (this.#refused.size > MAX_REFUSED_STARTS) this.#refused.delete(this.#refused.keys().next().value as string);
  }
}

/** Unambiguous: JSON escapes whatever the names hold. */
function callerKey(caller: Principal): string {
  return JSON.stringify([caller.account, caller.principal]);
}
