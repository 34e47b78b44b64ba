/**
 * Attaching to a `reverse` session in the model-based test
 * (session-model.slow.test.ts): resumes (with each kind of cursor), takeovers
 * with any generation's token, exact replays of accepted attempts, stale and
 * conflicting attempts, items sent across a resume or before an acceptance,
 * racing and doubled resumes, and a takeover over a socket that no longer
 * drains (model-moves.ts says what a move is).
 */
import { randomUUID } from "node:crypto";
import type { InvocationStart, ResumeAttach } from "@golem-stream/wire";
import { v } from "../../src/testing/demo-messages.js";
import { expectAcross } from "./memory-session.js";
import { fail, isAck, Move, outputItem, ownerOf, refused } from "./model-moves.js";
import type { ModelConnection, ReplayFrom, SessionModel, SessionUnderTest } from "./session-model.js";
import { resumeAttach } from "../helpers.js";

type Model = SessionModel;
type Real = SessionUnderTest;

/** A cursor the client holds, chosen by `pick`: none, an item's, or the output's terminal. */
function cursorFor(pick: number, m: Model, r: Real): { cursors: string[]; from: ReplayFrom } {
  const items = Math.min(m.outputs, r.cursors.length);
  const choices = 1 + items + (r.terminalCursor === undefined ? 0 : 1);
  const choice = pick % choices;
  if (choice === 0) return { cursors: [], from: 0 };
  if (choice <= items) return { cursors: [r.cursors[choice - 1]!], from: choice };
  return { cursors: [r.terminalCursor!], from: "terminal" };
}

/** A new resume or takeover (a fresh attempt id) with the cursor `cursorPick` chooses and the current token, or `sessionToken`. */
function newAttach(
  operation: "resume" | "takeover",
  cursorPick: number,
  m: Model,
  r: Real,
  sessionToken = r.tokens[m.generation - 1]!,
): { message: ResumeAttach; from: ReplayFrom } {
  const { cursors, from } = cursorFor(cursorPick, m, r);
  return { message: resumeAttach(operation, sessionToken, cursors), from };
}

/**
 * Sends an attach (a new resume or takeover, or an exact replay of an
 * accepted attempt) and checks the acceptance and what follows it:
 *
 * - a new attach: a refreshed session token, one generation more;
 *   a replay: the current token, no new generation;
 * - the input's high-water between what the client saw acknowledged and
 *   what it sent, its terminal flag as the model's; the provisional
 *   reference only in a start's replay;
 * - an attach that takes the session revokes the transport it replaces
 *   (attachmentRevoked, close 1000); a replay of a superseded attempt is
 *   answered and then revoked itself;
 * - the result again, the output replayed from just after the cursor to
 *   every durable input's reverse, the terminal unless the cursor was it,
 *   and on a finished session invocationFinished and close 1000.
 */
async function attach(
  m: Model,
  r: Real,
  message: InvocationStart | ResumeAttach,
  from: ReplayFrom,
  replayOf: number | undefined,
  early?: (c: ModelConnection) => void,
  accepted?: () => void,
): Promise<void> {
  const c = r.open(message.attemptId);
  const previous = r.owner;
  const takesOver = replayOf === undefined || replayOf === m.generation;
  if (!takesOver) c.expectedEnd = "revoked";
  else if (previous !== undefined) previous.expectedEnd = "revoked";
  c.link.send(message);
  if (early !== undefined) {
    // Sent before the acceptance could have been seen: after it, the attachment fails.
    c.expectedEnd = { rejected: "invalid-channel" };
    early(c);
  }
  await c.link.transport.expect("the acceptance", (sent) => sent.length > 0);
  accepted?.();
  await afterAcceptance(m, r, c, message, from, replayOf, previous, early !== undefined);
}

