/**
 * What a failed invocation tells its caller: the outcome's code and public
 * message for the error it failed with. The server's own words reach the
 * caller (a refused result, a re-run that diverged, the stored-bytes bound);
 * an agent's exception never does, since its text may hold the agent's
 * secrets. Apart from the recording (outcome-recorder.ts) so the rule of
 * what is public is one short file.
 */
import type { InvocationOutcome, ProtocolError } from "@golem-stream/wire";
import { StoredBytesExceeded } from "../stored-bytes-exceeded.js";
import { REPLAY_DIVERGED, ReplayDivergence } from "./replay-divergence.js";

/** The public message of a failure that says nothing of its cause. */
export const INVOCATION_FAILED = "invocation failed";

/**
 * The method's result cannot be committed (it does not match the method's
 * result schema, is missing, or is too large to send). Its message is the
 * server's own words, so it is the failure's public message: the caller
 * learns why, not only that the invocation failed. An agent's exception is
 * never one (its text may hold the agent's secrets).
 */
export class ResultRefused extends Error {}

/**
 * Why the schema-value codec refused a result or an output item, in the words a caller is told:
 * a bound it went past (its size, its nesting), or the declared schema it does not match. The
 * codec's message names the schema's path and rule, nothing of the agent's.
 */
export function refusedBecause(error: ProtocolError): string {
  return error.code === "limit-exceeded" ? `is over a limit: ${error.message}` : `does not match its declared schema: ${error.message}`;
}

/**
 * The outcome of a failed invocation: `limit-exceeded` when an item would
 * have taken its principal past `limits.maxStoredBytesPerPrincipal` (the
 * caller learns which bound, docs/protocol/server.md), `invocation-failed`
 * otherwise.
 */
export function failureOutcome(error: unknown): InvocationOutcome {
  if (error instanceof StoredBytesExceeded) return { kind: "failure", code: "limit-exceeded", message: error.message };
  return { kind: "failure", code: "invocation-failed", message: publicFailureMessage(error) };
}

/** The public message of an invocation's failure: ours for a refused result, otherwise nothing of the error (it may carry the agent's secrets). */
function publicFailureMessage(error: unknown): string {
  if (error instanceof ReplayDivergence) return REPLAY_DIVERGED;
  if (!(error instanceof ResultRefused)) return INVOCATION_FAILED;
  // A path into a deep schema can be long: the message stays a line.
  return error.message.length <= MAX_PUBLIC_MESSAGE ? error.message : `${error.message.slice(0, MAX_PUBLIC_MESSAGE - 1)}…`;
}

const MAX_PUBLIC_MESSAGE = 300;
