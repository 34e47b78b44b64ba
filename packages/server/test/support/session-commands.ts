/**
 * The client's moves in the model-based test of a live `reverse` session
 * (session-model.test.ts): stream traffic, protocol violations, cuts, and
 * every kind of attach. The shared helpers (`violation`, `refused`, …) serve
 * the `digest` moves too (digest-commands.ts). Each command's `check` says when a client could
 * make the move; `run` makes it against the live server, waits for what the
 * protocol says must follow (bounded by progress, never by time), checks
 * it, updates the model, and then audits every connection's log
 * (session-model.ts).
 */
import fc from "fast-check";
import { randomUUID } from "node:crypto";
import type { ClientCancelReason, ErrorCode, InvocationStart, ResumeAttach, ServerMessage } from "@golem-stream/wire";
import { v } from "../../src/testing/demo-messages.js";
import { resolveLimits } from "../../src/index.js";
import { describe, expectAcross } from "./memory-session.js";
import type { ModelConnection, ReplayFrom, SessionModel, SessionUnderTest } from "./session-model.js";

type Model = SessionModel;
type Real = SessionUnderTest;

const DETACHED_TIMEOUT_MS = resolveLimits().detachedSessionTimeoutMs;

/** How many times each kind of move ran (its check passed), so a test can show every kind was exercised. */
export const movesRun = new Map<string, number>();

abstract class Command implements fc.AsyncCommand<Model, Real> {
  abstract check(model: Readonly<Model>): boolean;
  protected abstract act(model: Model, real: Real): Promise<void>;
  abstract toString(): string;
  async run(model: Model, real: Real): Promise<void> {
    movesRun.set(this.constructor.name, (movesRun.get(this.constructor.name) ?? 0) + 1);
    await this.act(model, real);
    real.audit(model);
  }
}

/** The name of every kind of move. */
export const MOVES = [
  "SendItem",
  "ResendItem",
  "ConflictingItem",
  "GapItem",
  "WrongEnd",
  "InvalidChannel",
  "EndInput",
  "CancelInput",
  "CancelOutput",
  "Cut",
  "SendThenCut",
  "Resume",
  "Takeover",
  "ReplayAttempt",
  "StaleResume",
  "AttemptConflict",
  "SendThenResume",
  "ItemBeforeAcceptance",
  "LateOutputCancel",
  "RacingResumes",
  "DoubledResume",
  "DetachedTimeout",
  "TakeoverOverHeldSocket",
] as const;

export function fail(connection: ModelConnection, what: string): never {
  throw new Error(`${what}; sent: ${describe(connection.link.transport.sent)}`);
}

export function ownerOf(real: Real): ModelConnection {
  if (real.owner === undefined) throw new Error("no attached transport (the command's check should have said so)");
  return real.owner;
}

export const isAck = (m: ServerMessage): m is Extract<ServerMessage, { type: "inputStreamAck" }> => m.type === "inputStreamAck";
export const ackAtLeast = (count: number) => (m: ServerMessage) => isAck(m) && m.highestContiguousSequence >= BigInt(count);
const outputItem = (sequence: number) => (m: ServerMessage) => m.type === "outputStreamItem" && m.sequence === BigInt(sequence);

// ------------------------------------------------------------ stream traffic

/**
 * The next item: ACKed promptly, and its reverse comes out at the same
 * sequence. Once the client has cancelled the output, the agent takes the
 * item, finds its output gone and stops reading: the server cancels the
 * input (consumer-drop) and the invocation finishes.
 */
