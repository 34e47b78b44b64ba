/** Resume and takeover with cursors and input high-water (protocol sections 5.2, 6.1, 9, 10; decisions sections 5 and 8). */
import { randomUUID } from "node:crypto";
import type { InvocationAccepted, InvocationStart, ResumeAttach, ServerMessage } from "@golem-stream/wire";
import { defineChecks, ensure, ensureEqual, show, type Check } from "../check.js";
import type { Connection } from "../connection.js";
import {
  channelFor,
  ensureAnswerRejected,
  ensureFinishedSuccess,
  ensureRejected,
  ensureTrace,
  ensureViolation,
  resultChannel,
  type SuiteContext,
} from "../context.js";
import { countStart, countValues, range, reverseStart, val } from "../demo.js";
import { inputEnd, inputItem as item } from "./support.js";

interface FinishedCount {
  readonly start: InvocationStart;
  readonly accepted: InvocationAccepted;
  readonly cursors: string[];
  readonly endCursor: string;
}

/** Runs count(n) to completion and returns its item cursors and terminal cursor. */
export async function finishedCount(ctx: SuiteContext, n: number): Promise<FinishedCount> {
  const start = countStart(n, 0);
  const { conn, accepted } = await ctx.start(start);
  const { messages } = await conn.all();
  const channel = resultChannel(messages);
  const cursors = messages.flatMap((m) => (m.type === "outputStreamItem" && m.channel === channel ? [m.cursorToken] : []));
  const end = messages.find((m) => m.type === "outputStreamEnd");
  ensure(end?.type === "outputStreamEnd" && end.cursorToken !== undefined, `no terminal cursor: ${show(end)}`);
  return { start, accepted, cursors, endCursor: end.cursorToken };
}

async function accepted(
  ctx: SuiteContext,
  token: string,
  operation: "resume" | "takeover",
  cursors: string[] = [],
): Promise<{ conn: Connection; accepted: InvocationAccepted }> {
  const { conn, answer } = await ctx.attach(token, operation, cursors);
  ensure(answer.type === "invocationAccepted", `expected invocationAccepted for ${operation}, saw ${show(answer)}`);
  return { conn, accepted: answer };
}

/** Output items after a resume: the messages and the values of the single count stream. */
async function replayed(conn: Connection): Promise<{ messages: ServerMessage[]; values: number[]; channel: number }> {
  const { messages } = await conn.all();
  const channel = resultChannel(messages);
  return { messages, values: countValues(messages, channel), channel };
}

/** A reverse session with `n` items acknowledged and its transport dropped. */
async function detachedReverse(ctx: SuiteContext, n: number, end = false): Promise<{ token: string; ref: string; start: InvocationStart }> {
  const { start, ref } = reverseStart();
  const { conn, accepted: acc } = await ctx.start(start);
  const channel = channelFor(acc, ref);
  for (let i = 0; i < n; i++) conn.send(item(channel, i, `in-${i}`));
  if (end) conn.send(inputEnd(channel, n));
  await conn.waitFor(
    `ack ${n}`,
    (m) => m.type === "inputStreamAck" && m.channel === channel && m.highestContiguousSequence === BigInt(n) && (!end || m.terminal),
  );
  conn.terminate();
  await conn.closed;
  return { token: acc.sessionToken, ref, start };
}

function inputMapping(acc: InvocationAccepted): NonNullable<InvocationAccepted["mappings"][number]> {
  const input = acc.mappings.find((m) => m.direction === "input");
  ensure(input !== undefined, `no input mapping in the resumed acceptance: ${show(acc.mappings)}`);
  return input;
}

/** After a resume at high-water 2, an input item at `sequence` with `text` must be refused with `code`. */
async function refusedAfterResume(ctx: SuiteContext, sequence: number, text: string, code: string): Promise<string> {
  const d = await detachedReverse(ctx, 2);
  const { conn, accepted: acc } = await accepted(ctx, d.token, "resume");
  conn.send(item(inputMapping(acc).channel, sequence, text));
  return ensureViolation(conn, { codes: [code], attemptId: acc.attemptId, rejectionRequired: true });
}

/** A resumeAttach with a fresh attempt id on a new connection, refused before acceptance with one of `codes`. */
async function refusedAttach(
  ctx: SuiteContext,
  attach: Pick<ResumeAttach, "operation" | "outputCursors" | "sessionToken">,
  codes: readonly string[],
): Promise<string> {
  const conn = await ctx.connect();
  const attemptId = randomUUID();
  conn.send({ type: "resumeAttach", attemptId, ...attach });
  return ensureRejected(conn, codes, attemptId);
}

