/**
 * Another principal's attach (protocol sections 1 and 10.2; decisions section 5): a session token,
 * an attempt id or a cursor of one principal's session is no capability for another principal.
 * Authentication and authorization are repeated on every resume or takeover, and every attach
 * verifies the token's account and effective principal against the caller. Each check starts a
 * session with the suite's token and presents what it got with `otherPrincipalToken`.
 */
import { randomUUID } from "node:crypto";
import type { InvocationStart, ResumeAttach } from "@golem-stream/wire";
import { defineChecks, ensure, ensureEqual, Mismatch, show, type Check } from "../check.js";
import type { Connection } from "../connection.js";
import { ensureFinishedSuccess, ensureRejection, resultChannel, type SuiteContext } from "../context.js";
import { countStart, countValues, range } from "../demo.js";
import { finishedCount } from "./resume.js";

/**
 * What a server answers another principal's resume or takeover: the token's account and principal
 * are not the caller's (`invalid-token`, "fails … identity checks"), or the caller may not act on
 * the session (`forbidden`, "authorization of the … resume or takeover"). Decisions section 5.
 */
const ATTACH_CODES = ["invalid-token", "forbidden"] as const;

/**
 * What a server answers another principal's exact replay of a start: the attempt is the first
 * principal's (protocol section 9: attempt equality covers the message, so it is no new start of
 * the second), and authorization is repeated on replays: `forbidden`.
 */
const START_REPLAY_CODES = ["forbidden"] as const;

function otherToken(ctx: SuiteContext): string {
  const token = ctx.otherPrincipalToken;
  if (token === undefined) throw new Error("the suite was not told a second principal's token (--other-principal-token)");
  ensure(token !== ctx.token, "--other-principal-token is the suite's --token: give the token of a second principal");
  return token;
}

/** A connection with the second principal's token; a refused upgrade says which token is wrong. */
async function otherConnection(ctx: SuiteContext): Promise<Connection> {
  const token = otherToken(ctx);
  try {
    return await ctx.connect({ token });
  } catch (error) {
    throw new Mismatch(
      `the upgrade with the second principal's token failed (${error instanceof Error ? error.message : String(error)}): --other-principal-token must be a token the server accepts`,
    );
  }
}

/**
 * Sends `message` as the second principal and requires a definitive refusal before acceptance: one
 * invocationRejected with one of `codes`, the message's attempt id, `retryable: false`, as the only
 * message, then close 1002. An acceptance fails at once, saying what the second principal got.
 */
async function refusedForOther(ctx: SuiteContext, message: InvocationStart | ResumeAttach, codes: readonly string[]): Promise<string> {
  const conn = await otherConnection(ctx);
  conn.send(message);
  const what =
    message.type === "resumeAttach" ? `${message.operation} of the first principal's session` : "replay of the first principal's start";
  const answer = await conn.next(`the answer to the second principal's ${what}`);
  if (answer.type === "invocationAccepted") {
    conn.terminate();
    throw new Mismatch(
      `the second principal's ${what} was accepted (attempt ${answer.attemptId}, ${answer.mappings.length} channels mapped): ` +
        "a session token, attempt id or cursor is no authorization capability",
    );
  }
  const said = ensureRejection(answer, codes, message.attemptId);
  const { messages, closed } = await conn.all();
  const after = messages.slice(messages.indexOf(answer) + 1);
  ensure(after.length === 0, `messages after invocationRejected: ${show(after.map((m) => m.type))}`);
  ensureEqual(closed.code, 1002, "close code after the rejection");
  return `${said}, close 1002`;
}

/** The count values the first principal's own resume of its session (with `cursors`) replays: it must be accepted. */
async function firstPrincipalReplays(ctx: SuiteContext, sessionToken: string, cursors: readonly string[] = []): Promise<number[]> {
  const conn = await ctx.connect();
  conn.send({ type: "resumeAttach", attemptId: randomUUID(), operation: "resume", outputCursors: cursors, sessionToken });
  const answer = await conn.next("the answer to the first principal's own resume");
  ensure(
    answer.type === "invocationAccepted",
    `the first principal's own resume after the refusal: expected invocationAccepted, saw ${show(answer)}`,
  );
  const { messages } = await conn.all();
  return countValues(messages, resultChannel(messages));
}

/** A count the first principal is reading while the check runs: its connection, after the first item. */
async function liveCount(ctx: SuiteContext): Promise<{ conn: Connection; start: InvocationStart; sessionToken: string }> {
  const start = countStart(40, 25);
  const { conn, accepted } = await ctx.start(start);
  await conn.nextOf("outputStreamItem");
  return { conn, start, sessionToken: accepted.sessionToken };
}

/** The first principal's live count must be untouched by the refused attach: every item, no revocation, success. */
async function ensureUntouched(conn: Connection): Promise<void> {
  const { messages, closed } = await conn.all();
  ensure(
    !messages.some((m) => m.type === "attachmentRevoked"),
    "the first principal's transport received attachmentRevoked after the second's refused attach",
  );
  ensureEqual(countValues(messages, resultChannel(messages)), range(40), "the first principal's count values");
  ensureFinishedSuccess(messages, closed);
}