class SendItem extends Command {
  constructor(readonly text: string) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.attached && !m.inputTerminal;
  }
  protected async act(m: Model, r: Real): Promise<void> {
    const c = ownerOf(r);
    const sequence = m.sent.length;
    const before = c.link.transport.sent.length;
    if (m.outputTerminal) c.expectedEnd = "finished";
    c.link.send({ type: "inputStreamItem", channel: r.channel(c, "input"), sequence: BigInt(sequence), value: v.str(this.text) });
    m.sent.push(this.text);
    if (m.outputTerminal) {
      m.acked = sequence + 1;
      droppedByAgent(c, r, await finishes(m, r, c, before, "an item after the output's cancel"));
      return;
    }
    await c.link.transport.expect(`the ACK of item ${sequence} and its output`, (sent) => sent.some(ackAtLeast(sequence + 1)) && sent.some(outputItem(sequence)));
    m.acked = sequence + 1;
    m.outputs = Math.max(m.outputs, sequence + 1);
  }
  toString(): string {
    return `SendItem(${JSON.stringify(this.text)})`;
  }
}

/** An identical resend of an acknowledged item: the same cumulative ACK, nothing else. */
class ResendItem extends Command {
  constructor(readonly pick: number) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.attached && !m.inputTerminal && m.acked > 0;
  }
  protected async act(m: Model, r: Real): Promise<void> {
    const c = ownerOf(r);
    const sequence = this.pick % m.acked;
    const before = c.link.transport.sent.length;
    c.link.send({ type: "inputStreamItem", channel: r.channel(c, "input"), sequence: BigInt(sequence), value: v.str(m.sent[sequence]!) });
    await c.link.transport.expect(`the ACK of resent item ${sequence}`, (sent) => sent.slice(before).some(isAck));
    const ack = c.link.transport.sent.slice(before).find(isAck)!;
    if (ack.highestContiguousSequence !== BigInt(m.acked) || ack.terminal || ack.mappings.length > 0) {
      fail(c, `an identical duplicate must get the same cumulative ACK (${m.acked}, not terminal, no mappings)`);
    }
  }
  toString(): string {
    return `ResendItem(${this.pick})`;
  }
}

/** Sends `message` on the owner, which must answer invocationRejected `code` (retryable after acceptance) and close 1002. */
export async function violation(m: SessionModel<unknown>, r: Real, code: ErrorCode, send: (c: ModelConnection) => void): Promise<void> {
  const c = ownerOf(r);
  c.expectedEnd = { rejected: code };
  send(c);
  await c.link.transport.expectClose(`invocationRejected ${code}`);
  const last = c.link.transport.sent.at(-1);
  if (last?.type !== "invocationRejected" || last.code !== code || !last.retryable) fail(c, `expected a retryable invocationRejected ${code}`);
  r.owner = undefined;
  m.attached = false;
}

/** A resend that differs from the accepted item: input-conflict. */
class ConflictingItem extends Command {
  constructor(
    readonly pick: number,
    readonly text: string,
  ) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.attached && !m.inputTerminal && m.acked > 0;
  }
  protected act(m: Model, r: Real): Promise<void> {
    const sequence = this.pick % m.acked;
    const text = this.text === m.sent[sequence] ? `${this.text}!` : this.text;
    return violation(m, r, "input-conflict", (c) => c.link.send({ type: "inputStreamItem", channel: r.channel(c, "input"), sequence: BigInt(sequence), value: v.str(text) }));
  }
  toString(): string {
    return `ConflictingItem(${this.pick}, ${JSON.stringify(this.text)})`;
  }
}

/**
 * An item past the next sequence: input-gap. With `held`, the transport
 * holds its sends (a client that stopped reading): the rejection is still
 * sent and the transport closed, without waiting for the socket to drain.
 */
class GapItem extends Command {
  constructor(
    readonly skip: number,
    readonly held: boolean,
  ) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.attached && !m.inputTerminal;
  }
  protected act(m: Model, r: Real): Promise<void> {
    const sequence = BigInt(m.sent.length + 1 + this.skip);
    if (this.held) ownerOf(r).link.transport.holdSends();
    return violation(m, r, "input-gap", (c) => c.link.send({ type: "inputStreamItem", channel: r.channel(c, "input"), sequence, value: v.str("gap") }));
  }
  toString(): string {
    return `GapItem(${this.skip}${this.held ? ", held" : ""})`;
  }
}

