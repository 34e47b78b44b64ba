/**
 * The stream traffic of a `reverse` session in the model-based test
 * (session-model.slow.test.ts): items, resends, conflicts, gaps, ends, cancels,
 * invalid channels, cuts and the detached timeout (model-moves.ts says what
 * a move is).
 */
import type { ClientCancelReason, ServerMessage } from "@golem-stream/wire";
import { resolveLimits } from "../../src/index.js";
import { v } from "../../src/testing/demo-messages.js";
import { expectAcross } from "./memory-session.js";
import { ackAtLeast, fail, isAck, Move, outputItem, ownerOf, violation } from "./model-moves.js";
import type { ModelConnection, SessionModel, SessionUnderTest } from "./session-model.js";

type Model = SessionModel;
type Real = SessionUnderTest;

const DETACHED_TIMEOUT_MS = resolveLimits().detachedSessionTimeoutMs;

/**
 * The next item: ACKed promptly, and its reverse comes out at the same
 * sequence. Once the client has cancelled the output, the agent takes the
 * item, finds its output gone and stops reading: the server cancels the
 * input (consumer-drop) and the invocation finishes.
 */
export class SendItem extends Move<string> {
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
    await c.link.transport.expect(
      `the ACK of item ${sequence} and its output`,
      (sent) => sent.some(ackAtLeast(sequence + 1)) && sent.some(outputItem(sequence)),
    );
    m.acked = sequence + 1;
    m.outputs = Math.max(m.outputs, sequence + 1);
  }
  toString(): string {
    return `SendItem(${JSON.stringify(this.text)})`;
  }
}

/** An identical resend of an acknowledged item: the same cumulative ACK, nothing else. */
export class ResendItem extends Move<string> {
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

/** A resend that differs from the accepted item: input-conflict. */
export class ConflictingItem extends Move<string> {
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
    return violation(m, r, "input-conflict", (c) =>
      c.link.send({ type: "inputStreamItem", channel: r.channel(c, "input"), sequence: BigInt(sequence), value: v.str(text) }),
    );
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
export class GapItem extends Move<string> {
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
    return violation(m, r, "input-gap", (c) =>
      c.link.send({ type: "inputStreamItem", channel: r.channel(c, "input"), sequence, value: v.str("gap") }),
    );
  }
  toString(): string {
    return `GapItem(${this.skip}${this.held ? ", held" : ""})`;
  }
}

/** inputStreamEnd at a wrong sequence: below the count input-conflict, above it input-gap. */
export class WrongEnd extends Move<string> {
  constructor(readonly delta: number) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.attached && !m.inputTerminal && m.sent.length + this.delta >= 0;
  }
  protected act(m: Model, r: Real): Promise<void> {
    const sequence = BigInt(m.sent.length + this.delta);
    return violation(m, r, this.delta < 0 ? "input-conflict" : "input-gap", (c) =>
      c.link.send({ type: "inputStreamEnd", channel: r.channel(c, "input"), sequence }),
    );
  }
  toString(): string {
    return `WrongEnd(${this.delta})`;
  }
}

/** A channel never mapped, or one of the wrong direction: invalid-channel. */
export class InvalidChannel extends Move<string> {
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
  if (last?.type !== "invocationFinished" || last.outcome.kind !== "success")
    fail(c, `${what}: expected a successful invocationFinished last`);
  const terminalAck = after.find((msg) => isAck(msg) && msg.terminal);
  if (terminalAck === undefined || !isAck(terminalAck) || terminalAck.highestContiguousSequence !== BigInt(m.acked))
    fail(c, `${what}: expected the terminal ACK at ${m.acked}`);
  m.inputTerminal = true;
  m.outputTerminal = true;
  m.finished = true;
  m.attached = false;
  r.owner = undefined;
  return after;
}

/** The output's terminal among `after`, at the count of items the client saw (unless it had it already: then none). */
function outputEndIn(
  c: ModelConnection,
  after: readonly ServerMessage[],
  m: Model,
  hadIt: boolean,
): Extract<ServerMessage, { type: "outputStreamEnd" }> | undefined {
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
  if (cancel < 0 || terminalAck < cancel)
    fail(c, "the input the agent stopped reading must be cancelled (consumer-drop) before its terminal ACK");
}

/** inputStreamEnd at the count: terminal ACK, the output ends ok after every item, then a successful finish. */
export class EndInput extends Move<string> {
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
export class CancelInput extends Move<string> {
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
export class CancelOutput extends Move<string> {
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

/**
 * A cancel of the output after its terminal: the first on a connection
 * crossed the terminal in flight and is ignored, a second is
 * invalid-channel. That the first was ignored shows in what follows it:
 * only the ACK of an identical resend sent after it, or, when it is
 * followed by a second cancel (or there is nothing to resend), only the
 * rejection of that one.
 */
export class LateOutputCancel extends Move<string> {
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
    if (after.length !== 1 || !isAck(after[0]!) || after[0].highestContiguousSequence !== BigInt(m.acked))
      fail(c, "a late cancel must be ignored: only the resend's ACK follows it");
  }
  toString(): string {
    return `LateOutputCancel(${this.reason}${this.twice ? ", twice" : ""})`;
  }
}

/** Items sent, then the socket drops before any ACK: the next acceptance says how many were kept. */
export class SendThenCut extends Move<string> {
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
export class DetachedTimeout extends Move<string> {
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
