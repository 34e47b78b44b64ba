/**
 * A client state (`ResumeState`) as the plain JSON of a `checkpoint` event,
 * and back. Everything in it is public protocol data (protocol §13); only a
 * frozen pending operation holds values JSON cannot carry as they are
 * (64-bit integers), so it travels as the wire's own text encoding.
 */
import type { ResumeState } from "@golem-stream/client";
import { decodeClientMessage, encodeClientMessage, type InvocationStart, type ResumeAttach } from "@golem-stream/wire";

export function stateToJson(state: ResumeState): unknown {
  const { pendingOperation, ...rest } = state;
  return pendingOperation === undefined
    ? rest
    : { ...rest, pendingOperation: JSON.parse(encodeClientMessage(pendingOperation)) as unknown };
}

/** The inverse of `stateToJson`; the client checks the rest (`invalid-argument` on a bad state). */
export function stateFromJson(json: unknown): ResumeState {
  if (typeof json !== "object" || json === null) throw new Error("the state must be a JSON object");
  const { pendingOperation, ...rest } = json as { pendingOperation?: unknown };
  if (pendingOperation === undefined) return rest as ResumeState;
  const decoded = decodeClientMessage(JSON.stringify(pendingOperation), false) as InvocationStart | ResumeAttach;
  return { ...rest, pendingOperation: decoded } as ResumeState;
}
