/** Messages and values of the demo catalogue, built by hand for protocol-level tests. */
import { randomUUID } from "node:crypto";
import type { InvocationStart, ResumeAttach, SchemaValueJson, ServerMessage } from "@golem-stream/wire";

export const v = {
  str: (value: string): SchemaValueJson => ({ kind: "string", value }),
  u32: (value: number): SchemaValueJson => ({ kind: "u32", value }),
  record: (...fields: SchemaValueJson[]): SchemaValueJson => ({ kind: "record", value: { fields: fields as never } }),
  stream: (provisionalRef: string): SchemaValueJson => ({ kind: "stream", value: { provisionalRef } }),
};

export function demoStart(method: string, methodParameters: SchemaValueJson, overrides: Partial<InvocationStart> = {}): InvocationStart {
  return {
    type: "invocationStart",
    attemptId: randomUUID(),
    config: [],
    idempotencyKey: randomUUID(),
    methodParameters,
    selector: {
      agentType: "echo",
      application: "demo",
      constructorParameters: v.record(v.str("test")),
      environment: "default",
      method,
    },
    ...overrides,
  };
}

/**
 * A `resumeAttach` first message with a fresh attempt id: `resume` of a
 * detached session, or `takeover` of one attached elsewhere, acknowledging
 * output up to `outputCursors`.
 */
export function resumeAttach(
  operation: ResumeAttach["operation"],
  sessionToken: string,
  outputCursors: readonly string[] = [],
): ResumeAttach {
  return { type: "resumeAttach", attemptId: randomUUID(), operation, outputCursors, sessionToken };
}

/** Items of a value output stream, in order, from a message log. */
export function outputValues(messages: readonly ServerMessage[], channel: number): SchemaValueJson[] {
  return messages.flatMap((m) => (m.type === "outputStreamItem" && m.channel === channel ? [m.value] : []));
}