/** inputStreamEnd at a wrong sequence: below the count input-conflict, above it input-gap. */
class WrongEnd extends Command {
  constructor(readonly delta: number) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.attached && !m.inputTerminal && m.sent.length + this.delta >= 0;
  }
  protected act(m: Model, r: Real): Promise<void> {
    const sequence = BigInt(m.sent.length + this.delta);
    return violation(m, r, this.delta < 0 ? "input-conflict" : "input-gap", (c) => c.link.send({ type: "inputStreamEnd", channel: r.channel(c, "input"), sequence }));
  }
  toString(): string {
    return `WrongEnd(${this.delta})`;
  }
}

/** A channel never mapped, or one of the wrong direction: invalid-channel. */
class InvalidChannel extends Command {
  constructor(readonly kind: "unknown-item" | "unknown-cancel" | "item-on-output" | "end-on-output") {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.attached;
  }
  protected act(m: Model, r: Real): Promise<void> {
    return violation(m, r, "invalid-channel", (c) => {
      const unknown = 4_000_000_000;
      const output = r.channel(c, "output");
      const sequence = BigInt(m.sent.length);
      switch (this.kind) {
        case "unknown-item":
          return c.link.send({ type: "inputStreamItem", channel: unknown, sequence, value: v.str("x") });
        case "unknown-cancel":
          return c.link.send({ type: "streamCancel", channel: unknown, reason: "cancelled" });
        case "item-on-output":
          return c.link.send({ type: "inputStreamItem", channel: output, sequence, value: v.str("x") });
        case "end-on-output":
          return c.link.send({ type: "inputStreamEnd", channel: output, sequence });
      }
    });
  }
  toString(): string {
    return `InvalidChannel(${this.kind})`;
  }
}

/**
 * Waits for the end of the invocation on the owner after a move that ends it
 * and returns what was sent from `before` on.
 */
async function finishes(m: Model, r: Real, c: ModelConnection, before: number, what: string): Promise<ServerMessage[]> {
  await c.link.transport.expectClose(what);
  const after = c.link.transport.sent.slice(before);
  const last = after.at(-1);
  if (last?.type !== "invocationFinished" || last.outcome.kind !== "success") fail(c, `${what}: expected a successful invocationFinished last`);
  const terminalAck = after.find((msg) => isAck(msg) && msg.terminal);
  if (terminalAck === undefined || !isAck(terminalAck) || terminalAck.highestContiguousSequence !== BigInt(m.acked)) fail(c, `${what}: expected the terminal ACK at ${m.acked}`);
  m.inputTerminal = true;
  m.outputTerminal = true;
  m.finished = true;
  m.attached = false;
  r.owner = undefined;
  return after;
}

/** The output's terminal among `after`, at the count of items the client saw (unless it had it already: then none). */
function outputEndIn(c: ModelConnection, after: readonly ServerMessage[], m: Model, hadIt: boolean): Extract<ServerMessage, { type: "outputStreamEnd" }> | undefined {
  const end = after.find((msg) => msg.type === "outputStreamEnd");
  if (hadIt) {
    if (end !== undefined) fail(c, "a second output terminal");
    return undefined;
  }
  if (end?.type !== "outputStreamEnd" || end.sequence !== BigInt(m.outputs)) fail(c, `expected the output's terminal at ${m.outputs}`);
  return end;
}

/** The agent stopped reading its input: a server streamCancel (consumer-drop) comes before the input's terminal ACK. */
function droppedByAgent(c: ModelConnection, r: Real, after: readonly ServerMessage[]): void {
  const input = r.channel(c, "input");
  const cancel = after.findIndex((msg) => msg.type === "streamCancel" && msg.channel === input && msg.reason === "consumer-drop");
  const terminalAck = after.findIndex((msg) => isAck(msg) && msg.terminal);
  if (cancel < 0 || terminalAck < cancel) fail(c, "the input the agent stopped reading must be cancelled (consumer-drop) before its terminal ACK");
}

