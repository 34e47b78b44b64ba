/**
 * A reference model of one `reverse` session (demo catalogue: a
 * `stream<string>` in, each item reversed on a `stream<string>` out), or of
 * one `digest` session (`stream<u8>` in, its length and SHA-256 as the
 * result), and the live server it is compared with, for the model-based
 * tests (session-model.slow.test.ts; moves in reverse-traffic.ts,
 * reverse-attach.ts and digest-commands.ts, their base in model-moves.ts).
 *
 * The model is what a client knows: the items it sent, the high-water the
 * server acknowledged, the output it has seen, which generation is current,
 * whether a transport of its own is attached. The system under test is the
 * real runtime in memory (memory-session.ts), every connection ever opened
 * to it, and what the server said on each. `audit` holds every connection's
 * log against the rules that hold whatever the client did; each command
 * checks what that command must have caused.
 */
import { randomUUID } from "node:crypto";
import type { InvocationStart, OutputOutcome, ResumeAttach, ServerMessage, StreamMapping } from "@golem-stream/wire";
import { ManualTimers } from "../../src/testing/manual-timers.js";
import { demoStart, v } from "../../src/testing/demo-messages.js";
import { checkConnectionLog } from "./audit-invariants.js";
import { describe, memoryHarness, type MemoryConnection } from "./memory-session.js";

export interface SessionModel<Item = string> {
  /** Every item the client sent, by sequence (the server durably holds a prefix of them). */
  sent: Item[];
  /** The high-water the client last learned (an ACK or a resumed acceptance). */
  acked: number;
  /** Output items the client has seen: sequences 0 .. outputs-1. */
  outputs: number;
  inputTerminal: boolean;
  outputTerminal: boolean;
  finished: boolean;
  /** The current attachment generation (1 after the start). */
  generation: number;
  /** Whether one of the client's transports is attached as the session's owner. */
  attached: boolean;
  /** Attempts the server accepted (the start, then each resume and takeover). */
  attempts: number;
  /** Cancels of the ended output the owner's connection has sent since its terminal (one is ignored, a second is invalid-channel). */
  lateCancels: number;
}

/** Where the output replay of an attempt starts: an item sequence, or nothing (a terminal cursor). */
export type ReplayFrom = number | "terminal";

export interface AcceptedAttempt {
  readonly message: InvocationStart | ResumeAttach;
  readonly generation: number;
  readonly from: ReplayFrom;
}

/** How a connection is meant to end; the audit refuses any other ending. */
export type ExpectedEnd = "open" | "cut" | "revoked" | "finished" | { readonly rejected: string };

export interface ModelConnection {
  readonly link: MemoryConnection;
  readonly attemptId: string;
  expectedEnd: ExpectedEnd;
  /** Resumed from the output's terminal cursor: the result may announce the output, with no terminal to follow. */
  allowUnterminatedOutputs: boolean;
  /** Messages already held against the per-message rules. */
  audited: number;
}

/** The model's reference for `reverse`: by Unicode scalar value. */
export const reversed = (text: string): string => Array.from(text).reverse().join("");

export class SessionUnderTest {
  /** Time moves only when a move says so (the detached timeout). */
  readonly timers = new ManualTimers();
  readonly harness = memoryHarness({ timers: this.timers });
  /** The output terminal's outcome when the model knows it in advance (a give-up ends it transport-detached). */
  expectedOutputOutcome: OutputOutcome | undefined;
  /** The kind of the invocation's finish when the model knows it in advance. */
  expectedFinish: "success" | "failure" | undefined;
  readonly connections: ModelConnection[] = [];
  /** The attached transport the client uses, if any. */
  owner: ModelConnection | undefined;
  /** Session tokens by generation (index 0: generation 1). */
  readonly tokens: string[] = [];
  readonly attempts: AcceptedAttempt[] = [];
  /** The first cursor seen for each output item, by sequence. */
  readonly cursors: string[] = [];
  terminalCursor: string | undefined;
  /** What every connection must agree on once one has seen it. */
  #outputEnd: { outcome: OutputOutcome; sequence: bigint } | undefined;
  #finishedOutcome: unknown;
  readonly #streamTokens = new Map<"input" | "output", string>();
  readonly start: InvocationStart;
  readonly provisionalRef = randomUUID();
  #result: unknown;

  /** `method` is a demo method whose one parameter is an input stream (`reverse`, `digest`). */
  constructor(readonly method: "reverse" | "digest" = "reverse") {
    this.start = demoStart(method, v.record(v.stream(this.provisionalRef)));
  }

