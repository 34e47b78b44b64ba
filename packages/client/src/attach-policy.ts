/**
 * What to do after a connection ends — protocol section 9 as one pure
 * function, so the whole decision table is testable without a socket.
 */
import type { ProtocolError } from "@golem-stream/wire";
import { ClientError } from "./errors.js";

/** How one connection ended. */
export type ConnectionOutcome =
  | { readonly kind: "lost"; readonly cause: string }
  | { readonly kind: "rejected"; readonly error: ProtocolError }
  /** `atAcceptance`: the revocation was the server's next message after the acceptance, nothing between. */
  | { readonly kind: "revoked"; readonly atAcceptance: boolean }
  | { readonly kind: "finished" }
  /** This side closed it on purpose: an invocation-wide cancel has reached the server. */
  | { readonly kind: "released" }
  | { readonly kind: "fatal"; readonly error: ClientError };

export interface AttachFacts {
  /** The attach sent on this connection was accepted on it. */
  readonly accepted: boolean;
  /** How often the current descriptor has been sent (more than 1: the acceptance was a replay). */
  readonly sends: number;
  /** A session token is known (some attach was accepted at some point). */
  readonly hasSession: boolean;
  /**
   * A new attach must be a takeover: the caller asked for one, and no attach of this process has
   * been accepted yet, so its session token may be of an older generation.
   */
  readonly takeover: boolean;
  /**
   * The attach on this connection is the resume that followed a revocation taken for protocol
   * 6.1's case, and no attach was accepted since.
   */
  readonly afterRevocation: boolean;
}

export type NextAttach =
  | { readonly kind: "done" }
  | { readonly kind: "fail"; readonly error: ClientError }
  /** Resend the identical frozen descriptor with the same attempt id. */
  | { readonly kind: "same" }
  /** A new start attempt: fresh attempt id and fresh provisional references. */
  | { readonly kind: "fresh-start" }
  /** A new `resume` with a fresh attempt id and the current cursors. */
  | { readonly kind: "fresh-resume" }
  /** A new `takeover` with a fresh attempt id and the current cursors: no takeover was accepted yet. */
  | { readonly kind: "fresh-takeover" };

export function nextAttach(outcome: ConnectionOutcome, facts: AttachFacts): NextAttach {
  switch (outcome.kind) {
    case "finished":
    case "released":
      return { kind: "done" };
    case "fatal":
      return { kind: "fail", error: outcome.error };
    case "revoked":
      // Protocol 6.1: a replayed acceptance whose durable attachment had detached "returns the
      // current session token and mappings, then revokes this transport", and the client resumes.
      // Only a revocation that answers such an acceptance at once is that case: after anything
      // else on the connection (a result, an item, an ACK) the attachment was live, and its
      // revocation means someone else took over.
      // A revocation that follows the acceptance with nothing between may still be a takeover
      // that came later (an invocation quiet for a while): the resume tells (below).
      return facts.accepted && facts.sends > 1 && outcome.atAcceptance ? { kind: "fresh-resume" } : { kind: "fail", error: revoked() };
    case "rejected": {
      const { error } = outcome;
      // That resume refused superseded (decisions §8): another process holds the current
      // generation, so the revocation was its takeover after all.
      if (facts.afterRevocation && error.code === "superseded") return { kind: "fail", error: revoked(error) };
      if (!error.retryable) return { kind: "fail", error: new ClientError("rejected", error.message, { code: error.code, cause: error }) };
      // A rejection is definitive for its attempt; retryable means a new attempt may succeed.
      if (!facts.hasSession) return { kind: "fresh-start" };
      // A takeover stays one until one is accepted: its token may be of an older generation, which
      // a resume may not carry (decisions §8: superseded) and a takeover may.
      return facts.takeover ? { kind: "fresh-takeover" } : { kind: "fresh-resume" };
    }
    case "lost":
      // Before acceptance the outcome is uncertain: the exact descriptor again. After it, the
      // attach is complete and reconnecting is a new operation.
      return facts.accepted ? { kind: "fresh-resume" } : { kind: "same" };
  }
}

function revoked(cause?: ProtocolError): ClientError {
  return new ClientError("revoked", "another connection took this invocation over", cause === undefined ? {} : { cause });
}
