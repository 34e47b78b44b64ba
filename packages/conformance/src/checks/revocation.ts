/** Revocation of a replaced attachment (protocol sections 6.8, 9; decisions section 8). */
import { defineChecks, ensure, ensureEqual, show, type Check } from "../check.js";
import { ensureAnswerRejected, ensureTrace, resultChannel, type SuiteContext } from "../context.js";
import { countStart, countValues } from "../demo.js";
import type { Connection } from "../connection.js";

async function liveCount(ctx: SuiteContext): Promise<{ conn: Connection; token: string }> {
  const { conn, accepted } = await ctx.start(countStart(400, 10));
  await conn.nextOf("outputStreamItem");
  return { conn, token: accepted.sessionToken };
}

async function revokedBy(ctx: SuiteContext, operation: "resume" | "takeover"): Promise<string> {
  const live = await liveCount(ctx);
  const { conn, answer } = await ctx.attach(live.token, operation);
  ensure(answer.type === "invocationAccepted", `answer to ${operation}: ${show(answer)}`);
  const { messages, closed } = await live.conn.all();
  ensureEqual(messages.at(-1), { type: "attachmentRevoked", reason: "replaced" }, "last message of the replaced transport");
  ensureEqual(messages.filter((m) => m.type === "attachmentRevoked").length, 1, "attachmentRevoked count");
  ensureTrace(messages);
  conn.terminate();
  return `replaced transport closed ${closed.code} after attachmentRevoked`;
}

export const revocationChecks: Check[] = defineChecks("revocation", [
  {
    name: "resume-revokes-live",
    ref: "§6.8, decisions §8",
    expectation:
      "resume while the first transport is live: the old transport receives attachmentRevoked replaced, nothing after it, and is closed",
    run: (ctx) => revokedBy(ctx, "resume"),
  },
  {
    name: "takeover-revokes-live",
    ref: "§6.8, decisions §8",
    expectation:
      "takeover while the first transport is live: the old transport receives attachmentRevoked replaced, nothing after it, and is closed",
    run: (ctx) => revokedBy(ctx, "takeover"),
  },
  {
    name: "new-owner-continues",
    ref: "§9, decisions §8",
    expectation:
      "after a takeover with the cursor of the last delivered item, the new transport receives the following items with no gap and no repeat",
    async run(ctx) {
      const live = await liveCount(ctx);
      const items = await (async () => {
        for (;;) {
          const got = live.conn.received.filter((m) => m.type === "outputStreamItem");
          if (got.length >= 3) return got;
          await live.conn.nextOf("outputStreamItem");
        }
      })();
      const last = items[2]!;
      ensure(last.type === "outputStreamItem", "");
      const { conn, answer } = await ctx.attach(live.token, "takeover", [last.cursorToken]);
      ensure(answer.type === "invocationAccepted", `answer ${show(answer)}`);
      for (let i = 0; i < 5; i++) await conn.nextOf("outputStreamItem");
      const messages = conn.received;
      const channel = resultChannel(messages);
      ensureEqual(countValues(messages, channel).slice(0, 5), [3, 4, 5, 6, 7], "first items after the takeover");
      ensureTrace(messages, { outputStart: new Map([[channel, 3n]]) });
    },
  },
  {
    name: "revoked-token-superseded",
    ref: "decisions §8",
    expectation: "after a takeover, resume with the replaced transport's session token is superseded",
    async run(ctx) {
      const live = await liveCount(ctx);
      const { conn, answer } = await ctx.attach(live.token, "takeover");
      ensure(answer.type === "invocationAccepted", `answer ${show(answer)}`);
      const { conn: third, answer: refused } = await ctx.attach(live.token, "resume");
      ensureAnswerRejected(refused, "superseded");
      conn.terminate();
      third.terminate();
    },
  },
]);
