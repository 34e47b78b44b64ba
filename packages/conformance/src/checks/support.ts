/** What several server checks share: a session fed through one input stream, the input messages sent on it, and the violations it must refuse. */
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

export const inputItem = (channel: number, sequence: number, text: string) => ({ type: "inputStreamItem" as const, channel, sequence: BigInt(sequence), value: val.str(text) });
export const inputEnd = (channel: number, sequence: number) => ({ type: "inputStreamEnd" as const, channel, sequence: BigInt(sequence) });

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
