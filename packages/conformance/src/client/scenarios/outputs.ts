/**
 * Output delivery (protocol §6.4, §6.5, §9): never skip, never deliver twice
 * within a process, and retain a cursor only after the application has the
 * item, so that a resume asks again for everything not yet delivered.
 */
import type { ResumeAttach } from "@golem-stream/wire";
import { ensure, show } from "../../check.js";
import type { ClientContext } from "../context.js";
import type { Script } from "../scripted-server.js";
import { FINISHED, ScriptedSession, nextAttach, type ScriptedOutput } from "../session-script.js";
import { defineScenarios } from "../scenario.js";
import { COUNT, deliver, expectAllOnce, gate, type Gate } from "./common.js";

const TOTAL = 15;
const FIRST_CONNECTION = 10;

interface CutAndResume {
  readonly script: Script;
  readonly out: ScriptedOutput;
  readonly cut: Gate;
  readonly resumes: ResumeAttach[];
}

/**
 * The shape most output scenarios share: connection 1 sends items 0-9, waits
 * at `cut` and vanishes; every later connection accepts the resume, sends the
 * range `replay` picks from the sequence the cursors ask for, then 10-14, the
 * end, the result again (decisions §8) and success.
 */
function cutAndResume(ctx: ClientContext, replay: (from: number | "ended") => readonly [number, number] | undefined = (from) => (from === "ended" ? undefined : [from, FIRST_CONNECTION])): CutAndResume {
  const session = new ScriptedSession(ctx.tokens);
  const out = session.output();
  const cut = gate();
  const resumes: ResumeAttach[] = [];
  const script: Script = async (peer) => {
    const attach = await nextAttach(peer);
    if (attach.type === "invocationStart") {
      session.accept(peer, attach);
      peer.send(out.result(1));
      out.send(peer, 1, 0, FIRST_CONNECTION);
      await cut.opened;
      peer.cut();
      return;
    }
    resumes.push(attach);
    const range = replay(out.resumeFrom(attach));
    session.accept(peer, attach, [out.mapping(2)]);
    if (range !== undefined) out.send(peer, 2, range[0], range[1]);
    out.send(peer, 2, FIRST_CONNECTION, TOTAL);
    peer.send(out.end(2, TOTAL));
    peer.send(out.result(2, true));
    peer.send(FINISHED);
  };
  return { script, out, cut, resumes };
}

/** Delivers `delivered` items, cuts, waits for the resume, reads the rest: every item once. */
async function deliverCutResume(ctx: ClientContext, plan: CutAndResume, delivered: number): Promise<ResumeAttach> {
  await ctx.begin(plan.script, COUNT);
  await ctx.adapter.waitFor((e) => e.type === "result", "the result");
  if (delivered > 0) await deliver(ctx, delivered);
  plan.cut.open();
  await ctx.server.connections(2, "a resume after the cut");
  await expectAllOnce(ctx, TOTAL);
  return plan.resumes[0]!;
}