/** inputStreamEnd at the count: terminal ACK, the output ends ok after every item, then a successful finish. */
class EndInput extends Command {
  check(m: Readonly<Model>): boolean {
    return m.attached && !m.inputTerminal;
  }
  protected async act(m: Model, r: Real): Promise<void> {
    const c = ownerOf(r);
    const before = c.link.transport.sent.length;
    c.expectedEnd = "finished";
    c.link.send({ type: "inputStreamEnd", channel: r.channel(c, "input"), sequence: BigInt(m.sent.length) });
    const hadIt = m.outputTerminal;
    const after = await finishes(m, r, c, before, "the end of the input");
    const end = outputEndIn(c, after, m, hadIt);
    if (end !== undefined && end.outcome.kind !== "ok") fail(c, "a naturally ended input must end the output ok");
  }
  toString(): string {
    return "EndInput";
  }
}

/**
 * A client cancel of the input: terminal ACK; the agent's reader ends
 * (consumer-drop) or throws (cancelled, source-unavailable), so the output
 * ends ok or with a producer error; then a successful finish.
 */
class CancelInput extends Command {
  constructor(readonly reason: ClientCancelReason) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.attached && !m.inputTerminal;
  }
  protected async act(m: Model, r: Real): Promise<void> {
    const c = ownerOf(r);
    const before = c.link.transport.sent.length;
    c.expectedEnd = "finished";
    c.link.send({ type: "streamCancel", channel: r.channel(c, "input"), reason: this.reason });
    const hadIt = m.outputTerminal;
    const after = await finishes(m, r, c, before, `the cancel of the input (${this.reason})`);
    const outcome = outputEndIn(c, after, m, hadIt)?.outcome;
    const expected = this.reason === "consumer-drop" ? "ok" : "error";
    if (outcome !== undefined && (outcome.kind !== expected || (outcome.kind === "error" && outcome.code !== "producer-error"))) {
      fail(c, `after an input cancel (${this.reason}) the output must end ${expected}`);
    }
  }
  toString(): string {
    return `CancelInput(${this.reason})`;
  }
}

/**
 * A client cancel of the output: it ends cancelled with the client's reason,
 * after every item the client saw. The invocation goes on: `reverse` is
 * waiting for its next input item and learns of the cancel only when it has
 * one to write (see SendItem).
 */
class CancelOutput extends Command {
  constructor(readonly reason: ClientCancelReason) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.attached && !m.outputTerminal;
  }
  protected async act(m: Model, r: Real): Promise<void> {
    const c = ownerOf(r);
    const before = c.link.transport.sent.length;
    c.link.send({ type: "streamCancel", channel: r.channel(c, "output"), reason: this.reason });
    await c.link.transport.expect("the output's terminal", (sent) => sent.slice(before).some((msg) => msg.type === "outputStreamEnd"));
    const outcome = outputEndIn(c, c.link.transport.sent.slice(before), m, false)?.outcome;
    if (outcome?.kind !== "cancelled" || outcome.reason !== this.reason) fail(c, `the output must end cancelled (${this.reason})`);
    m.outputTerminal = true;
  }
  toString(): string {
    return `CancelOutput(${this.reason})`;
  }
}

// ------------------------------------------------------------ cuts

/** The client's socket drops: the session only detaches. */
class Cut extends Command {
  check(m: Readonly<Model>): boolean {
    return m.attached;
  }
  protected act(m: Model, r: Real): Promise<void> {
    const c = ownerOf(r);
    c.expectedEnd = "cut";
    c.link.cut();
    r.owner = undefined;
    m.attached = false;
    return Promise.resolve();
  }
  toString(): string {
    return "Cut";
  }
}