  open(attemptId: string): ModelConnection {
    const connection: ModelConnection = {
      link: this.harness.open(),
      attemptId,
      expectedEnd: "open",
      allowUnterminatedOutputs: false,
      audited: 0,
    };
    this.connections.push(connection);
    return connection;
  }

  /** The channel of the stream in `direction` as announced on `connection`. */
  channel(connection: ModelConnection, direction: "input" | "output"): number {
    const mapping = mappingsIn(connection.link.transport.sent).find((m) => m.direction === direction);
    if (mapping === undefined) throw new Error(`no ${direction} channel announced; sent: ${describe(connection.link.transport.sent)}`);
    return mapping.channel;
  }

  async dispose(): Promise<void> {
    for (const connection of this.connections) connection.link.cut();
    this.harness.runtime.shutdown();
    await this.harness.store.close();
  }

  /**
   * Every connection's log against the rules of any session (audit-invariants)
   * and against the model: outputs are the reversed inputs at their
   * sequences; no ACK exceeds what the client sent; stream tokens, the
   * output terminal and the finish are the same on every connection; a
   * connection ends only as its command expected, with the matching close.
   */
  audit(model: SessionModel<unknown>): void {
    const problems: string[] = [];
    for (const [index, connection] of this.connections.entries()) {
      const log = connection.link.transport.sent;
      const where = `connection ${index}`;
      problems.push(
        ...checkConnectionLog(log, { allowUnterminatedOutputs: connection.allowUnterminatedOutputs }).map((p) => `${where}: ${p}`),
      );
      for (; connection.audited < log.length; connection.audited++) {
        problems.push(
          ...this.#auditMessage(model, connection, log[connection.audited]!).map((p) => `${where} #${connection.audited}: ${p}`),
        );
      }
      problems.push(...auditEnd(connection).map((p) => `${where}: ${p}`));
      if (problems.length > 0) throw new Error(`${problems.join("\n")}\nsent on ${where}: ${describe(log)}`);
    }
  }

