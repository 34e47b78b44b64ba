/**
 * The client's moves against a `digest` session (`stream<u8>` in, packed
 * binary batches; the result is the length and SHA-256 of every accepted
 * byte) for the model-based test (session-model.slow.test.ts). The model's items
 * are bytes. What this adds to the `reverse` moves: ACKs count bytes, a
 * resend may straddle the high-water (the overlap must match, the suffix is
 * accepted), a text item on a binary stream is a protocol error, and the
 * result proves that exactly the acknowledged bytes reached the agent, in
 * order, across cuts and resumes. A cancel or a give-up that makes the
 * agent's reader throw fails the invocation.
 */
import fc from "fast-check";
import { createHash } from "node:crypto";
import type { ClientCancelReason, ResumeAttach, ServerMessage } from "@golem-stream/wire";
import { resolveLimits } from "../../src/index.js";
import { v } from "../../src/testing/demo-messages.js";
import { expectAcross } from "./memory-session.js";
import { ackAtLeast, Cut, fail, isAck, Move, ownerOf, refused, StaleResume, violation } from "./model-moves.js";
import type { ModelConnection, SessionModel, SessionUnderTest } from "./session-model.js";
import { resumeAttach } from "../helpers.js";

type Model = SessionModel<number>;
type Real = SessionUnderTest;

const DETACHED_TIMEOUT_MS = resolveLimits().detachedSessionTimeoutMs;

export const DIGEST_MOVES = [
  "SendBytes",
  "ResendOverlap",
  "ConflictingOverlap",
  "GapBytes",
  "TextOnBinary",
  "EndBytes",
  "CancelBytes",
  "CutBytes",
  "SendBytesThenCut",
  "AttachBytes",
  "StaleResumeBytes",
  "DetachedBytes",
] as const;

/** The result `digest` must return for `bytes`. */
function digestOf(bytes: readonly number[]): unknown {
  const sha256 = createHash("sha256").update(Uint8Array.from(bytes)).digest("hex");
  return v.record({ kind: "u64", value: String(bytes.length) }, v.str(sha256));
}

function sendBatch(c: ModelConnection, r: Real, sequence: number, bytes: readonly number[]): void {
  c.link.send({ type: "input-u8", channel: r.channel(c, "input"), sequence: BigInt(sequence), payload: Uint8Array.from(bytes) });
}

/** The next batch: ACKed promptly, by its byte count. */
class SendBytes extends Move<number> {
  constructor(readonly bytes: readonly number[]) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.attached && !m.inputTerminal;
  }
  protected async act(m: Model, r: Real): Promise<void> {
    const c = ownerOf(r);
    const sequence = m.sent.length;
    sendBatch(c, r, sequence, this.bytes);
    m.sent.push(...this.bytes);
    await c.link.transport.expect(`the ACK of bytes ${sequence}..${m.sent.length - 1}`, (sent) => sent.some(ackAtLeast(m.sent.length)));
    m.acked = m.sent.length;
  }
  toString(): string {
    return `SendBytes([${this.bytes.join(",")}])`;
  }
}

/** A resend from below the high-water, identical on the overlap, with `extra` new bytes after it: the same ACK, or one that covers the suffix. */
class ResendOverlap extends Move<number> {
  constructor(
    readonly pick: number,
    readonly extra: readonly number[],
  ) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.attached && !m.inputTerminal && m.acked > 0;
  }
  protected async act(m: Model, r: Real): Promise<void> {
    const c = ownerOf(r);
    const from = this.pick % m.acked;
    const before = c.link.transport.sent.length;
    sendBatch(c, r, from, [...m.sent.slice(from, m.acked), ...this.extra]);
    m.sent.push(...this.extra);
    const expected = m.sent.length;
    await c.link.transport.expect("the ACK of a resend", (sent) =>
      sent.slice(before).some(ackAtLeast(this.extra.length === 0 ? 0 : expected)),
    );
    const ack = c.link.transport.sent.slice(before).find(isAck)!;
    if (ack.highestContiguousSequence !== BigInt(expected) || ack.terminal)
      fail(c, `a resend straddling the high-water must be ACKed at ${expected}`);
    m.acked = expected;
  }
  toString(): string {
    return `ResendOverlap(${this.pick}, [${this.extra.join(",")}])`;
  }
}

/** A resend whose overlap with the accepted bytes differs in one byte: input-conflict. */
class ConflictingOverlap extends Move<number> {
  constructor(
    readonly pick: number,
    readonly at: number,
    readonly delta: number,
  ) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.attached && !m.inputTerminal && m.acked > 0;
  }
  protected act(m: Model, r: Real): Promise<void> {
    const from = this.pick % m.acked;
    const payload = m.sent.slice(from, m.acked);
    const at = this.at % payload.length;
    payload[at] = (payload[at]! + this.delta) % 256;
    return violation(m, r, "input-conflict", (c) => sendBatch(c, r, from, payload));
  }
  toString(): string {
    return `ConflictingOverlap(${this.pick}, ${this.at}, ${this.delta})`;
  }
}

