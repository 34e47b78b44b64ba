/**
 * The frozen first messages of attach operations (protocol 5.1, 5.2, 9):
 * what a session sends first when it continues from saved state, and the
 * fresh descriptors of genuinely new attempts. Pure: data in, data out.
 */
import type { InvocationStart, JsonValue, ResumeAttach, SchemaValueJson } from "@golem-stream/wire";
import type { ResumeState } from "./checkpoint.js";
import { renewProvisionalRefs } from "./values.js";
import { randomUUID } from "./uuid.js";

/**
 * The first descriptor of a session continued from saved state: its pending
 * operation, whose outcome is uncertain and so is retried exactly, or else a
 * new resume/takeover from the saved token and cursors.
 */
export function initialAttach(state: ResumeState, operation: "resume" | "takeover"): InvocationStart | ResumeAttach {
  if (state.sessionToken === undefined) return state.pendingOperation;
  return state.pendingOperation ?? freshResume(operation, state.sessionToken, state.outputCursors);
}

/** A new resume or takeover: a fresh attempt id, the current token and cursors. */
export function freshResume(operation: "resume" | "takeover", sessionToken: string, outputCursors: readonly string[]): ResumeAttach {
  return { type: "resumeAttach", attemptId: randomUUID(), operation, outputCursors: [...outputCursors], sessionToken };
}

/**
 * A new attempt of a start frozen elsewhere (its retry was rejected as
 * retryable): the same call with a fresh attempt id and fresh provisional
 * references, since only an exact retry may reuse them (protocol 3.2).
 */
export function renewedStart(previous: InvocationStart): InvocationStart {
  const methodParameters = renewProvisionalRefs(previous.methodParameters as unknown as JsonValue, () => randomUUID());
  return { ...previous, attemptId: randomUUID(), methodParameters: methodParameters as unknown as SchemaValueJson };
}