export const authorizationChecks: Check[] = defineChecks("authorization", [
  {
    name: "other-principal-resume",
    ref: "§1, §10.2, decisions §5",
    expectation:
      "a second principal's resume with the session token of the first's finished session is refused (invalid-token or forbidden, retryable false, close 1002), while the second's own start and resume are accepted and the first can still resume with that token",
    otherPrincipal: true,
    async run(ctx) {
      // The second principal's token works for its own session: the refusal below is about whose session it is.
      const own = await otherConnection(ctx);
      own.send(countStart(1, 0));
      const ownAccepted = await own.nextOf("invocationAccepted");
      const ownRun = await own.all();
      ensureFinishedSuccess(ownRun.messages, ownRun.closed);
      const ownAttach = await otherConnection(ctx);
      ownAttach.send({
        type: "resumeAttach",
        attemptId: randomUUID(),
        operation: "resume",
        outputCursors: [],
        sessionToken: ownAccepted.sessionToken,
      });
      const ownAnswer = await ownAttach.next("the answer to the second principal's resume of its own session");
      ensure(
        ownAnswer.type === "invocationAccepted",
        `the second principal's resume of its own session: expected invocationAccepted, saw ${show(ownAnswer)}`,
      );
      ownAttach.terminate();

      const f = await finishedCount(ctx, 2);
      const attach: ResumeAttach = {
        type: "resumeAttach",
        attemptId: randomUUID(),
        operation: "resume",
        outputCursors: [],
        sessionToken: f.accepted.sessionToken,
      };
      const saw = await refusedForOther(ctx, attach, ATTACH_CODES);
      const replay = await firstPrincipalReplays(ctx, f.accepted.sessionToken);
      ensureEqual(replay, range(2), "values the first principal's resume replays");
      return saw;
    },
  },
  {
    name: "other-principal-takeover",
    ref: "§1, §10.2, decisions §5",
    expectation:
      "a second principal's takeover of the first's running session is refused (invalid-token or forbidden, retryable false, close 1002), and the first principal's transport keeps the session: every item, no attachmentRevoked, success",
    otherPrincipal: true,
    async run(ctx) {
      const live = await liveCount(ctx);
      const saw = await refusedForOther(
        ctx,
        { type: "resumeAttach", attemptId: randomUUID(), operation: "takeover", outputCursors: [], sessionToken: live.sessionToken },
        ATTACH_CODES,
      );
      await ensureUntouched(live.conn);
      return saw;
    },
  },
  {
    name: "other-principal-resume-replay",
    ref: "§1, §9, §10.2, decisions §5",
    expectation:
      "the first principal's accepted resumeAttach sent again unchanged (same attempt id) by a second principal is refused (invalid-token or forbidden, retryable false, close 1002), and the first's resumed transport is not revoked",
    otherPrincipal: true,
    async run(ctx) {
      const { conn: original, accepted } = await ctx.start(countStart(40, 25));
      const resume: ResumeAttach = {
        type: "resumeAttach",
        attemptId: randomUUID(),
        operation: "resume",
        outputCursors: [],
        sessionToken: accepted.sessionToken,
      };
      const resumed = await ctx.connect();
      resumed.send(resume);
      const answer = await resumed.next("the answer to the first principal's resume");
      ensure(answer.type === "invocationAccepted", `the first principal's resume: expected invocationAccepted, saw ${show(answer)}`);
      original.terminate();
      await resumed.nextOf("outputStreamItem");
      const saw = await refusedForOther(ctx, resume, ATTACH_CODES);
      await ensureUntouched(resumed);
      return saw;
    },
  },
  {
    name: "other-principal-start-replay",
    ref: "§1, §9, decisions §5",
    expectation:
      "the first principal's accepted invocationStart sent again unchanged (same attempt id) by a second principal is refused forbidden (retryable false, close 1002), and the first principal's transport keeps the session: every item, no attachmentRevoked, success",
    otherPrincipal: true,
    async run(ctx) {
      const live = await liveCount(ctx);
      const saw = await refusedForOther(ctx, live.start, START_REPLAY_CODES);
      await ensureUntouched(live.conn);
      return saw;
    },
  },
  {
    name: "other-principal-cursor",
    ref: "§1, §6.4, §10.2, decisions §5",
    expectation:
      "a second principal's resume with the first's session token and the cursor of item 0 of its finished count(3) is refused (invalid-token or forbidden, retryable false, close 1002) without an item, while the first principal's resume from that cursor replays items 1..2",
    otherPrincipal: true,
    async run(ctx) {
      const f = await finishedCount(ctx, 3);
      const saw = await refusedForOther(
        ctx,
        {
          type: "resumeAttach",
          attemptId: randomUUID(),
          operation: "resume",
          outputCursors: [f.cursors[0]!],
          sessionToken: f.accepted.sessionToken,
        },
        ATTACH_CODES,
      );
      const replay = await firstPrincipalReplays(ctx, f.accepted.sessionToken, [f.cursors[0]!]);
      ensureEqual(replay, [1, 2], "values the first principal's resume from the cursor replays");
      return saw;
    },
  },
]);