/** Items sent, then the socket drops before any ACK: the next acceptance says how many were kept. */
class SendThenCut extends Command {
  constructor(readonly texts: readonly string[]) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.attached && !m.inputTerminal;
  }
  protected act(m: Model, r: Real): Promise<void> {
    const c = ownerOf(r);
    const channel = r.channel(c, "input");
    for (const text of this.texts) {
      c.link.send({ type: "inputStreamItem", channel, sequence: BigInt(m.sent.length), value: v.str(text) });
      m.sent.push(text);
    }
    c.expectedEnd = "cut";
    c.link.cut();
    r.owner = undefined;
    m.attached = false;
    return Promise.resolve();
  }
  toString(): string {
    return `SendThenCut(${JSON.stringify(this.texts)})`;
  }
}

/**
 * Nobody attaches for `detachedSessionTimeoutMs` (the manual clock moves
 * past it): the session is given up. Its open input and output end
 * `cancelled` with `transport-detached`, and `reverse`, which returned its
 * result, finishes `success`. The move waits for the session to leave the
 * runtime's memory (finished, nobody attached); the next attach sees it.
 */
class DetachedTimeout extends Command {
  check(m: Readonly<Model>): boolean {
    // The model must know where the output ends: nothing in flight from before a cut, and every
    // acknowledged item's reverse seen (a stale replay can report a high-water and show no output).
    return !m.attached && !m.finished && m.sent.length === m.acked && (m.outputTerminal || m.outputs === m.acked);
  }
  protected async act(m: Model, r: Real): Promise<void> {
    if (!m.outputTerminal) r.expectedOutputOutcome = { kind: "cancelled", reason: "transport-detached" };
    r.timers.advance(DETACHED_TIMEOUT_MS + 1);
    await expectAcross("the given-up session to finish", [], () => r.harness.runtime.liveSessions === 0);
    m.inputTerminal = true;
    m.outputTerminal = true;
    m.finished = true;
  }
  toString(): string {
    return "DetachedTimeout";
  }
}

// ------------------------------------------------------------ attaching

