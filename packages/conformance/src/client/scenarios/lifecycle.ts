/**
 * Revocation, rejection, cancellation, stream and invocation failures, quiet
 * servers and lost ones (protocol §6.1, §6.2, §6.5, §6.8, §6.9, §5.5, §11,
 * decisions §8): each reported with its public code, retried only when the
 * protocol says it may be.
 */
import { ensure, ensureEqual, show } from "../../check.js";
import type { ScriptedPeer } from "../scripted-server.js";
import { FINISHED, ScriptedSession, nextAttach, type Attach, type ScriptedOutput } from "../session-script.js";
import { defineScenarios } from "../scenario.js";
import { COUNT, acceptWithResult, beginAccepted, expectAllOnce, gate, sendToEnd } from "./common.js";

const ITEMS = 3;

/** Accepts a resume with the output on channel 1 (the result only repeats it) and completes the invocation: items 0-2, the end, success. */
function completeResumed(peer: ScriptedPeer, resume: Attach, session: ScriptedSession, out: ScriptedOutput): void {
  session.accept(peer, resume, [out.mapping(1)]);
  peer.send(out.result(1, true));
  sendToEnd(peer, out, 1, 0, ITEMS);
  peer.send(FINISHED);
}

export const lifecycleScenarios = defineScenarios("lifecycle", [
  {
    name: "revoked",
    ref: "§6.8, decisions §8",
    expectation:
      "attachmentRevoked on an accepted connection (another owner took over): the client reports the revocation, fails the invocation as revoked and does not reconnect",
    run: async (ctx) => {
      await beginAccepted(ctx, (peer, out) => {
        peer.send(out.item(1, 0));
        peer.send({ type: "attachmentRevoked", reason: "replaced" });
        peer.close(1000);
      });
      const outcome = await ctx.outcome();
      ensure(outcome.type === "error" && outcome.category === "revoked", `outcome ${show(outcome)}, expected an error of category revoked`);
      ensure(
        ctx.adapter.events.some((e) => e.type === "revoked"),
        "no revoked event",
      );
      ensure(ctx.server.peers.length === 1, `the client opened ${ctx.server.peers.length} connections after being replaced`);
      return "revoked, no reconnect";
    },
  },
  {
    name: "revoked-after-replayed-acceptance",
    ref: "§6.1, §9",
    expectation:
      "an exact retry answered by the committed acceptance and then attachmentRevoked: the client starts a new resume with a fresh attempt id and the replayed session token, and completes",
    run: async (ctx) => {
      const session = new ScriptedSession(ctx.tokens);
      const out = session.output();
      const attemptIds: string[] = [];
      await ctx.begin(async (peer) => {
        const attach = await nextAttach(peer);
        attemptIds.push(attach.attemptId);
        if (peer.index === 1) return peer.cut();
        if (peer.index === 2) {
          session.accept(peer, attach);
          peer.send({ type: "attachmentRevoked", reason: "replaced" });
          return peer.close(1000);
        }
        ensure(attach.type === "resumeAttach", `connection ${peer.index} began with ${attach.type}, expected a resumeAttach`);
        ensure(attach.sessionToken === session.sessionTokens[0], "the resume does not carry the replayed acceptance's session token");
        completeResumed(peer, attach, session, out);
      }, COUNT);
      await expectAllOnce(ctx, ITEMS);
      ensure(
        attemptIds.length === 3 && attemptIds[0] === attemptIds[1] && attemptIds[2] !== attemptIds[1],
        `attempt ids ${show(attemptIds)}: expected the start twice, then a fresh one`,
      );
      return "resumed with a fresh attempt";
    },
  },
  {
    name: "retryable-rejection-after-acceptance",
    ref: "§6.2, §9",
    expectation:
      "a retryable invocationRejected after acceptance (then close 1002) leads to a new resume with a fresh attempt id, and the invocation completes",
    run: async (ctx) => {
      const session = new ScriptedSession(ctx.tokens);
      const out = session.output();
      const attemptIds: string[] = [];
      await ctx.begin(async (peer) => {
        const attach = await nextAttach(peer);
        attemptIds.push(attach.attemptId);
        if (peer.index === 1) {
          acceptWithResult(peer, attach, session, out);
          peer.send({ type: "invocationRejected", attemptId: attach.attemptId, code: "overloaded", message: "try again", retryable: true });
          return peer.close(1002);
        }
        const resume = await Promise.resolve(attach);
        ensure(resume.type === "resumeAttach", `connection ${peer.index} began with ${resume.type}`);
        completeResumed(peer, resume, session, out);
      }, COUNT);
      await expectAllOnce(ctx, ITEMS);
      ensure(new Set(attemptIds).size === attemptIds.length, `attempt ids ${show(attemptIds)}: a rejected attempt is never resent`);
      return `${attemptIds.length} attaches`;
    },
  },
  {
    name: "definitive-rejection",
    ref: "§6.2, §11",
    expectation:
      "a non-retryable invocationRejected before acceptance fails the invocation as rejected with the server's code (forbidden), without a retry",
    run: async (ctx) => {
      await ctx.begin(async (peer) => {
        const attach = await nextAttach(peer);
        peer.send({ type: "invocationRejected", attemptId: attach.attemptId, code: "forbidden", message: "no", retryable: false });
        peer.close(1002);
      }, COUNT);
      const outcome = await ctx.outcome();
      ensure(
        outcome.type === "error" && outcome.category === "rejected" && outcome.code === "forbidden",
        `outcome ${show(outcome)}, expected rejected/forbidden`,
      );
      ensure(ctx.server.peers.length === 1, `${ctx.server.peers.length} connections: a definitive rejection is not retried`);
      return "rejected with forbidden";
    },
  },
  {
    name: "stream-error-end",
    ref: "§6.5, §8",
    expectation:
      "an output stream ending with an error outcome is reported on that stream with its code (producer-error); the invocation still finishes",
    run: async (ctx) => {
      await beginAccepted(ctx, (peer, out) => {
        peer.send(out.item(1, 0));
        peer.send(out.end(1, 1, { kind: "error", code: "producer-error", message: "producer failed" }));
        peer.send(FINISHED);
      });
      ctx.adapter.send({ type: "read", stream: 0 });
      const end = await ctx.adapter.waitFor((e) => e.type === "streamEnd", "the stream's end");
      ensure(end.type === "streamEnd" && end.outcome.kind === "error" && end.outcome.code === "producer-error", `stream end ${show(end)}`);
      await ctx.finishedOk();
      return "stream error producer-error, invocation finished";
    },
  },
  {
    name: "invocation-failure",
    ref: "§6.9, §11",
    expectation: "invocationFinished with a failure outcome fails the invocation as invocation-failed with the outcome's code",
    run: async (ctx) => {
      await beginAccepted(ctx, (peer, out) => {
        peer.send(out.end(1, 0, { kind: "cancelled", reason: "invocation-failed" }));
        peer.send({ type: "invocationFinished", outcome: { kind: "failure", code: "invocation-failed", message: "agent trapped" } });
      });
      const outcome = await ctx.outcome();
      ensure(
        outcome.type === "error" && outcome.category === "invocation-failed" && outcome.code === "invocation-failed",
        `outcome ${show(outcome)}`,
      );
      return "invocation-failed";
    },
  },
  {
    name: "cancel",
    ref: "§5.5, decisions §8",
    expectation:
      "cancelling the invocation sends streamCancel with reason cancelled for the open output stream, and reports the cancellation delivered once the server ends it",
    run: async (ctx) => {
      let reason: string | undefined;
      const seen = gate();
      await beginAccepted(ctx, async (peer, out) => {
        peer.send(out.item(1, 0));
        const cancel = await peer.nextOf("streamCancel", "a streamCancel");
        reason = cancel.channel === 1 ? cancel.reason : `on channel ${cancel.channel}`;
        seen.open();
        peer.send(out.end(1, 1, { kind: "cancelled", reason: cancel.reason }));
        peer.send(FINISHED);
        peer.close(1000);
      });
      await ctx.adapter.waitFor((e) => e.type === "result", "the result");
      ctx.adapter.send({ type: "cancel", reason: "cancelled" });
      const answer = await ctx.adapter.waitFor((e) => e.type === "cancelled", "the answer to cancel");
      await seen.opened;
      ensure(reason === "cancelled", `the server saw streamCancel ${show(reason)}, expected reason cancelled on channel 1`);
      ensure(answer.type === "cancelled" && answer.delivered, `cancel answered ${show(answer)}`);
      return "streamCancel cancelled, delivered";
    },
  },
  {
    name: "quiet-accepted-connection",
    ref: "§1, §9",
    expectation:
      "an accepted connection on which the server stays silent for 1.5 s is kept (there is no idle timeout in the protocol), and the invocation completes on it",
    run: async (ctx) => {
      const session = new ScriptedSession(ctx.tokens);
      const out = session.output();
      await ctx.begin(async (peer) => {
        session.accept(peer, await nextAttach(peer));
        await ctx.sleep(1500);
        if (peer.isClosed) return;
        peer.send(out.result(1));
        sendToEnd(peer, out, 1, 0, ITEMS);
        peer.send(FINISHED);
      }, COUNT);
      await expectAllOnce(ctx, ITEMS);
      ensure(ctx.server.peers.length === 1, `${ctx.server.peers.length} connections for one quiet one`);
      return "one connection";
    },
  },
  {
    name: "lost-server",
    ref: "§9, §11",
    expectation:
      "a server that cuts every connection before answering: the client retries the exact start a bounded number of times (5 without progress here), then fails as connection-lost",
    run: async (ctx) => {
      const starts: Attach[] = [];
      await ctx.begin(
        async (peer) => {
          const attach = await nextAttach(peer);
          starts.push(attach);
          peer.cut();
        },
        { ...COUNT, maxReconnectAttempts: 5 },
      );
      const outcome = await ctx.outcome();
      ensure(outcome.type === "error" && outcome.category === "connection-lost", `outcome ${show(outcome)}, expected connection-lost`);
      ensure(ctx.server.peers.length <= 6, `${ctx.server.peers.length} connections for 5 retries`);
      for (const retry of starts.slice(1)) ensureEqual(retry, starts[0], "a retried start");
      return `${ctx.server.peers.length} connections, then connection-lost`;
    },
  },
]);
