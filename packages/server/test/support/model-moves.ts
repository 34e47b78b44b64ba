/**
 * What the moves of the model-based session tests share (session-model.slow.test.ts;
 * reverse-traffic.ts, reverse-attach.ts and digest-commands.ts): the base of
 * a move, which counts the runs of each kind and audits every connection
 * after it, and the checks several moves make. A move's `check` says when a
 * client could make it; `run` makes it against the live server, waits for
 * what the protocol says must follow (bounded by progress, never by time),
 * checks it, updates the model, then audits (session-model.ts).
 */
import type fc from "fast-check";
import type { ErrorCode, InvocationStart, ResumeAttach, ServerMessage } from "@golem-stream/wire";
import { describe } from "./memory-session.js";
import type { ModelConnection, SessionModel, SessionUnderTest } from "./session-model.js";
import { resumeAttach } from "../helpers.js";

/** How many times each kind of move ran (its check passed), by kind, so a test can show every kind was exercised. */
export const movesRun = new Map<string, number>();

export abstract class Move<Item> implements fc.AsyncCommand<SessionModel<Item>, SessionUnderTest> {
  abstract check(model: Readonly<SessionModel<Item>>): boolean;
  protected abstract act(model: SessionModel<Item>, real: SessionUnderTest): Promise<void>;
  abstract toString(): string;
  /** What `movesRun` counts this move as: the class's name, unless a move shared by the models names its kind per model. */
  get countedAs(): string {
    return this.constructor.name;
  }
  async run(model: SessionModel<Item>, real: SessionUnderTest): Promise<void> {
    movesRun.set(this.countedAs, (movesRun.get(this.countedAs) ?? 0) + 1);
    await this.act(model, real);
    real.audit(model);
  }
}

type Real = SessionUnderTest;

export function fail(connection: ModelConnection, what: string): never {
  throw new Error(`${what}; sent: ${describe(connection.link.transport.sent)}`);
}

export function ownerOf(real: Real): ModelConnection {
  if (real.owner === undefined) throw new Error("no attached transport (the command's check should have said so)");
  return real.owner;
}

export const isAck = (m: ServerMessage): m is Extract<ServerMessage, { type: "inputStreamAck" }> => m.type === "inputStreamAck";
export const ackAtLeast = (count: number) => (m: ServerMessage) => isAck(m) && m.highestContiguousSequence >= BigInt(count);
export const outputItem = (sequence: number) => (m: ServerMessage) => m.type === "outputStreamItem" && m.sequence === BigInt(sequence);

/** Sends `message` on the owner, which must answer invocationRejected `code` (retryable after acceptance) and close 1002. */
export async function violation(m: SessionModel<unknown>, r: Real, code: ErrorCode, send: (c: ModelConnection) => void): Promise<void> {
  const c = ownerOf(r);
  c.expectedEnd = { rejected: code };
  send(c);
  await c.link.transport.expectClose(`invocationRejected ${code}`);
  const last = c.link.transport.sent.at(-1);
  if (last?.type !== "invocationRejected" || last.code !== code || !last.retryable)
    fail(c, `expected a retryable invocationRejected ${code}`);
  r.owner = undefined;
  m.attached = false;
}

/** Sends `message` on a new transport, which must be answered invocationRejected `code` (not retryable) and closed 1002. */
export async function refused(r: Real, message: InvocationStart | ResumeAttach, code: ErrorCode): Promise<void> {
  const c = r.open(message.attemptId);
  c.expectedEnd = { rejected: code };
  c.link.send(message);
  await c.link.transport.expectClose(`invocationRejected ${code}`);
  const sent = c.link.transport.sent;
  if (sent.length !== 1 || sent[0]?.type !== "invocationRejected" || sent[0].code !== code || sent[0].retryable)
    fail(c, `expected only invocationRejected ${code}, not retryable`);
}

/** The client's socket drops: the session only detaches. `name` names it in each model (`Cut`, `CutBytes`). */
export class Cut<Item> extends Move<Item> {
  constructor(readonly name: string) {
    super();
  }
  override get countedAs(): string {
    return this.name;
  }
  check(m: Readonly<SessionModel<Item>>): boolean {
    return m.attached;
  }
  protected act(m: SessionModel<Item>, r: Real): Promise<void> {
    const c = ownerOf(r);
    c.expectedEnd = "cut";
    c.link.cut();
    r.owner = undefined;
    m.attached = false;
    return Promise.resolve();
  }
  toString(): string {
    return this.name;
  }
}

/** A resume with the token of a superseded generation: superseded, and the session is untouched. */
export class StaleResume<Item> extends Move<Item> {
  constructor(
    readonly name: string,
    readonly tokenPick: number,
  ) {
    super();
  }
  override get countedAs(): string {
    return this.name;
  }
  check(m: Readonly<SessionModel<Item>>): boolean {
    return m.generation > 1;
  }
  protected act(m: SessionModel<Item>, r: Real): Promise<void> {
    const sessionToken = r.tokens[this.tokenPick % (m.generation - 1)]!;
    return refused(r, resumeAttach("resume", sessionToken), "superseded");
  }
  toString(): string {
    return `${this.name}(token ${this.tokenPick})`;
  }
}