/** A batch past the next sequence: input-gap. */
class GapBytes extends Move<number> {
  constructor(readonly skip: number) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.attached && !m.inputTerminal;
  }
  protected act(m: Model, r: Real): Promise<void> {
    return violation(m, r, "input-gap", (c) => sendBatch(c, r, m.sent.length + 1 + this.skip, [1]));
  }
  toString(): string {
    return `GapBytes(${this.skip})`;
  }
}

/** A text item on the direct-binary stream: protocol-error. */
class TextOnBinary extends Move<number> {
  check(m: Readonly<Model>): boolean {
    return m.attached && !m.inputTerminal;
  }
  protected act(m: Model, r: Real): Promise<void> {
    return violation(m, r, "protocol-error", (c) =>
      c.link.send({
        type: "inputStreamItem",
        channel: r.channel(c, "input"),
        sequence: BigInt(m.sent.length),
        value: { kind: "u8", value: 1 },
      }),
    );
  }
  toString(): string {
    return "TextOnBinary";
  }
}

/** Waits for the end of the invocation on the owner and checks the terminal ACK, the result (or none) and the finish. */
async function finishes(m: Model, r: Real, c: ModelConnection, before: number, withResult: boolean, what: string): Promise<void> {
  await c.link.transport.expectClose(what);
  const after = c.link.transport.sent.slice(before);
  const terminalAck = after.find((msg): msg is Extract<ServerMessage, { type: "inputStreamAck" }> => isAck(msg) && msg.terminal);
  if (terminalAck?.highestContiguousSequence !== BigInt(m.acked)) fail(c, `${what}: expected the terminal ACK at ${m.acked}`);
  const result = after.find((msg) => msg.type === "invocationResult");
  if (withResult) {
    if (
      result?.type !== "invocationResult" ||
      result.result.kind !== "value" ||
      JSON.stringify(result.result.value) !== JSON.stringify(digestOf(m.sent.slice(0, m.acked)))
    ) {
      fail(c, `${what}: the result must be the length and SHA-256 of the ${m.acked} acknowledged bytes`);
    }
  } else if (result !== undefined) {
    fail(c, `${what}: a failed invocation has no result`);
  }
  const last = after.at(-1);
  if (last?.type !== "invocationFinished" || last.outcome.kind !== (withResult ? "success" : "failure"))
    fail(c, `${what}: expected invocationFinished ${withResult ? "success" : "failure"} last`);
  r.expectedFinish = withResult ? "success" : "failure";
  m.inputTerminal = true;
  m.finished = true;
  m.attached = false;
  r.owner = undefined;
}

/** inputStreamEnd at the count: terminal ACK, the digest of every acknowledged byte, success. */
class EndBytes extends Move<number> {
  check(m: Readonly<Model>): boolean {
    return m.attached && !m.inputTerminal;
  }
  protected act(m: Model, r: Real): Promise<void> {
    const c = ownerOf(r);
    const before = c.link.transport.sent.length;
    c.expectedEnd = "finished";
    c.link.send({ type: "inputStreamEnd", channel: r.channel(c, "input"), sequence: BigInt(m.sent.length) });
    return finishes(m, r, c, before, true, "the end of the input");
  }
  toString(): string {
    return "EndBytes";
  }
}

/** A client cancel of the input: consumer-drop ends the agent's reader (a result); cancelled and source-unavailable make it throw (a failure). */
class CancelBytes extends Move<number> {
  constructor(readonly reason: ClientCancelReason) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.attached && !m.inputTerminal;
  }
  protected act(m: Model, r: Real): Promise<void> {
    const c = ownerOf(r);
    const before = c.link.transport.sent.length;
    c.expectedEnd = "finished";
    c.link.send({ type: "streamCancel", channel: r.channel(c, "input"), reason: this.reason });
    return finishes(m, r, c, before, this.reason === "consumer-drop", `the cancel of the input (${this.reason})`);
  }
  toString(): string {
    return `CancelBytes(${this.reason})`;
  }
}

/** Batches sent, then the socket drops before any ACK. */
class SendBytesThenCut extends Move<number> {
  constructor(readonly batches: readonly (readonly number[])[]) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.attached && !m.inputTerminal;
  }
  protected act(m: Model, r: Real): Promise<void> {
    const c = ownerOf(r);
    for (const batch of this.batches) {
      sendBatch(c, r, m.sent.length, batch);
      m.sent.push(...batch);
    }
    c.expectedEnd = "cut";
    c.link.cut();
    r.owner = undefined;
    m.attached = false;
    return Promise.resolve();
  }
  toString(): string {
    return `SendBytesThenCut(${JSON.stringify(this.batches)})`;
  }
}