export const outputScenarios = defineScenarios("outputs", [
  {
    name: "in-order-once",
    ref: "§6.4, §8",
    expectation: "items of one stream reach the application in sequence order, each once, then the stream's end (ok) and the invocation's success",
    run: async (ctx) => {
      const session = new ScriptedSession(ctx.tokens);
      const out = session.output();
      await ctx.begin(async (peer) => {
        session.accept(peer, await nextAttach(peer));
        peer.send(out.result(1));
        out.send(peer, 1, 0, TOTAL);
        peer.send(out.end(1, TOTAL));
        peer.send(FINISHED);
      }, COUNT);
      await expectAllOnce(ctx, TOTAL);
      const end = await ctx.adapter.waitFor((e) => e.type === "streamEnd", "streamEnd");
      ensure(end.type === "streamEnd" && end.outcome.kind === "ok", `stream end ${show(end)}, expected ok`);
      return `${TOTAL} items once, in order`;
    },
  },
  {
    name: "cursor-after-delivery",
    ref: "§6.4, §9",
    expectation: "after a cut, the resume's cursor names at most the last item the application received: the cursor advances on delivery, not on receipt; then every item arrives once",
    run: async (ctx) => {
      const plan = cutAndResume(ctx);
      const resume = await deliverCutResume(ctx, plan, 3);
      const cursor = plan.out.cursorIn(resume);
      ensure(cursor === undefined || (cursor.event === "item" && cursor.position <= 2), `the resume's cursor names ${show(cursor)}; the application had received items 0-2 only (items 0-9 had arrived)`);
      return cursor === undefined ? "no cursor (replay from the start)" : `resume cursor at item ${cursor.position} after items 0-2 were delivered`;
    },
  },
  {
    name: "no-cursor-before-delivery",
    ref: "§6.4, §9",
    expectation: "a client that received items but delivered none resumes without a cursor for that stream, and the application then sees every item once",
    run: async (ctx) => {
      const plan = cutAndResume(ctx);
      const resume = await deliverCutResume(ctx, plan, 0);
      const cursor = plan.out.cursorIn(resume);
      ensure(cursor === undefined, `the resume carries a cursor at ${show(cursor)} although the application had not received any item`);
      return "no cursor; every item once";
    },
  },
  {
    name: "replay-below-cursor",
    ref: "§9, decisions §8",
    expectation: "a resumed server that replays items at and below the client's cursor (from sequence 0) causes no duplicate: the application sees every item once",
    run: async (ctx) => {
      await deliverCutResume(ctx, cutAndResume(ctx, () => [0, FIRST_CONNECTION]), 3);
      return "replay from 0 de-duplicated";
    },
  },
  {
    name: "replay-of-cursor-item",
    ref: "§9",
    expectation: "a resumed server that sends the item the cursor names once more (the at-least-once boundary) causes no duplicate within the process",
    run: async (ctx) => {
      await deliverCutResume(ctx, cutAndResume(ctx, (from) => (from === "ended" ? undefined : [Math.max(0, from - 1), FIRST_CONNECTION])), 3);
      return "the item at the cursor de-duplicated";
    },
  },
  {
    name: "replay-of-received-undelivered",
    ref: "§9",
    expectation: "items received but not yet delivered before a cut and replayed after it reach the application once",
    run: async (ctx) => {
      await deliverCutResume(ctx, cutAndResume(ctx), 8);
      return "every item once after delivering 8 of 10 received";
    },
  },
  {
    name: "terminal-replay",
    ref: "§6.5",
    expectation: "a cut after the stream's end but before invocationFinished: whether the resume names the last item (the terminal is replayed) or the terminal (it is not), the application sees one end and every item once",
    run: async (ctx) => {
      const session = new ScriptedSession(ctx.tokens);
      const out = session.output();
      const cut = gate();
      let resume: ResumeAttach | undefined;
      await ctx.begin(async (peer) => {
        const attach = await nextAttach(peer);
        if (attach.type === "invocationStart") {
          session.accept(peer, attach);
          peer.send(out.result(1));
          out.send(peer, 1, 0, TOTAL);
          peer.send(out.end(1, TOTAL));
          await cut.opened;
          peer.cut();
          return;
        }
        resume = attach;
        const from = out.resumeFrom(attach);
        session.accept(peer, attach, from === "ended" ? [] : [out.mapping(2)]);
        if (from !== "ended") {
          out.send(peer, 2, from, TOTAL);
          peer.send(out.end(2, TOTAL));
        }
        peer.send(out.result(2, from !== "ended"));
        peer.send(FINISHED);
      }, COUNT);
      ctx.adapter.send({ type: "read", stream: 0 });
      await ctx.adapter.waitFor((e) => e.type === "streamEnd", "the stream's end");
      cut.open();
      await ctx.finishedOk();
      const ends = ctx.adapter.events.filter((e) => e.type === "streamEnd").length;
      ensure(ends === 1, `the application saw ${ends} ends of one stream`);
      ensure(JSON.stringify(ctx.numbers(0)) === JSON.stringify(Array.from({ length: TOTAL }, (_, i) => i)), `items ${show(ctx.numbers(0))}`);
      const cursor = resume === undefined ? undefined : out.cursorIn(resume);
      return resume === undefined ? "finished before any resume was needed" : `resumed with ${show(cursor)}; one end`;
    },
  },
]);