  #auditMessage(model: SessionModel<unknown>, connection: ModelConnection, message: ServerMessage): string[] {
    const problems: string[] = [];
    for (const mapping of "mappings" in message ? message.mappings : []) {
      const known = this.#streamTokens.get(mapping.direction);
      if (known === undefined) this.#streamTokens.set(mapping.direction, mapping.streamToken);
      else if (known !== mapping.streamToken) problems.push(`the ${mapping.direction} stream's token changed`);
    }
    switch (message.type) {
      case "invocationAccepted":
        if (message.attemptId !== connection.attemptId) problems.push("acceptance of another attempt");
        if (message.idempotencyKey !== this.start.idempotencyKey) problems.push("acceptance with another idempotency key");
        break;
      case "invocationRejected": {
        const expected = connection.expectedEnd;
        if (typeof expected !== "object" || expected.rejected !== message.code)
          problems.push(`an unexpected rejection ${message.code}: ${message.message}`);
        if (message.attemptId !== connection.attemptId) problems.push("a rejection naming another attempt");
        break;
      }
      case "attachmentRevoked":
        if (connection.expectedEnd !== "revoked") problems.push("revoked without a newer attachment");
        break;
      case "outputStreamItem": {
        const sequence = Number(message.sequence);
        const input = model.sent[sequence];
        if (typeof input !== "string" || sequence >= model.acked)
          problems.push(`output item ${sequence} for an input the server never acknowledged`);
        else if (!sameValue(message.value, v.str(reversed(input))))
          problems.push(`output item ${sequence} is ${JSON.stringify(message.value)}, not the reverse of ${JSON.stringify(input)}`);
        this.cursors[sequence] ??= message.cursorToken;
        break;
      }
      case "outputStreamEnd":
        if (this.expectedOutputOutcome !== undefined && !sameValue(this.expectedOutputOutcome, message.outcome)) {
          problems.push(`the output ends ${JSON.stringify(message.outcome)}, not ${JSON.stringify(this.expectedOutputOutcome)}`);
        }
        if (this.#outputEnd === undefined) this.#outputEnd = { outcome: message.outcome, sequence: message.sequence };
        else if (!sameValue(this.#outputEnd, { outcome: message.outcome, sequence: message.sequence }))
          problems.push("the output's terminal differs from the one another connection received");
        if (message.sequence > BigInt(model.acked)) problems.push("the output ends after more items than were acknowledged");
        if (message.cursorToken !== undefined) this.terminalCursor ??= message.cursorToken;
        break;
      case "inputStreamAck":
        if (message.highestContiguousSequence > BigInt(model.sent.length))
          problems.push(`ACK of ${message.highestContiguousSequence} items when ${model.sent.length} were sent`);
        break;
      case "invocationResult":
        if (this.#result === undefined) this.#result = message.result;
        else if (!sameValue(this.#result, message.result)) problems.push("the result differs from the one another connection received");
        break;
      case "invocationFinished":
        if (this.expectedFinish !== undefined && message.outcome.kind !== this.expectedFinish)
          problems.push(`the invocation finished ${message.outcome.kind}, not ${this.expectedFinish}`);
        if (this.#finishedOutcome === undefined) this.#finishedOutcome = message.outcome;
        else if (!sameValue(this.#finishedOutcome, message.outcome))
          problems.push("the finish differs from the one another connection received");
        break;
      default:
        break;
    }
    return problems;
  }

  /** The output terminal the connections agree on (once one has seen it). */
  get outputEnd(): { outcome: OutputOutcome; sequence: bigint } | undefined {
    return this.#outputEnd;
  }
}

/** The ending of a connection against the one its command expected, once the server has closed it. */
function auditEnd(connection: ModelConnection): string[] {
  const { closedWith, sent } = connection.link.transport;
  const expected = connection.expectedEnd;
  const last = sent.at(-1);
  if (closedWith === undefined) return [];
  if (expected === "cut") return closedWith === 1006 ? [] : [`closed with ${closedWith} by the server before the client cut it`];
  if (expected === "open") return [`closed with ${closedWith} unexpectedly`];
  if (expected === "finished")
    return closedWith === 1000 && last?.type === "invocationFinished"
      ? []
      : [`expected invocationFinished and close 1000, got ${last?.type} and ${closedWith}`];
  if (expected === "revoked")
    return closedWith === 1000 && last?.type === "attachmentRevoked"
      ? []
      : [`expected attachmentRevoked and close 1000, got ${last?.type} and ${closedWith}`];
  return closedWith === 1002 && last?.type === "invocationRejected" && last.code === expected.rejected
    ? []
    : [`expected invocationRejected ${expected.rejected} and close 1002, got ${last?.type} and ${closedWith}`];
}

/** Every mapping a log installed, in order. */
export function mappingsIn(log: readonly ServerMessage[]): StreamMapping[] {
  return log.flatMap((m) => ("mappings" in m ? m.mappings : []));
}

function sameValue(a: unknown, b: unknown): boolean {
  return JSON.stringify(a, bigints) === JSON.stringify(b, bigints);
}
const bigints = (_key: string, value: unknown): unknown => (typeof value === "bigint" ? `${value}n` : value);

/**
 * Starts `method` and returns the model and the session once the acceptance
 * has arrived (for `reverse` also its result, which exposes the output).
 */
export async function startedSession<Item = string>(
  method: "reverse" | "digest" = "reverse",
): Promise<{ model: SessionModel<Item>; real: SessionUnderTest }> {
  const real = new SessionUnderTest(method);
  const connection = real.open(real.start.attemptId);
  connection.link.send(real.start);
  if (method === "reverse")
    await connection.link.transport.expect("the acceptance and the result", (sent) => sent.some((m) => m.type === "invocationResult"));
  else await connection.link.transport.expect("the acceptance", (sent) => sent.length > 0);
  const accepted = connection.link.transport.sent[0];
  if (accepted?.type !== "invocationAccepted") throw new Error(`the start was not accepted: ${describe(connection.link.transport.sent)}`);
  const input = accepted.mappings.find((m) => m.direction === "input");
  if (
    accepted.mappings.length !== 1 ||
    input?.provisionalRef !== real.provisionalRef ||
    input.inputHighWater?.sequence !== 0n ||
    input.inputHighWater.terminal
  ) {
    throw new Error(`the start's acceptance must map exactly its input stream, resolving its reference: ${describe([accepted])}`);
  }
  real.tokens.push(accepted.sessionToken);
  real.attempts.push({ message: real.start, generation: 1, from: 0 });
  real.owner = connection;
  const model: SessionModel<Item> = {
    sent: [],
    acked: 0,
    outputs: 0,
    inputTerminal: false,
    outputTerminal: false,
    finished: false,
    generation: 1,
    attached: true,
    attempts: 1,
    lateCancels: 0,
  };
  real.audit(model);
  return { model, real };
}
