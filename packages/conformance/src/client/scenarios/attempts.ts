/**
 * Attempts (protocol §5.1, §5.2, §9): an uncertain outcome is retried with
 * the exact descriptor and the same attempt id; every new start, resume or
 * takeover has a fresh UUIDv4 and uses the latest session token.
 */
import { ensure, ensureEqual, Mismatch, show } from "../../check.js";
import { ScriptedSession, nextAttach, provisionalRefOf, type Attach } from "../session-script.js";
import { defineScenarios } from "../scenario.js";
import { COUNT, PLANNED_ITEMS as ITEMS, REVERSE, expectAllOnce, finishWithEmptyOutput, planned, str } from "./common.js";

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

export const attemptScenarios = defineScenarios("attempts", [
  {
    name: "exact-retry-after-cut",
    ref: "§5.1, §9",
    expectation: "a start cut before any answer is retried on a new connection with the exact same message, attempt id included",
    run: async (ctx) => {
      const attaches: Attach[] = [];
      await ctx.begin(planned(new ScriptedSession(ctx.tokens), ["cut", "complete"], attaches), COUNT);
      await expectAllOnce(ctx, ITEMS);
      ensure(attaches.length >= 2, `${attaches.length} attach(es)`);
      ensureEqual(attaches[1]!, attaches[0]!, "the retried start");
      return `attempt ${attaches[0]!.attemptId} retried exactly`;
    },
  },
  {
    name: "exact-retry-after-stall",
    ref: "§5.1, §9",
    expectation:
      "a start the server never answers is, after the client's acceptance timeout (500 ms here), retried exactly with the same attempt id",
    run: async (ctx) => {
      const attaches: Attach[] = [];
      await ctx.begin(planned(new ScriptedSession(ctx.tokens), ["stall", "complete"], attaches), { ...COUNT, acceptanceTimeoutMs: 500 });
      await expectAllOnce(ctx, ITEMS);
      ensure(attaches.length >= 2, `${attaches.length} attach(es)`);
      ensureEqual(attaches[1]!, attaches[0]!, "the retried start");
      return "retried exactly after the stall";
    },
  },
  {
    name: "fresh-attempt-for-resume",
    ref: "§9, §5.2",
    expectation:
      "after an accepted start is cut, the client resumes with a fresh UUIDv4 attempt id and the session token of the acceptance",
    run: async (ctx) => {
      const attaches: Attach[] = [];
      await ctx.begin(planned(new ScriptedSession(ctx.tokens), ["accept-cut", "complete"], attaches), COUNT);
      await expectAllOnce(ctx, ITEMS);
      const [start, resume] = attaches;
      ensure(resume?.type === "resumeAttach", `the second attach is ${show(resume?.type)}, expected a resumeAttach`);
      ensure(resume.operation === "resume", `operation ${resume.operation}, expected resume`);
      ensure(resume.attemptId !== start!.attemptId, "the resume reuses the start's attempt id");
      ensure(UUID_V4.test(resume.attemptId), `attempt id ${resume.attemptId} is not a lower-case UUIDv4`);
      ensure(ctx.tokens.isSession(resume.sessionToken), "the resume's session token is not one the server issued");
      return `resume attempt ${resume.attemptId}`;
    },
  },
  {
    name: "exact-retry-of-resume",
    ref: "§5.2, §9",
    expectation: "a resume cut before any answer is retried exactly: same attempt id, session token and cursors",
    run: async (ctx) => {
      const attaches: Attach[] = [];
      await ctx.begin(planned(new ScriptedSession(ctx.tokens), ["accept-cut", "cut", "complete"], attaches), COUNT);
      await expectAllOnce(ctx, ITEMS);
      ensure(attaches.length >= 3, `${attaches.length} attaches`);
      ensure(attaches[1]!.type === "resumeAttach", `the second attach is ${attaches[1]!.type}`);
      ensureEqual(attaches[2]!, attaches[1]!, "the retried resume");
      return "resume retried exactly";
    },
  },
  {
    name: "refreshed-session-token",
    ref: "§6.1, §9, decisions §8",
    expectation: "each resume uses the session token of the latest acceptance (a resumed acceptance refreshes it) and a fresh attempt id",
    run: async (ctx) => {
      const attaches: Attach[] = [];
      const session = new ScriptedSession(ctx.tokens);
      await ctx.begin(planned(session, ["accept-cut", "accept-cut", "complete"], attaches), COUNT);
      await expectAllOnce(ctx, ITEMS);
      const [, first, second] = attaches;
      ensure(first?.type === "resumeAttach" && second?.type === "resumeAttach", `attaches ${show(attaches.map((a) => a.type))}`);
      ensure(first.sessionToken === session.sessionTokens[0], "the first resume does not carry the start's session token");
      ensure(
        second.sessionToken === session.sessionTokens[1],
        "the second resume does not carry the token the first resume's acceptance refreshed",
      );
      ensure(first.attemptId !== second.attemptId, "two resumes share an attempt id");
      return "the refreshed token used";
    },
  },
  {
    name: "fresh-start-after-retryable-rejection",
    ref: "§6.2, §3.2, §9",
    expectation:
      "a start rejected before acceptance with retryable true (overloaded) is followed by a new start with a fresh attempt id and fresh provisional references (they may be reused only for an exact retry); its inputs then flow normally",
    run: async (ctx) => {
      const session = new ScriptedSession(ctx.tokens);
      const input = session.input();
      const out = session.output();
      const starts: Extract<Attach, { type: "invocationStart" }>[] = [];
      let inputs: unknown[] = [];
      await ctx.begin(async (peer) => {
        const attach = await nextAttach(peer);
        if (attach.type !== "invocationStart")
          throw new Mismatch(`connection ${peer.index} began with ${attach.type}; no start was ever accepted`);
        starts.push(attach);
        if (peer.index === 1) {
          peer.send({ type: "invocationRejected", attemptId: attach.attemptId, code: "overloaded", message: "try again", retryable: true });
          return peer.close(1002);
        }
        session.accept(peer, attach, [input.mapping(1, 0, false, provisionalRefOf(attach))]);
        while (!peer.received.some((m) => m.type === "inputStreamEnd")) await peer.next("the input's end");
        inputs = peer.received.flatMap((m) => (m.type === "inputStreamItem" ? [m.value] : []));
        peer.send(input.ack(1, 2, true));
        finishWithEmptyOutput(peer, out, 2);
      }, REVERSE);
      ctx.adapter.send({ type: "feed", input: "in", items: [str("a"), str("b")] });
      ctx.adapter.send({ type: "endInput", input: "in" });
      ctx.adapter.send({ type: "read", stream: 0 });
      await ctx.finishedOk();
      const [first, second] = starts;
      ensure(first !== undefined && second !== undefined, `${starts.length} start(s)`);
      ensure(second.attemptId !== first.attemptId, "the new start reuses the rejected attempt id");
      ensure(provisionalRefOf(second) !== provisionalRefOf(first), "the new start reuses the rejected start's provisional reference");
      ensureEqual(inputs, [str("a"), str("b")], "input items after the new start");
      return "fresh attempt id and provisional reference";
    },
  },
]);