/** An attach whose session token or cursors the server did not issue for this session: invalid-token. */
async function invalidTokenAttach(
  ctx: SuiteContext,
  sessionToken: string,
  operation: "resume" | "takeover",
  cursors: string[] = [],
): Promise<void> {
  const { conn, answer } = await ctx.attach(sessionToken, operation, cursors);
  ensureAnswerRejected(answer, "invalid-token");
  conn.terminate();
}

/** Flips one character in the middle of a token's base64url body. */
export function tamper(token: string): string {
  const i = Math.floor(token.length / 2);
  return token.slice(0, i) + (token[i] === "A" ? "B" : "A") + token.slice(i + 1);
}

export const resumeChecks: Check[] = defineChecks("resume", [
  {
    name: "no-cursor-replays-all",
    ref: "§9, decisions §8",
    expectation: "resume without cursors of a finished count(4) replays items 0..3, the end and invocationFinished",
    async run(ctx) {
      const f = await finishedCount(ctx, 4);
      const { conn } = await accepted(ctx, f.accepted.sessionToken, "resume");
      const { messages, values } = await replayed(conn);
      ensureEqual(values, range(4), "replayed values");
      ensureTrace(messages);
      ensure(messages.at(-1)?.type === "invocationFinished", "no invocationFinished");
    },
  },
  {
    name: "cursor-resumes-after-item",
    ref: "§6.4, §9",
    expectation: "resume with the cursor of item 1 of count(5) delivers items 2..4 (sequence 2 first), no earlier item",
    async run(ctx) {
      const f = await finishedCount(ctx, 5);
      const { conn } = await accepted(ctx, f.accepted.sessionToken, "resume", [f.cursors[1]!]);
      const { messages, values, channel } = await replayed(conn);
      ensureEqual(values, [2, 3, 4], "values after the cursor");
      ensureTrace(messages, { outputStart: new Map([[channel, 2n]]) });
    },
  },
  {
    name: "last-item-cursor-replays-terminal",
    ref: "§6.5",
    expectation: "resume with the cursor of the last item replays only the terminal (sequence 3), then invocationFinished",
    async run(ctx) {
      const f = await finishedCount(ctx, 3);
      const { conn } = await accepted(ctx, f.accepted.sessionToken, "resume", [f.cursors[2]!]);
      const { messages } = await conn.all();
      ensureEqual(messages.filter((m) => m.type === "outputStreamItem").length, 0, "items replayed");
      const end = messages.find((m) => m.type === "outputStreamEnd");
      ensureEqual(end?.type === "outputStreamEnd" ? [end.sequence, end.outcome.kind] : undefined, [3n, "ok"], "replayed terminal");
    },
  },
  {
    name: "terminal-cursor-no-replay",
    ref: "§6.5",
    expectation: "resume with the terminal's cursor replays neither items nor the terminal; invocationFinished still follows",
    async run(ctx) {
      const f = await finishedCount(ctx, 3);
      const { conn } = await accepted(ctx, f.accepted.sessionToken, "resume", [f.endCursor]);
      const { messages } = await conn.all();
      ensureEqual(
        messages.filter((m) => m.type === "outputStreamItem" || m.type === "outputStreamEnd").length,
        0,
        "items or terminals replayed",
      );
      ensureEqual(messages.at(-1)?.type, "invocationFinished", "last message");
    },
  },
  {
    name: "result-on-every-attachment",
    ref: "decisions §8",
    expectation: "a resumed attachment of a finished session receives the invocationResult before invocationFinished",
    async run(ctx) {
      const f = await finishedCount(ctx, 1);
      const { conn } = await accepted(ctx, f.accepted.sessionToken, "resume", [f.endCursor]);
      const { messages } = await conn.all();
      const types = messages.map((m) => m.type);
      ensure(
        types.includes("invocationResult") && types.indexOf("invocationResult") < types.indexOf("invocationFinished"),
        `types ${show(types)}`,
      );
    },
  },
  {
    name: "refreshed-session-token",
    ref: "decisions §8",
    expectation: "a resume's acceptance carries a refreshed session token (a new attachment generation) and echoes the resume's attempt id",
    async run(ctx) {
      const f = await finishedCount(ctx, 1);
      const { conn, answer, message } = await ctx.attach(f.accepted.sessionToken, "resume");
      ensure(answer.type === "invocationAccepted", `answer ${show(answer)}`);
      ensure(answer.sessionToken !== f.accepted.sessionToken, "the session token was not refreshed");
      ensureEqual(answer.attemptId, message.attemptId, "attemptId");
      ensureEqual(answer.idempotencyKey, f.start.idempotencyKey, "idempotencyKey");
      conn.terminate();
    },
  },
  {
    name: "stale-resume-superseded",
    ref: "decisions §5, §8",
    expectation: "resume with a session token whose generation was superseded by a later resume is refused superseded",
    async run(ctx) {
      const f = await finishedCount(ctx, 1);
      const later = await accepted(ctx, f.accepted.sessionToken, "resume", [f.endCursor]);
      await later.conn.all();
      const { conn, answer, message } = await ctx.attach(f.accepted.sessionToken, "resume", [f.endCursor]);
      ensure(answer.type === "invocationRejected", `expected superseded, saw ${show(answer)}`);
      ensureEqual([answer.code, answer.attemptId, answer.retryable], ["superseded", message.attemptId, false], "rejection");
      conn.terminate();
    },
  },
  {
    name: "stale-takeover-accepted",
    ref: "decisions §8",
    expectation: "takeover with a superseded session token of the session is accepted",
    async run(ctx) {
      const f = await finishedCount(ctx, 1);
      const later = await accepted(ctx, f.accepted.sessionToken, "resume", [f.endCursor]);
      await later.conn.all();
      const { conn } = await accepted(ctx, f.accepted.sessionToken, "takeover", [f.endCursor]);
      conn.terminate();
    },
  },
  {
    name: "input-high-water",
    ref: "§4.3, §6.1, §9",
    expectation:
      'after 3 acknowledged items and a dropped transport, resume maps the input with inputHighWater {sequence "3", terminal false}',
    async run(ctx) {
      const d = await detachedReverse(ctx, 3);
      const { conn, accepted: acc } = await accepted(ctx, d.token, "resume");
      ensureEqual(inputMapping(acc).inputHighWater, { sequence: 3n, terminal: false }, "inputHighWater");
      ensureEqual(inputMapping(acc).provisionalRef, undefined, "provisionalRef on a resumed mapping");
      conn.terminate();
    },
  },
  {
    name: "input-high-water-terminal",
    ref: "§4.3, decisions §8",
    expectation: "after the input ended and was acknowledged, a resumed mapping reports terminal true with the full count",
    async run(ctx) {
      const d = await detachedReverse(ctx, 2, true);
      const { conn, accepted: acc } = await accepted(ctx, d.token, "takeover");
      ensureEqual(inputMapping(acc).inputHighWater, { sequence: 2n, terminal: true }, "inputHighWater");
      conn.terminate();
    },
  },
  {
    name: "suffix-resend",
    ref: "§9",
    expectation: "after resume at high-water 2, sending items 2..3 and the end completes the invocation: all 4 reversed outputs, in order",
    async run(ctx) {
      const d = await detachedReverse(ctx, 2);
      const { conn, accepted: acc } = await accepted(ctx, d.token, "resume");
      const channel = inputMapping(acc).channel;
      conn.send(item(channel, 2, "in-2"));
      conn.send(item(channel, 3, "in-3"));
      conn.send(inputEnd(channel, 4));
      const { messages, closed } = await conn.all();
      const out = messages.flatMap((m) => (m.type === "outputStreamItem" ? [m.value] : []));
      ensureEqual(
        out,
        range(4).map((i) => val.str(`${i}-ni`)),
        "outputs",
      );
      ensureFinishedSuccess(messages, closed);
    },
  },
  {
    name: "overlapping-resend",
    ref: "§9 (identical duplicates are idempotent)",
    expectation: "after resume at high-water 2, resending items 0..3 (two identical duplicates) is accepted and yields 4 outputs",
    async run(ctx) {
      const d = await detachedReverse(ctx, 2);
      const { conn, accepted: acc } = await accepted(ctx, d.token, "resume");
      const channel = inputMapping(acc).channel;
      for (let i = 0; i < 4; i++) conn.send(item(channel, i, `in-${i}`));
      conn.send(inputEnd(channel, 4));
      const { messages, closed } = await conn.all();
      ensureEqual(messages.filter((m) => m.type === "outputStreamItem").length, 4, "outputs");
      ensureFinishedSuccess(messages, closed);
    },
  },
  {
    name: "conflicting-resend",
    ref: "§9",
    expectation: "after resume, resending item 0 with a different value is input-conflict, close 1002",
    run: (ctx) => refusedAfterResume(ctx, 0, "changed", "input-conflict"),
  },
  {
    name: "gap-after-resume",
    ref: "§9",
    expectation: "after resume at high-water 2, an item at sequence 3 is input-gap, close 1002",
    run: (ctx) => refusedAfterResume(ctx, 3, "in-3", "input-gap"),
  },
  {
    name: "tampered-session-token",
    ref: "§10, decisions §5",
    expectation: "resume with a session token altered in one character is invalid-token",
    async run(ctx) {
      const f = await finishedCount(ctx, 1);
      await invalidTokenAttach(ctx, tamper(f.accepted.sessionToken), "resume");
    },
  },
  {
    name: "garbage-session-token",
    ref: "§10, decisions §5",
    expectation: "resume with a syntactically wrong token (gai1_ plus a short body) is invalid-token",
    run: (ctx) => refusedAttach(ctx, { operation: "resume", outputCursors: [], sessionToken: "gai1_AAAA" }, ["invalid-token"]),
  },
  {
    name: "stream-token-as-session",
    ref: "§10.2 (token kind and signature domain agree)",
    expectation: "resume with a stream token in place of the session token is invalid-token",
    async run(ctx) {
      const { start, ref } = reverseStart();
      const { conn: first, accepted: acc } = await ctx.start(start);
      const streamToken = acc.mappings.find((m) => m.provisionalRef === ref)?.streamToken ?? "";
      first.terminate();
      return refusedAttach(ctx, { operation: "takeover", outputCursors: [], sessionToken: streamToken }, ["invalid-token"]);
    },
  },
  {
    name: "cursor-as-session",
    ref: "§10.2",
    expectation: "resume with a cursor token in place of the session token is invalid-token",
    async run(ctx) {
      const f = await finishedCount(ctx, 1);
      return refusedAttach(ctx, { operation: "takeover", outputCursors: [], sessionToken: f.cursors[0]! }, ["invalid-token"]);
    },
  },
  {
    name: "foreign-cursor",
    ref: "§10.2 (type-specific parent identity)",
    expectation: "resume of session A with a cursor of session B is invalid-token",
    async run(ctx) {
      const a = await finishedCount(ctx, 1);
      const b = await finishedCount(ctx, 1);
      await invalidTokenAttach(ctx, a.accepted.sessionToken, "takeover", [b.cursors[0]!]);
    },
  },
  {
    name: "tampered-cursor",
    ref: "§10.2",
    expectation: "resume with an altered cursor token is invalid-token",
    async run(ctx) {
      const f = await finishedCount(ctx, 2);
      await invalidTokenAttach(ctx, f.accepted.sessionToken, "takeover", [tamper(f.cursors[0]!)]);
    },
  },
  {
    name: "duplicate-cursors",
    ref: "§5.2",
    expectation: "outputCursors with two cursors of the same output stream is refused (invalid-message), nothing replayed",
    async run(ctx) {
      const f = await finishedCount(ctx, 3);
      return refusedAttach(
        ctx,
        { operation: "takeover", outputCursors: [f.cursors[0]!, f.cursors[1]!], sessionToken: f.accepted.sessionToken },
        ["invalid-message", "invalid-token"],
      );
    },
  },
  {
    name: "resume-exact-replay",
    ref: "§9 (a resume is frozen for uncertain retry)",
    expectation:
      "resending the same resumeAttach (same attempt id) on a new connection while the first resumed transport is live is accepted again, not superseded, and the first resumed transport receives attachmentRevoked",
    async run(ctx) {
      const { conn: original, accepted: acc } = await ctx.start(countStart(400, 10));
      const { conn: first, answer, message } = await ctx.attach(acc.sessionToken, "resume");
      ensure(answer.type === "invocationAccepted", `answer ${show(answer)}`);
      original.terminate();
      await first.nextOf("outputStreamItem");
      const conn = await ctx.connect();
      conn.send(message);
      const again = await conn.next("the answer to the replayed resume");
      ensure(again.type === "invocationAccepted" && again.attemptId === message.attemptId, `answer ${show(again)}`);
      const { messages } = await first.all();
      ensureEqual(messages.at(-1), { type: "attachmentRevoked", reason: "replaced" }, "last message of the first resumed transport");
      conn.terminate();
    },
  },
  {
    name: "resume-attempt-conflict",
    ref: "§9",
    expectation: "the same resume attempt id with a different cursor set is attempt-conflict",
    async run(ctx) {
      const f = await finishedCount(ctx, 2);
      const { conn: first, answer, message } = await ctx.attach(f.accepted.sessionToken, "resume");
      ensure(answer.type === "invocationAccepted", `answer ${show(answer)}`);
      first.terminate();
      const conn = await ctx.connect();
      conn.send({ ...message, outputCursors: [f.cursors[0]!] });
      return ensureRejected(conn, ["attempt-conflict"], message.attemptId);
    },
  },
]);
