/**
 * Restart from saved state (protocol §13, §9, decisions §8): a client process
 * that crashed is replaced by a fresh one that continues from the last state
 * the first persisted. Output resumes from the delivered cursors (a crash may
 * replay, never skip); a start whose outcome was unknown when the state was
 * saved is retried exactly; an input whose source stayed behind is cancelled
 * as source-unavailable, never resent from nothing.
 */
import type { ClientMessage, InvocationStart, ResumeAttach } from "@golem-stream/wire";
import { ensure, ensureEqual, show } from "../../check.js";
import { FINISHED, ScriptedSession, nextAttach, provisionalRefOf, inputsOn } from "../session-script.js";
import { defineScenarios } from "../scenario.js";
import { COUNT, REVERSE, acceptWithResult, deliver, endOfStream, gate, sendToEnd, str } from "./common.js";

const TOTAL = 15;
const FIRST_CONNECTION = 10;

export const restartScenarios = defineScenarios("restart", [
  {
    name: "resume-from-checkpoint",
    ref: "§13, §9, §6.4",
    expectation:
      "after the client process crashed having delivered items 0-3, a fresh process resumes from its last saved state: the session token it saved and a cursor no further than item 3 (persisted after delivery); the server replays from there and the new process delivers the rest, each item once",
    run: async (ctx) => {
      const session = new ScriptedSession(ctx.tokens);
      const out = session.output();
      let resume: ResumeAttach | undefined;
      const late: string[] = [];
      await ctx.begin(
        async (peer) => {
          const attach = await nextAttach(peer);
          if (peer.index === 1) {
            acceptWithResult(peer, attach, session, out);
            out.send(peer, 1, 0, FIRST_CONNECTION);
            return;
          }
          if (attach.type !== "resumeAttach" || resume !== undefined) {
            late.push(`${attach.type} on connection ${peer.index}`);
            return peer.cut();
          }
          resume = attach;
          const from = out.resumeFrom(attach);
          session.accept(peer, attach, from === "ended" ? [] : [out.mapping(2)]);
          if (from !== "ended") sendToEnd(peer, out, 2, from, TOTAL);
          peer.send(out.result(2, true));
          peer.send(FINISHED);
        },
        { ...COUNT, checkpoints: true },
      );
      await ctx.adapter.waitFor((e) => e.type === "result", "the result");
      await deliver(ctx, 4);
      const saved = ctx.latestCheckpoint();
      await ctx.adapter.kill();
      const restarted = await ctx.continueIn("resume", saved);
      restarted.send({ type: "read", stream: 0 });
      await ctx.finishedOk(restarted);
      await endOfStream(restarted);
      const attach = resume!;
      ensure(attach.operation === "resume", `the restarted process attached with operation ${attach.operation}, expected resume`);
      ensure(attach.sessionToken === session.sessionTokens[0], "the resume does not carry the saved session token");
      const cursor = out.cursorIn(attach);
      ensure(
        cursor !== undefined && cursor.event === "item" && cursor.position <= 3,
        `the resume's cursor names ${show(cursor)}; the crashed process had delivered items 0-3`,
      );
      ensureEqual(
        ctx.numbers(0, restarted),
        Array.from({ length: TOTAL - cursor.position - 1 }, (_, i) => cursor.position + 1 + i),
        "items the restarted process received",
      );
      ensure(late.length === 0, `unexpected attaches: ${show(late)}`);
      return `resumed after a crash from item ${cursor.position}`;
    },
  },
  {
    name: "pending-start-exact-retry",
    ref: "§9, §13",
    expectation:
      "a process that crashed after sending its start but before any answer saved the frozen start; the fresh process continuing from that state sends the identical invocationStart (same attempt id, same provisional references), and the invocation completes",
    run: async (ctx) => {
      const session = new ScriptedSession(ctx.tokens);
      const out = session.output();
      const starts: InvocationStart[] = [];
      const sent = gate();
      const crashed = gate();
      await ctx.begin(
        async (peer) => {
          const attach = await nextAttach(peer);
          if (attach.type === "invocationStart") starts.push(attach);
          if (peer.index === 1) {
            sent.open();
            // No answer: the outcome stays unknown to the client, then it crashes.
            await crashed.opened;
            return peer.cut();
          }
          acceptWithResult(peer, attach, session, out);
          sendToEnd(peer, out, 1, 0, TOTAL);
          peer.send(FINISHED);
        },
        { ...COUNT, checkpoints: true },
      );
      await sent.opened;
      await ctx.adapter.waitFor((e) => e.type === "checkpoint", "a checkpoint of the pending start");
      const saved = ctx.latestCheckpoint();
      await ctx.adapter.kill();
      crashed.open();
      const restarted = await ctx.continueIn("takeover", saved);
      restarted.send({ type: "read", stream: 0 });
      await ctx.finishedOk(restarted);
      await endOfStream(restarted);
      ensureEqual(
        ctx.numbers(0, restarted),
        Array.from({ length: TOTAL }, (_, i) => i),
        "items the restarted process received",
      );
      ensure(
        starts.length >= 2,
        `the restarted process began with ${show(ctx.server.peers[1]?.received[0]?.type)}, expected the pending start`,
      );
      ensureEqual(starts[1], starts[0], "the start the restarted process sent");
      return "the identical start, retried from saved state";
    },
  },
  {
    name: "input-source-left-behind",
    ref: "§13, §9, docs/protocol/client.md",
    expectation:
      "after a crash, a process continuing from saved state has no source for an input stream the server reports open (high-water 2, not terminal): it sends no input item for it and cancels it with streamCancel source-unavailable",
    run: async (ctx) => {
      const session = new ScriptedSession(ctx.tokens);
      const input = session.input();
      const out = session.output();
      const acked = gate();
      let second: ClientMessage[] = [];
      let reason: string | undefined;
      await ctx.begin(
        async (peer) => {
          const attach = await nextAttach(peer);
          if (peer.index === 1) {
            if (attach.type !== "invocationStart") return peer.cut();
            session.accept(peer, attach, [input.mapping(1, 0, false, provisionalRefOf(attach)), out.mapping(2)]);
            peer.send(out.result(2, true));
            while (inputsOn(peer.received, 1).length < 2) await peer.next("two input items");
            peer.send(input.ack(1, 2));
            acked.open();
            return;
          }
          session.accept(peer, attach, [input.mapping(3, 2), out.mapping(4)]);
          const cancel = await peer.nextOf("streamCancel", "a streamCancel of the input left behind");
          reason = cancel.channel === 3 ? cancel.reason : `on channel ${cancel.channel}`;
          peer.send(input.ack(3, 2, true));
          peer.send(out.end(4, 0));
          peer.send(out.result(4, true));
          peer.send(FINISHED);
          second = peer.received;
        },
        { ...REVERSE, checkpoints: true },
      );
      ctx.adapter.send({ type: "feed", input: "in", items: [str("a"), str("b")] });
      await acked.opened;
      // The acceptance is saved before anything else happens on the connection.
      await ctx.adapter.waitFor(
        (e) => e.type === "checkpoint" && (e.state as { sessionToken?: unknown }).sessionToken !== undefined,
        "a checkpoint after acceptance",
      );
      const saved = ctx.latestCheckpoint();
      await ctx.adapter.kill();
      const restarted = await ctx.continueIn("takeover", saved);
      restarted.send({ type: "read", stream: 0 });
      await ctx.finishedOk(restarted);
      await endOfStream(restarted);
      ensure(
        reason === "source-unavailable",
        `the server saw streamCancel ${show(reason)}, expected reason source-unavailable on the input's channel 3`,
      );
      const resent = inputsOn(second, 3);
      ensure(resent.length === 0, `the restarted process sent input it has no source for: ${show(resent)}`);
      return "input cancelled as source-unavailable";
    },
  },
]);