/**
 * A resume with the current token, or a takeover with any generation's:
 * a refreshed token, the high-water between the ACKed and the sent count
 * (whole batches or none: a batch is one message), the replaced transport
 * revoked; on a finished session the result (if any) and the finish.
 */
class AttachBytes extends Move<number> {
  constructor(
    readonly operation: "resume" | "takeover",
    readonly tokenPick: number,
  ) {
    super();
  }
  check(): boolean {
    return true;
  }
  protected async act(m: Model, r: Real): Promise<void> {
    const sessionToken = this.operation === "resume" ? r.tokens[m.generation - 1]! : r.tokens[this.tokenPick % m.generation]!;
    const message: ResumeAttach = resumeAttach(this.operation, sessionToken);
    const previous = r.owner;
    if (previous !== undefined) previous.expectedEnd = "revoked";
    const c = r.open(message.attemptId);
    if (m.finished) c.expectedEnd = "finished";
    c.link.send(message);
    await c.link.transport.expect("the acceptance", (sent) => sent.length > 0);
    const acceptance = c.link.transport.sent[0];
    if (acceptance?.type !== "invocationAccepted") fail(c, "expected invocationAccepted");
    if (r.tokens.includes(acceptance.sessionToken)) fail(c, "a new attach must carry a refreshed session token");
    r.tokens.push(acceptance.sessionToken);
    m.generation += 1;
    m.attempts += 1;
    const input = acceptance.mappings.find((mapping) => mapping.direction === "input");
    if (acceptance.mappings.length !== 1 || input?.inputHighWater === undefined || input.provisionalRef !== undefined)
      fail(c, "the acceptance must map the input stream alone, by token");
    const kept = Number(input.inputHighWater.sequence);
    if (kept < m.acked || kept > m.sent.length)
      fail(c, `the input's high-water ${kept} must lie between the ACKed ${m.acked} and the sent ${m.sent.length}`);
    if (input.inputHighWater.terminal !== m.inputTerminal) fail(c, `the input's terminal flag must be ${m.inputTerminal}`);
    m.acked = kept;
    m.sent.length = kept;
    if (previous !== undefined) {
      await previous.link.transport.expectClose("the revocation of the replaced transport");
      r.owner = undefined;
      m.attached = false;
    }
    if (m.finished) {
      await c.link.transport.expectClose("the finish of a finished session's attach");
      return;
    }
    r.owner = c;
    m.attached = true;
  }
  toString(): string {
    return `AttachBytes(${this.operation}, token ${this.tokenPick})`;
  }
}

/** Nobody attaches for the detached timeout: the input ends transport-detached, `digest`'s reader throws, the invocation fails. */
class DetachedBytes extends Move<number> {
  check(m: Readonly<Model>): boolean {
    return !m.attached && !m.finished;
  }
  protected async act(m: Model, r: Real): Promise<void> {
    r.expectedFinish = "failure";
    r.timers.advance(DETACHED_TIMEOUT_MS + 1);
    await expectAcross("the given-up session to finish", [], () => r.harness.runtime.liveSessions === 0);
    m.inputTerminal = true;
    m.finished = true;
  }
  toString(): string {
    return "DetachedBytes";
  }
}

const bytes = fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 6 });
const reason = fc.constantFrom<ClientCancelReason>("cancelled", "consumer-drop", "source-unavailable");

export function digestCommands(maxCommands: number, replayPath?: string): fc.Arbitrary<Iterable<fc.AsyncCommand<Model, Real>>> {
  return fc.commands(
    [
      ...Array.from({ length: 6 }, () => bytes.map((b) => new SendBytes(b))),
      ...Array.from({ length: 3 }, () =>
        fc
          .tuple(fc.nat(), fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 3 }))
          .map(([pick, extra]) => new ResendOverlap(pick, extra)),
      ),
      fc.tuple(fc.nat(), fc.nat(), fc.integer({ min: 1, max: 255 })).map(([pick, at, delta]) => new ConflictingOverlap(pick, at, delta)),
      fc.nat(3).map((skip) => new GapBytes(skip)),
      fc.constant(new TextOnBinary()),
      fc.constant(new EndBytes()),
      reason.map((why) => new CancelBytes(why)),
      fc.constant(new Cut<number>("CutBytes")),
      fc.array(bytes, { minLength: 1, maxLength: 3 }).map((batches) => new SendBytesThenCut(batches)),
      ...Array.from({ length: 3 }, () =>
        fc.tuple(fc.constantFrom("resume", "takeover" as const), fc.nat()).map(([op, token]) => new AttachBytes(op, token)),
      ),
      fc.nat().map((pick) => new StaleResume<number>("StaleResumeBytes", pick)),
      fc.constant(new DetachedBytes()),
    ],
    { maxCommands, size: "medium", ...(replayPath === undefined ? {} : { replayPath }) },
  );
}