/** The checks of `attach` from its acceptance on, for the transport `c` that sent `message`. */
async function afterAcceptance(
  m: Model,
  r: Real,
  c: ModelConnection,
  message: InvocationStart | ResumeAttach,
  from: ReplayFrom,
  replayOf: number | undefined,
  previous: ModelConnection | undefined,
  early: boolean,
): Promise<void> {
  const takesOver = replayOf === undefined || replayOf === m.generation;
  const acceptance = c.link.transport.sent[0];
  if (acceptance?.type !== "invocationAccepted") fail(c, "expected invocationAccepted");

  if (replayOf === undefined) {
    if (r.tokens.includes(acceptance.sessionToken)) fail(c, "a new attach must carry a refreshed session token");
    r.tokens.push(acceptance.sessionToken);
    m.generation += 1;
    m.attempts += 1;
    r.attempts.push({ message, generation: m.generation, from });
  } else if (acceptance.sessionToken !== r.tokens[m.generation - 1]) {
    fail(c, "an exact replay must carry the current session token");
  }

  const input = acceptance.mappings.find((mapping) => mapping.direction === "input");
  const highWater = input?.inputHighWater;
  if (input === undefined || highWater === undefined) fail(c, "the acceptance must map the input stream");
  const kept = Number(highWater.sequence);
  if (kept < m.acked || kept > m.sent.length)
    fail(c, `the input's high-water ${kept} must lie between the ACKed ${m.acked} and the sent ${m.sent.length}`);
  // An item kept from before a cut, after the client cancelled the output: the agent took it,
  // could not write it and stopped reading, so the session is finishing (perhaps already has).
  const finishing = !m.finished && m.outputTerminal && kept > m.acked;
  if (highWater.terminal !== m.inputTerminal && !finishing) fail(c, `the input's terminal flag must be ${m.inputTerminal}`);
  const resolves = message.type === "invocationStart";
  if (input.provisionalRef !== (resolves ? r.provisionalRef : undefined)) {
    fail(
      c,
      resolves ? "a start's replay resolves the input's provisional reference" : "a resume does not resolve provisional references again",
    );
  }
  // Items beyond the high-water were never accepted: the client resends or replaces them.
  m.acked = kept;
  m.sent.length = kept;
  if (finishing) {
    m.inputTerminal = true;
    m.finished = true;
  }

  if (takesOver && previous !== undefined) {
    await previous.link.transport.expectClose("the revocation of the replaced transport");
    r.owner = undefined;
    m.attached = false;
  }
  if (!takesOver) {
    await c.link.transport.expectClose("the revocation of a superseded attempt's replay");
    return;
  }
  if (early) {
    await c.link.transport.expectClose("the rejection of an item sent before the acceptance");
    const last = c.link.transport.sent.at(-1);
    if (last?.type !== "invocationRejected" || last.code !== "invalid-channel" || !last.retryable)
      fail(c, "an item before the acceptance must be a retryable invalid-channel");
    if (c.link.transport.sent.some(isAck)) fail(c, "an item before the acceptance must not be acknowledged");
    return;
  }

  c.allowUnterminatedOutputs = from === "terminal";
  if (m.finished) c.expectedEnd = "finished";
  // Every durable input has its reverse on the output, unless the output ended first.
  const replayTo = m.outputTerminal ? m.outputs : kept;
  const itemsExpected = from !== "terminal" && from < replayTo;
  const terminalExpected = m.outputTerminal && from !== "terminal";
  await c.link.transport.expect(
    "the result and the replayed output",
    (sent) =>
      sent.some((msg) => msg.type === "invocationResult") &&
      (!itemsExpected || sent.some(outputItem(replayTo - 1))) &&
      (!terminalExpected || sent.some((msg) => msg.type === "outputStreamEnd")),
  );
  const items = c.link.transport.sent.filter((msg) => msg.type === "outputStreamItem");
  if (itemsExpected && items[0]?.sequence !== BigInt(from)) fail(c, `the replay must start just after the cursor, at ${from}`);
  if (!itemsExpected && items.length > 0) fail(c, "nothing is replayed after the last item");
  m.outputs = Math.max(m.outputs, replayTo);
  if (m.finished) {
    await c.link.transport.expectClose("the finish of a finished session's attach");
    return;
  }
  r.owner = c;
  m.attached = true;
  m.lateCancels = 0;
}

/** A new resume with the current token (and a cursor the client holds). */
export class Resume extends Move<string> {
  constructor(readonly cursorPick: number) {
    super();
  }
  check(): boolean {
    return true;
  }
  protected act(m: Model, r: Real): Promise<void> {
    const { message, from } = newAttach("resume", this.cursorPick, m, r);
    return attach(m, r, message, from, undefined);
  }
  toString(): string {
    return `Resume(cursor ${this.cursorPick})`;
  }
}

/** A takeover with the token of any generation. */
export class Takeover extends Move<string> {
  constructor(
    readonly tokenPick: number,
    readonly cursorPick: number,
  ) {
    super();
  }
  check(): boolean {
    return true;
  }
  protected act(m: Model, r: Real): Promise<void> {
    const { message, from } = newAttach("takeover", this.cursorPick, m, r, r.tokens[this.tokenPick % m.generation]!);
    return attach(m, r, message, from, undefined);
  }
  toString(): string {
    return `Takeover(token ${this.tokenPick}, cursor ${this.cursorPick})`;
  }
}