/** A cursor the client holds, chosen by `pick`: none, an item's, or the output's terminal. */
function cursorFor(pick: number, m: Model, r: Real): { cursors: string[]; from: ReplayFrom } {
  const items = Math.min(m.outputs, r.cursors.length);
  const choices = 1 + items + (r.terminalCursor === undefined ? 0 : 1);
  const choice = pick % choices;
  if (choice === 0) return { cursors: [], from: 0 };
  if (choice <= items) return { cursors: [r.cursors[choice - 1]!], from: choice };
  return { cursors: [r.terminalCursor!], from: "terminal" };
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
  if (kept < m.acked || kept > m.sent.length) fail(c, `the input's high-water ${kept} must lie between the ACKed ${m.acked} and the sent ${m.sent.length}`);
  // An item kept from before a cut, after the client cancelled the output: the agent took it,
  // could not write it and stopped reading, so the session is finishing (perhaps already has).
  const finishing = !m.finished && m.outputTerminal && kept > m.acked;
  if (highWater.terminal !== m.inputTerminal && !finishing) fail(c, `the input's terminal flag must be ${m.inputTerminal}`);
  const resolves = message.type === "invocationStart";
  if (input.provisionalRef !== (resolves ? r.provisionalRef : undefined)) {
    fail(c, resolves ? "a start's replay resolves the input's provisional reference" : "a resume does not resolve provisional references again");
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
    if (last?.type !== "invocationRejected" || last.code !== "invalid-channel" || !last.retryable) fail(c, "an item before the acceptance must be a retryable invalid-channel");
    if (c.link.transport.sent.some(isAck)) fail(c, "an item before the acceptance must not be acknowledged");
    return;
  }

  c.allowUnterminatedOutputs = from === "terminal";
  if (m.finished) c.expectedEnd = "finished";
  // Every durable input has its reverse on the output, unless the output ended first.
  const replayTo = m.outputTerminal ? m.outputs : kept;
  const itemsExpected = from !== "terminal" && from < replayTo;
  const terminalExpected = m.outputTerminal && from !== "terminal";
  await c.link.transport.expect("the result and the replayed output", (sent) =>
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
class Resume extends Command {
  constructor(readonly cursorPick: number) {
    super();
  }
  check(): boolean {
    return true;
  }
  protected act(m: Model, r: Real): Promise<void> {
    const { cursors, from } = cursorFor(this.cursorPick, m, r);
    const message: ResumeAttach = { type: "resumeAttach", attemptId: randomUUID(), operation: "resume", outputCursors: cursors, sessionToken: r.tokens[m.generation - 1]! };
    return attach(m, r, message, from, undefined);
  }
  toString(): string {
    return `Resume(cursor ${this.cursorPick})`;
  }
}

/** A takeover with the token of any generation. */
class Takeover extends Command {
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
    const { cursors, from } = cursorFor(this.cursorPick, m, r);
    const sessionToken = r.tokens[this.tokenPick % m.generation]!;
    const message: ResumeAttach = { type: "resumeAttach", attemptId: randomUUID(), operation: "takeover", outputCursors: cursors, sessionToken };
    return attach(m, r, message, from, undefined);
  }
  toString(): string {
    return `Takeover(token ${this.tokenPick}, cursor ${this.cursorPick})`;
  }
}

/** An exact replay of an accepted attempt (start, resume or takeover) on a new transport. */
class ReplayAttempt extends Command {
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
class SendThenResume extends Command {
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
    const { cursors, from } = cursorFor(this.cursorPick, m, r);
    const message: ResumeAttach = { type: "resumeAttach", attemptId: randomUUID(), operation: "resume", outputCursors: cursors, sessionToken: r.tokens[m.generation - 1]! };
    return attach(m, r, message, from, undefined, undefined, () => c.link.transport.releaseSends());
  }
  toString(): string {
    return `SendThenResume(${JSON.stringify(this.texts)}, ${this.behindResend ? "behind a resend" : "alone"}, cursor ${this.cursorPick})`;
  }
}

/** A resume followed at once by an item the client cannot yet know the channel of: invalid-channel after the acceptance. */
class ItemBeforeAcceptance extends Command {
  constructor(readonly text: string) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    // An attached owner: nothing of the session is finished or finishing, so the item is read, not dropped.
    return m.attached;
  }
  protected act(m: Model, r: Real): Promise<void> {
    const message: ResumeAttach = { type: "resumeAttach", attemptId: randomUUID(), operation: "resume", outputCursors: [], sessionToken: r.tokens[m.generation - 1]! };
    // The previous connection's channel number: the client guesses it will be the same.
    const channel = r.channel(ownerOf(r), "input");
    return attach(m, r, message, 0, undefined, (c) => c.link.send({ type: "inputStreamItem", channel, sequence: BigInt(m.sent.length), value: v.str(this.text) })).then(() => {
      r.owner = undefined;
      m.attached = false;
    });
  }
  toString(): string {
    return `ItemBeforeAcceptance(${JSON.stringify(this.text)})`;
  }
}

/**
 * A cancel of the output after its terminal: the first on a connection
 * crossed the terminal in flight and is ignored, a second is
 * invalid-channel. That the first was ignored shows in what follows it:
 * only the ACK of an identical resend sent after it, or, when it is
 * followed by a second cancel (or there is nothing to resend), only the
 * rejection of that one.
 */
