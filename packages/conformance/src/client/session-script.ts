/**
 * Building blocks for scenario scripts: the messages a server of the demo
 * catalogue sends, with real tokens. They hold no session logic; a script
 * decides what to send, when, and on which connection.
 */
import { randomUUID } from "node:crypto";
import type { ClientMessage, InvocationStart, OutputOutcome, ResumeAttach, ServerMessage, StreamMapping } from "@golem-stream/wire";
import { Mismatch, show } from "../check.js";
import type { ScriptedPeer } from "./scripted-server.js";
import type { ScriptTokens } from "./script-tokens.js";

export type Attach = InvocationStart | ResumeAttach;

/** The first message of a connection, which must be a start or a resume. */
export async function nextAttach(peer: ScriptedPeer): Promise<Attach> {
  const message = await peer.next("the first message (invocationStart or resumeAttach)");
  if (message.type !== "invocationStart" && message.type !== "resumeAttach")
    throw new Mismatch(`connection ${peer.index} began with ${message.type}`);
  return message;
}

export async function nextResume(peer: ScriptedPeer): Promise<ResumeAttach> {
  const attach = await nextAttach(peer);
  if (attach.type !== "resumeAttach") throw new Mismatch(`connection ${peer.index} began with ${attach.type}, expected a resumeAttach`);
  return attach;
}

/** One session as the script sees it: its tokens and its acceptances. */
export class ScriptedSession {
  readonly tokens: ScriptTokens;
  #generation = 0;
  #idempotencyKey = "";
  /** The session token of each acceptance, in order. */
  readonly sessionTokens: string[] = [];

  constructor(tokens: ScriptTokens) {
    this.tokens = tokens;
  }

  accept(peer: ScriptedPeer, attach: Attach, mappings: readonly StreamMapping[] = []): string {
    if (attach.type === "invocationStart") this.#idempotencyKey = attach.idempotencyKey;
    const sessionToken = this.tokens.session(++this.#generation);
    this.sessionTokens.push(sessionToken);
    peer.send({ type: "invocationAccepted", attemptId: attach.attemptId, idempotencyKey: this.#idempotencyKey, mappings, sessionToken });
    return sessionToken;
  }

  output(): ScriptedOutput {
    return new ScriptedOutput(this.tokens);
  }

  input(): ScriptedInput {
    return new ScriptedInput(this.tokens);
  }
}

export const u32 = (value: number) => ({ kind: "u32", value }) as const;

/** An output `stream<u32>` whose item at sequence n carries the value n. */
export class ScriptedOutput {
  readonly id = randomUUID();
  readonly token: string;
  readonly #tokens: ScriptTokens;

  constructor(tokens: ScriptTokens) {
    this.#tokens = tokens;
    this.token = tokens.stream(this.id, "output");
  }

  mapping(channel: number): StreamMapping {
    return { channel, direction: "output", streamToken: this.token };
  }

  /** The invocation's result: this stream, announced on `channel` unless `announced` already. */
  result(channel: number, announced = false): ServerMessage {
    return {
      type: "invocationResult",
      mappings: announced ? [] : [this.mapping(channel)],
      result: {
        kind: "value",
        graph: { root: { kind: "stream", value: { inner: { kind: "u32", value: {} } } } },
        value: { kind: "stream", value: { streamToken: this.token } },
      },
    };
  }

  item(channel: number, sequence: number): ServerMessage {
    return {
      type: "outputStreamItem",
      channel,
      cursorToken: this.#tokens.cursor(this.id, BigInt(sequence), "item"),
      mappings: [],
      sequence: BigInt(sequence),
      value: u32(sequence),
    };
  }

  end(channel: number, sequence: number, outcome: OutputOutcome = { kind: "ok" }): ServerMessage {
    return {
      type: "outputStreamEnd",
      channel,
      cursorToken: this.#tokens.cursor(this.id, BigInt(sequence), "terminal"),
      outcome,
      sequence: BigInt(sequence),
    };
  }

  /** Sends items `from` ≤ n < `to`. */
  send(peer: ScriptedPeer, channel: number, from: number, to: number): void {
    for (let n = from; n < to; n++) peer.send(this.item(channel, n));
  }

  /**
   * What a resume's cursors say about this stream: `undefined` without a
   * cursor for it, else the position and event of that cursor. Fails on a
   * cursor the server never issued, and on two cursors for one stream (protocol 5.2).
   */
  cursorIn(resume: ResumeAttach): { position: number; event: "item" | "terminal" } | undefined {
    const mine = resume.outputCursors.map((c) => this.#tokens.readCursor(c)).filter((c) => c.streamId === this.id);
    if (mine.length > 1)
      throw new Mismatch(`the resume carries ${mine.length} cursors for one output stream: ${show(resume.outputCursors)}`);
    const cursor = mine[0];
    return cursor === undefined ? undefined : { position: Number(cursor.position), event: cursor.event };
  }

  /** The first sequence a resume asks for: 0 without a cursor, after the cursor's item, or `ended` after its terminal. */
  resumeFrom(resume: ResumeAttach): number | "ended" {
    const cursor = this.cursorIn(resume);
    if (cursor === undefined) return 0;
    return cursor.event === "terminal" ? "ended" : cursor.position + 1;
  }
}

/** An input stream the client announced by a provisional reference. */
export class ScriptedInput {
  readonly token: string;

  constructor(tokens: ScriptTokens) {
    this.token = tokens.stream(randomUUID(), "input");
  }

  mapping(channel: number, highWater: number, terminal = false, provisionalRef?: string): StreamMapping {
    return {
      channel,
      direction: "input",
      streamToken: this.token,
      inputHighWater: { sequence: BigInt(highWater), terminal },
      ...(provisionalRef === undefined ? {} : { provisionalRef }),
    };
  }

  ack(channel: number, count: number, terminal = false): ServerMessage {
    return { type: "inputStreamAck", channel, highestContiguousSequence: BigInt(count), mappings: [], terminal };
  }
}

/** The provisional reference of the (only) input stream of a start. */
export function provisionalRefOf(start: InvocationStart): string {
  const match = /"provisionalRef":"([0-9a-f-]{36})"/.exec(JSON.stringify(start.methodParameters));
  if (match === null) throw new Mismatch(`the start has no provisional reference: ${show(start.methodParameters)}`);
  return match[1]!;
}

/** Input items and ends a connection received on `channel`, in order. */
export interface InputSeen {
  readonly sequence: number;
  readonly value?: unknown;
  readonly end?: true;
}

export function inputsOn(received: readonly ClientMessage[], channel: number): InputSeen[] {
  return received.flatMap((m): InputSeen[] => {
    if (m.type === "inputStreamItem" && m.channel === channel) return [{ sequence: Number(m.sequence), value: m.value }];
    if (m.type === "inputStreamEnd" && m.channel === channel) return [{ sequence: Number(m.sequence), end: true as const }];
    return [];
  });
}

export const FINISHED: ServerMessage = { type: "invocationFinished", outcome: { kind: "success" } };
