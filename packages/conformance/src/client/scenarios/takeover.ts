/**
 * Takeover (protocol §6.8, §9, decisions §8): a `takeover` claims the session
 * from whoever holds it, and the replaced transport gets attachmentRevoked
 * (reason `replaced`). The replaced client stops for good — it reports the
 * revocation and never resumes over the taker — and a client that continues
 * from saved state claims the session with `takeover`, its saved session token
 * and delivered cursors, and a fresh attempt id.
 */
import type { ResumeAttach } from "@golem-stream/wire";
import { ensure, ensureEqual, show } from "../../check.js";
import type { AdapterProcess } from "../adapter-process.js";
import type { ClientContext } from "../context.js";
import type { ScriptedPeer } from "../scripted-server.js";
import { FINISHED, ScriptedSession, nextAttach, type ScriptedOutput } from "../session-script.js";
import { defineScenarios } from "../scenario.js";
import { COUNT, acceptWithResult, deliver, endOfStream, gate, sendToEnd } from "./common.js";

const TOTAL = 15;
const FIRST_CONNECTION = 10;

/**
 * What a server answers an attach after a takeover replaced its sender: the
 * sender's session token is of a superseded generation (decisions §8), which is definitive.
 */
function refuseAsSuperseded(peer: ScriptedPeer, attemptId: string): void {
  peer.send({
    type: "invocationRejected",
    attemptId,
    code: "superseded",
    message: "another attachment took this session over",
    retryable: false,
  });
  peer.close(1002);
}

/** Fails unless `adapter` reported the revocation and ended as `revoked`. */
async function expectRevoked(ctx: ClientContext, adapter: AdapterProcess): Promise<void> {
  const outcome = await ctx.outcome(adapter);
  ensure(
    outcome.type === "error" && outcome.category === "revoked",
    `the replaced client ended with ${show(outcome)}, expected an error of category revoked`,
  );
  ensure(
    adapter.events.some((e) => e.type === "revoked"),
    `the replaced client reported no revoked event; events: ${adapter.summary()}`,
  );
}

/** Items `from` … TOTAL-1, the end, the result again (decisions §8) and success, on `channel`. */
function sendRest(peer: ScriptedPeer, out: ScriptedOutput, channel: number, from: number): void {
  sendToEnd(peer, out, channel, from, TOTAL);
  peer.send(out.result(channel, true));
  peer.send(FINISHED);
}

export const takeoverScenarios = defineScenarios("takeover", [
  {
    name: "revoked-after-resume",
    ref: "§6.8, §9, decisions §8",
    expectation:
      "a connection whose resume was accepted (a fresh attempt, not a replay) and then revoked with reason replaced: another owner took over, so the client reports the revocation, fails as revoked and opens no further connection",
    run: async (ctx) => {
      const session = new ScriptedSession(ctx.tokens);
      const out = session.output();
      const cut = gate();
      const late: string[] = [];
      await ctx.begin(async (peer) => {
        const attach = await nextAttach(peer);
        if (peer.index === 1) {
          acceptWithResult(peer, attach, session, out);
          out.send(peer, 1, 0, 3);
          await cut.opened;
          return peer.cut();
        }
        if (peer.index === 2) {
          session.accept(peer, attach, [out.mapping(2)]);
          out.send(peer, 2, 3, 5);
          peer.send({ type: "attachmentRevoked", reason: "replaced" });
          return peer.close(1000);
        }
        late.push(`${attach.type} on connection ${peer.index}`);
        refuseAsSuperseded(peer, attach.attemptId);
      }, COUNT);
      await ctx.adapter.waitFor((e) => e.type === "result", "the result");
      await deliver(ctx, 2);
      cut.open();
      await expectRevoked(ctx, ctx.adapter);
      ensure(
        late.length === 0 && ctx.server.peers.length === 2,
        `after the revocation the client went on: ${show(late)} (${ctx.server.peers.length} connections)`,
      );
      return "revoked after a fresh resume, 2 connections";
    },
  },
  {
    name: "replaced-by-another-process",
    ref: "§6.8, §9, §13, decisions §8",
    expectation:
      "a second client process continues from the first one's saved state with a takeover (operation takeover, the saved session token, a cursor no further than what the first delivered, a fresh attempt id) and delivers the rest, each item once; the first, revoked with reason replaced, reports it, fails as revoked and never resumes over the taker",
    run: async (ctx) => {
      const session = new ScriptedSession(ctx.tokens);
      const out = session.output();
      let owner: ScriptedPeer | undefined;
      let takeover: ResumeAttach | undefined;
      let startAttempt = "";
      const late: string[] = [];
      await ctx.begin(
        async (peer) => {
          const attach = await nextAttach(peer);
          if (peer.index === 1) {
            owner = peer;
            startAttempt = attach.attemptId;
            acceptWithResult(peer, attach, session, out);
            out.send(peer, 1, 0, FIRST_CONNECTION);
            return;
          }
          if (attach.type !== "resumeAttach" || takeover !== undefined) {
            late.push(`${attach.type} on connection ${peer.index}`);
            return refuseAsSuperseded(peer, attach.attemptId);
          }
          takeover = attach;
          const from = out.resumeFrom(attach);
          session.accept(peer, attach, from === "ended" ? [] : [out.mapping(2)]);
          // The taker holds the session now: the owner's transport is revoked and closed (§6.8).
          owner?.send({ type: "attachmentRevoked", reason: "replaced" });
          owner?.close(1000);
          if (from !== "ended") sendRest(peer, out, 2, from);
          else peer.send(FINISHED);
        },
        { ...COUNT, checkpoints: true },
      );
      await ctx.adapter.waitFor((e) => e.type === "result", "the result");
      await deliver(ctx, 4);
      const taker = await ctx.continueIn("takeover", ctx.latestCheckpoint());
      taker.send({ type: "read", stream: 0 });
      await ctx.finishedOk(taker);
      await endOfStream(taker);
      await expectRevoked(ctx, ctx.adapter);
      const attach = takeover!;
      ensure(attach.operation === "takeover", `the second process attached with operation ${attach.operation}, expected takeover`);
      ensure(attach.sessionToken === session.sessionTokens[0], "the takeover does not carry the session token the first process saved");
      ensure(attach.attemptId !== startAttempt, "the takeover reuses the start's attempt id; a new operation needs a fresh one (§9)");
      const cursor = out.cursorIn(attach);
      ensure(
        cursor !== undefined && cursor.event === "item" && cursor.position <= 3,
        `the takeover's cursor names ${show(cursor)}; the first process had delivered items 0-3 and saved its state after delivering`,
      );
      const first = ctx.numbers(0);
      const second = ctx.numbers(0, taker);
      ensureEqual(
        second,
        Array.from({ length: TOTAL - cursor.position - 1 }, (_, i) => cursor.position + 1 + i),
        "items the second process received",
      );
      ensure(first.length >= cursor.position + 1, `the first process delivered ${show(first)}, less than its saved cursor`);
      ensure(late.length === 0, `after the takeover: ${show(late)}`);
      return `takeover from item ${cursor.position}; the first process revoked, no resume over the taker`;
    },
  },
]);