class LateOutputCancel extends Command {
  constructor(
    readonly reason: ClientCancelReason,
    readonly twice: boolean,
  ) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.attached && m.outputTerminal && !m.inputTerminal;
  }
  protected async act(m: Model, r: Real): Promise<void> {
    const c = ownerOf(r);
    const output = r.channel(c, "output");
    const cancel = (): void => c.link.send({ type: "streamCancel", channel: output, reason: this.reason });
    const before = c.link.transport.sent.length;
    if (m.lateCancels > 0 || this.twice || m.acked === 0) {
      const ignored = m.lateCancels === 0;
      await violation(m, r, "invalid-channel", () => {
        if (ignored) cancel();
        cancel();
      });
      if (c.link.transport.sent.length !== before + 1) fail(c, "a late cancel must be ignored, and a second one refused");
      return;
    }
    m.lateCancels += 1;
    cancel();
    c.link.send({ type: "inputStreamItem", channel: r.channel(c, "input"), sequence: 0n, value: v.str(m.sent[0]!) });
    await c.link.transport.expect("the ACK of the resend after a late cancel", (sent) => sent.slice(before).some(isAck));
    const after = c.link.transport.sent.slice(before);
    if (after.length !== 1 || !isAck(after[0]!) || after[0].highestContiguousSequence !== BigInt(m.acked)) fail(c, "a late cancel must be ignored: only the resend's ACK follows it");
  }
  toString(): string {
    return `LateOutputCancel(${this.reason}${this.twice ? ", twice" : ""})`;
  }
}

/**
 * Two resumes with the current token on two transports at once: exactly one
 * is accepted (a new generation), the other is `superseded`.
 */