/** An exact replay of an accepted attempt (start, resume or takeover) on a new transport. */
export class ReplayAttempt extends Move<string> {
  constructor(readonly pick: number) {
    super();
  }
  check(): boolean {
    return true;
  }
  protected act(m: Model, r: Real): Promise<void> {
    const attempt = r.attempts[this.pick % r.attempts.length]!;
    return attach(m, r, attempt.message, attempt.from, attempt.generation);
  }
  toString(): string {
    return `ReplayAttempt(${this.pick})`;
  }
}

/**
 * Items sent on the attached transport, then at once a resume on a new
 * one, without waiting for their ACKs. The acceptance's high-water says how
 * many the old transport got in; the rest must never be accepted. With
 * `behindResend`, an identical resend goes first and the old transport
 * holds its sends (a full socket): the connection waits on the resend's
 * ACK, the items queue behind it, and they are read only after the new
 * acceptance has replaced their attachment.
 */
export class SendThenResume extends Move<string> {
  constructor(
    readonly texts: readonly string[],
    readonly behindResend: boolean,
    readonly cursorPick: number,
  ) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    // With the output cancelled, the first item finishes the session (SendItem): a race with the resume's revocation.
    return m.attached && !m.inputTerminal && !m.outputTerminal;
  }
  protected act(m: Model, r: Real): Promise<void> {
    const c = ownerOf(r);
    const channel = r.channel(c, "input");
    const held = this.behindResend && m.acked > 0;
    if (held) {
      c.link.transport.holdSends();
      c.link.send({ type: "inputStreamItem", channel, sequence: 0n, value: v.str(m.sent[0]!) });
    }
    for (const text of this.texts) {
      c.link.send({ type: "inputStreamItem", channel, sequence: BigInt(m.sent.length), value: v.str(text) });
      m.sent.push(text);
    }
    const { message, from } = newAttach("resume", this.cursorPick, m, r);
    return attach(m, r, message, from, undefined, undefined, () => c.link.transport.releaseSends());
  }
  toString(): string {
    return `SendThenResume(${JSON.stringify(this.texts)}, ${this.behindResend ? "behind a resend" : "alone"}, cursor ${this.cursorPick})`;
  }
}

/** A resume followed at once by an item the client cannot yet know the channel of: invalid-channel after the acceptance. */
export class ItemBeforeAcceptance extends Move<string> {
  constructor(readonly text: string) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    // An attached owner: nothing of the session is finished or finishing, so the item is read, not dropped.
    return m.attached;
  }
  protected act(m: Model, r: Real): Promise<void> {
    const message = resumeAttach("resume", r.tokens[m.generation - 1]!);
    // The previous connection's channel number: the client guesses it will be the same.
    const channel = r.channel(ownerOf(r), "input");
    return attach(m, r, message, 0, undefined, (c) =>
      c.link.send({ type: "inputStreamItem", channel, sequence: BigInt(m.sent.length), value: v.str(this.text) }),
    ).then(() => {
      r.owner = undefined;
      m.attached = false;
    });
  }
  toString(): string {
    return `ItemBeforeAcceptance(${JSON.stringify(this.text)})`;
  }
}

/**
 * Two resumes with the current token on two transports at once: exactly one
 * is accepted (a new generation), the other is `superseded`.
 */
export class RacingResumes extends Move<string> {
  constructor(readonly cursorPick: number) {
    super();
  }
  check(): boolean {
    return true;
  }
  protected async act(m: Model, r: Real): Promise<void> {
    const { cursors, from } = cursorFor(this.cursorPick, m, r);
    const sessionToken = r.tokens[m.generation - 1]!;
    const messages = [0, 1].map(() => resumeAttach("resume", sessionToken, cursors));
    const previous = r.owner;
    if (previous !== undefined) previous.expectedEnd = "revoked";
    const racers = messages.map((message) => r.open(message.attemptId));
    racers.forEach((c, i) => c.link.send(messages[i]!));
    for (const c of racers) await c.link.transport.expect("an answer to a racing resume", (sent) => sent.length > 0);
    const winner = racers.findIndex((c) => c.link.transport.sent[0]?.type === "invocationAccepted");
    const loser = racers[1 - winner];
    if (winner < 0 || loser === undefined || loser.link.transport.sent[0]?.type !== "invocationRejected") {
      fail(racers[0]!, "of two racing resumes exactly one is accepted");
    }
    loser.expectedEnd = { rejected: "superseded" };
    await loser.link.transport.expectClose("the rejection of the losing resume");
    await afterAcceptance(m, r, racers[winner]!, messages[winner]!, from, undefined, previous, false);
  }
  toString(): string {
    return `RacingResumes(cursor ${this.cursorPick})`;
  }
}

