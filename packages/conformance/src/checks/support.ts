/** What several server checks share: a session fed through one input stream, the input messages sent on it, and the violations it must refuse. */
import { randomUUID } from "node:crypto";
import type { ClientMessage, InvocationAccepted, InvocationStart } from "@golem-stream/wire";
import type { CheckSpec } from "../check.js";
import type { Connection } from "../connection.js";
import { channelFor, ensureViolation, type SuiteContext } from "../context.js";
import { inputStart, val, type StartWithInput } from "../demo.js";

export interface InputSession {
  readonly conn: Connection;
  readonly accepted: InvocationAccepted;
  /** The channel the acceptance mapped the start's input stream to. */
  readonly channel: number;
  readonly attemptId: string;
}

/** Starts `start` (see `inputStart`) and waits for its acceptance and the channel of its input. */
export async function inputSession(ctx: SuiteContext, { start, ref }: StartWithInput): Promise<InputSession> {
  const { conn, accepted } = await ctx.start(start);
  return { conn, accepted, channel: channelFor(accepted, ref), attemptId: start.attemptId };
}

/** Runs `start` to its end on its own connection. */
export async function runToEnd(ctx: SuiteContext, start: InvocationStart): Promise<void> {
  await (await ctx.start(start)).conn.all();
}

export const inputItem = (channel: number, sequence: number, text: string) => ({
  type: "inputStreamItem" as const,
  channel,
  sequence: BigInt(sequence),
  value: val.str(text),
});
export const inputEnd = (channel: number, sequence: number) => ({ type: "inputStreamEnd" as const, channel, sequence: BigInt(sequence) });

/**
 * Lets a session whose connection the check gave up finish: resumes it on a
 * new connection (with `token`, default the suite's) and ends each input
 * still open, so the check leaves no invocation running behind it (the
 * per-principal checks count on that). Best effort: a failure here leaves
 * the check's own result as it is.
 */
export async function finishSession(ctx: SuiteContext, sessionToken: string, token = ctx.token): Promise<void> {
  try {
    const conn = await ctx.connect({ token });
    conn.send({ type: "resumeAttach", attemptId: randomUUID(), operation: "resume", outputCursors: [], sessionToken });
    const accepted = await conn.nextOf("invocationAccepted");
    for (const mapping of accepted.mappings) {
      const highWater = mapping.inputHighWater;
      if (highWater !== undefined && !highWater.terminal) conn.send(inputEnd(mapping.channel, Number(highWater.sequence)));
    }
    await conn.all();
  } catch {
    // Nothing more to do: the server's detached-session timeout ends it.
  }
}

export interface InputViolation extends Omit<CheckSpec, "run"> {
  /** The session the messages go to: `reverse` (a stream<string> input) unless said otherwise. */
  readonly method?: "reverse" | "digest";
  /** What the check sends once the session is accepted, given its input channel. */
  readonly send: (channel: number) => readonly ClientMessage[];
  /** Acceptable rejection codes (the first is the one the protocol names). */
  readonly codes: readonly string[];
  /** Expected `retryable` flag of the rejection, where the protocol fixes it. */
  readonly retryable?: boolean;
}

/** A check that sends what `violation.send` builds on an accepted session and expects invocationRejected (with the attemptId), then close 1002. */
export function inputViolation({ method = "reverse", send, codes, retryable, ...spec }: InputViolation): CheckSpec {
  return {
    ...spec,
    async run(ctx) {
      const { conn, channel, attemptId } = await inputSession(ctx, inputStart(method));
      for (const message of send(channel)) conn.send(message);
      return ensureViolation(conn, { codes, attemptId, rejectionRequired: true, ...(retryable === undefined ? {} : { retryable }) });
    },
  };
}