class RacingResumes extends Command {
  constructor(readonly cursorPick: number) {
    super();
  }
  check(): boolean {
    return true;
  }
  protected async act(m: Model, r: Real): Promise<void> {
    const { cursors, from } = cursorFor(this.cursorPick, m, r);
    const sessionToken = r.tokens[m.generation - 1]!;
    const messages = [0, 1].map((): ResumeAttach => ({ type: "resumeAttach", attemptId: randomUUID(), operation: "resume", outputCursors: cursors, sessionToken }));
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
class DoubledResume extends Command {
  constructor(readonly cursorPick: number) {
    super();
  }
  check(): boolean {
    return true;
  }
  protected async act(m: Model, r: Real): Promise<void> {
    const { cursors, from } = cursorFor(this.cursorPick, m, r);
    const message: ResumeAttach = { type: "resumeAttach", attemptId: randomUUID(), operation: "resume", outputCursors: cursors, sessionToken: r.tokens[m.generation - 1]! };
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
  await expectAcross("the close of one of two transports", connections.map((c) => c.link.transport), () => closed() >= 0);
  return closed();
}

/** Sends `message` on a new transport, which must be answered invocationRejected `code` (not retryable) and closed 1002. */
export async function refused(r: Real, message: InvocationStart | ResumeAttach, code: ErrorCode): Promise<void> {
  const c = r.open(message.attemptId);
  c.expectedEnd = { rejected: code };
  c.link.send(message);
  await c.link.transport.expectClose(`invocationRejected ${code}`);
  const sent = c.link.transport.sent;
  if (sent.length !== 1 || sent[0]?.type !== "invocationRejected" || sent[0].code !== code || sent[0].retryable) fail(c, `expected only invocationRejected ${code}, not retryable`);
}

/**
 * A takeover while the attached transport holds its sends (a client that
 * stopped reading, a half-open connection): the replaced transport still
 * receives attachmentRevoked and is closed, without waiting for the socket
 * to drain.
 */
class TakeoverOverHeldSocket extends Command {
  constructor(readonly cursorPick: number) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.attached;
  }
  protected act(m: Model, r: Real): Promise<void> {
    ownerOf(r).link.transport.holdSends();
    const { cursors, from } = cursorFor(this.cursorPick, m, r);
    const message: ResumeAttach = { type: "resumeAttach", attemptId: randomUUID(), operation: "takeover", outputCursors: cursors, sessionToken: r.tokens[m.generation - 1]! };
    return attach(m, r, message, from, undefined);
  }
  toString(): string {
    return `TakeoverOverHeldSocket(cursor ${this.cursorPick})`;
  }
}

/** A resume with the token of a superseded generation: superseded, and the session is untouched. */
class StaleResume extends Command {
  constructor(readonly tokenPick: number) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.generation > 1;
  }
  protected act(m: Model, r: Real): Promise<void> {
    const sessionToken = r.tokens[this.tokenPick % (m.generation - 1)]!;
    return refused(r, { type: "resumeAttach", attemptId: randomUUID(), operation: "resume", outputCursors: [], sessionToken }, "superseded");
  }
  toString(): string {
    return `StaleResume(token ${this.tokenPick})`;
  }
}

/** An accepted attempt's id with another descriptor: attempt-conflict. */
class AttemptConflict extends Command {
  constructor(readonly pick: number) {
    super();
  }
  check(): boolean {
    return true;
  }
  protected act(_m: Model, r: Real): Promise<void> {
    const { message } = r.attempts[this.pick % r.attempts.length]!;
    const changed: InvocationStart | ResumeAttach =
      message.type === "invocationStart" ? { ...message, idempotencyKey: randomUUID() } : { ...message, operation: message.operation === "resume" ? "takeover" : "resume" };
    return refused(r, changed, "attempt-conflict");
  }
  toString(): string {
    return `AttemptConflict(${this.pick})`;
  }
}

// ------------------------------------------------------------ arbitraries

/** Short texts with multi-byte scalars, a surrogate pair and JSON escapes. */
const text = fc.string({ unit: fc.constantFrom("a", "b", "z", " ", "é", "€", "😀", '"', "\\", "\n"), maxLength: 6 });
const reason = fc.constantFrom<ClientCancelReason>("cancelled", "consumer-drop", "source-unavailable");

/** Every move, weighted towards traffic and attaches so that sessions live long enough to be interesting. */
export function sessionCommands(maxCommands: number, replayPath?: string): fc.Arbitrary<Iterable<fc.AsyncCommand<Model, Real>>> {
  const sendItem = text.map((t) => new SendItem(t));
  return fc.commands(
    [
      ...Array.from({ length: 8 }, () => sendItem),
      fc.nat().map((pick) => new ResendItem(pick)),
      fc.nat().map((pick) => new ResendItem(pick)),
      fc.tuple(fc.nat(), text).map(([pick, t]) => new ConflictingItem(pick, t)),
      fc.tuple(fc.nat(3), fc.boolean()).map(([skip, held]) => new GapItem(skip, held)),
      fc.constantFrom(-2, -1, 1, 2).map((delta) => new WrongEnd(delta)),
      fc.constantFrom("unknown-item", "unknown-cancel", "item-on-output", "end-on-output" as const).map((kind) => new InvalidChannel(kind)),
      fc.constant(new EndInput()),
      reason.map((why) => new CancelInput(why)),
      reason.map((why) => new CancelOutput(why)),
      reason.map((why) => new CancelOutput(why)),
      fc.constant(new Cut()),
      fc.constant(new Cut()),
      fc.constant(new DetachedTimeout()),
      fc.nat().map((pick) => new TakeoverOverHeldSocket(pick)),
      fc.array(text, { minLength: 1, maxLength: 3 }).map((texts) => new SendThenCut(texts)),
      fc.nat().map((pick) => new Resume(pick)),
      fc.nat().map((pick) => new Resume(pick)),
      fc.tuple(fc.nat(), fc.nat()).map(([token, cursor]) => new Takeover(token, cursor)),
      fc.nat().map((pick) => new StaleResume(pick)),
      fc.nat().map((pick) => new ReplayAttempt(pick)),
      fc.nat().map((pick) => new AttemptConflict(pick)),
      fc.tuple(fc.array(text, { minLength: 1, maxLength: 3 }), fc.boolean(), fc.nat()).map(([texts, behind, cursor]) => new SendThenResume(texts, behind, cursor)),
      text.map((t) => new ItemBeforeAcceptance(t)),
      fc.nat().map((pick) => new RacingResumes(pick)),
      fc.nat().map((pick) => new DoubledResume(pick)),
      // Applicable only in the short window between an output cancel and the next item: often proposed.
      ...Array.from({ length: 6 }, () => fc.tuple(reason, fc.boolean()).map(([why, twice]) => new LateOutputCancel(why, twice))),
    ],
    { maxCommands, size: "medium", ...(replayPath === undefined ? {} : { replayPath }) },
  );
}