/**
 * One new resume sent on two transports at once (an uncertain retry that
 * overtook the original): both are accepted with the same new token, one
 * generation more; the one decided second is its exact replay and takes
 * the session, revoking the other.
 */
export class DoubledResume extends Move<string> {
  constructor(readonly cursorPick: number) {
    super();
  }
  check(): boolean {
    return true;
  }
  protected async act(m: Model, r: Real): Promise<void> {
    const { message, from } = newAttach("resume", this.cursorPick, m, r);
    const previous = r.owner;
    if (previous !== undefined) previous.expectedEnd = "revoked";
    const twins = [r.open(message.attemptId), r.open(message.attemptId)];
    for (const c of twins) c.allowUnterminatedOutputs = from === "terminal";
    for (const c of twins) c.link.send(message);
    for (const c of twins) await c.link.transport.expect("the acceptance of a doubled resume", (sent) => sent.length > 0);
    const tokens = twins.map((c) => {
      const first = c.link.transport.sent[0];
      if (first?.type !== "invocationAccepted") fail(c, "both transports of one attempt are accepted");
      return first.sessionToken;
    });
    if (tokens[0] !== tokens[1]) fail(twins[1]!, "an exact replay carries the same session token");
    // Finished, or finishing (an item kept from before a cut reached an agent whose output the client cancelled).
    const finishing = m.finished || (m.outputTerminal && m.sent.length > m.acked);
    if (finishing) {
      // Each attachment of a finished session runs to its own invocationFinished, unless replaced first.
      for (const c of twins) c.expectedEnd = "finished";
    }
    // The one decided first is replaced by its replay (on a finished session it may finish first).
    const replaced = await firstClosed(twins);
    const survivor = twins[1 - replaced]!;
    if (twins[replaced]!.link.transport.sent.at(-1)?.type === "attachmentRevoked") twins[replaced]!.expectedEnd = "revoked";
    else if (!finishing) fail(twins[replaced]!, "the transport decided first must be revoked by the replay");
    await afterAcceptance(m, r, survivor, message, from, undefined, previous, false);
  }
  toString(): string {
    return `DoubledResume(cursor ${this.cursorPick})`;
  }
}

/** The index of the first of `connections` the server closes, bounded by progress. */
async function firstClosed(connections: readonly ModelConnection[]): Promise<number> {
  const closed = (): number => connections.findIndex((c) => c.link.transport.closedWith !== undefined);
  await expectAcross(
    "the close of one of two transports",
    connections.map((c) => c.link.transport),
    () => closed() >= 0,
  );
  return closed();
}

/**
 * A takeover while the attached transport holds its sends (a client that
 * stopped reading, a half-open connection): the replaced transport still
 * receives attachmentRevoked and is closed, without waiting for the socket
 * to drain.
 */
export class TakeoverOverHeldSocket extends Move<string> {
  constructor(readonly cursorPick: number) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.attached;
  }
  protected act(m: Model, r: Real): Promise<void> {
    ownerOf(r).link.transport.holdSends();
    const { message, from } = newAttach("takeover", this.cursorPick, m, r);
    return attach(m, r, message, from, undefined);
  }
  toString(): string {
    return `TakeoverOverHeldSocket(cursor ${this.cursorPick})`;
  }
}

/** An accepted attempt's id with another descriptor: attempt-conflict. */
export class AttemptConflict extends Move<string> {
  constructor(readonly pick: number) {
    super();
  }
  check(): boolean {
    return true;
  }
  protected act(_m: Model, r: Real): Promise<void> {
    const { message } = r.attempts[this.pick % r.attempts.length]!;
    const changed: InvocationStart | ResumeAttach =
      message.type === "invocationStart"
        ? { ...message, idempotencyKey: randomUUID() }
        : { ...message, operation: message.operation === "resume" ? "takeover" : "resume" };
    return refused(r, changed, "attempt-conflict");
  }
  toString(): string {
    return `AttemptConflict(${this.pick})`;
  }
}
