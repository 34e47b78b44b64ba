/**
 * Output delivery (protocol §6.4, §6.5, §9): never skip, never deliver twice
 * within a process, and retain a cursor only after the application has the
 * item, so that a resume asks again for everything not yet delivered.
 *
 * Why one file: one section's scenarios, each a few lines over the shared cut-and-resume script
 * above; the other sections each have a file of their own.
 */
import type { ResumeAttach, ServerMessage } from "@golem-stream/wire";
import { ensure, ensureEqual, Mismatch, show } from "../../check.js";
import type { ClientContext } from "../context.js";
import type { Script } from "../scripted-server.js";
import type { CursorPosition } from "../script-tokens.js";
import { FINISHED, ScriptedSession, nextAttach, type ScriptedOutput } from "../session-script.js";
import { defineScenarios } from "../scenario.js";
import {
  COUNT,
  SPLIT,
  acceptWithResult,
  beginAccepted,
  deliver,
  expectAllOnce,
  gate,
  hex,
  okEnd,
  outputStream,
  receivedHex,
  resultGraphOf,
  sendToEnd,
  splitResult,
  u8Batch,
  type Gate,
} from "./common.js";

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
function cutAndResume(
  ctx: ClientContext,
  replay: (from: number | "ended") => readonly [number, number] | undefined = (from) =>
    from === "ended" ? undefined : [from, FIRST_CONNECTION],
): CutAndResume {
  const session = new ScriptedSession(ctx.tokens);
  const out = session.output();
  const cut = gate();
  const resumes: ResumeAttach[] = [];
  const script: Script = async (peer) => {
    const attach = await nextAttach(peer);
    if (attach.type === "invocationStart") {
      acceptWithResult(peer, attach, session, out);
      out.send(peer, 1, 0, FIRST_CONNECTION);
      await cut.opened;
      peer.cut();
      return;
    }
    resumes.push(attach);
    const range = replay(out.resumeFrom(attach));
    session.accept(peer, attach, [out.mapping(2)]);
    if (range !== undefined) out.send(peer, 2, range[0], range[1]);
    sendToEnd(peer, out, 2, FIRST_CONNECTION, TOTAL);
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
    expectation:
      "items of one stream reach the application in sequence order, each once, then the stream's end (ok) and the invocation's success",
    run: async (ctx) => {
      await beginAccepted(ctx, (peer, out) => {
        sendToEnd(peer, out, 1, 0, TOTAL);
        peer.send(FINISHED);
      });
      await expectAllOnce(ctx, TOTAL);
      const end = await ctx.adapter.waitFor((e) => e.type === "streamEnd", "streamEnd");
      ensure(end.type === "streamEnd" && end.outcome.kind === "ok", `stream end ${show(end)}, expected ok`);
      return `${TOTAL} items once, in order`;
    },
  },
  {
    name: "cursor-after-delivery",
    ref: "§6.4, §9",
    expectation:
      "after a cut, the resume's cursor names at most the last item the application received: the cursor advances on delivery, not on receipt; then every item arrives once",
    run: async (ctx) => {
      const plan = cutAndResume(ctx);
      const resume = await deliverCutResume(ctx, plan, 3);
      const cursor = plan.out.cursorIn(resume);
      ensure(
        cursor === undefined || (cursor.event === "item" && cursor.position <= 2),
        `the resume's cursor names ${show(cursor)}; the application had received items 0-2 only (items 0-9 had arrived)`,
      );
      return cursor === undefined
        ? "no cursor (replay from the start)"
        : `resume cursor at item ${cursor.position} after items 0-2 were delivered`;
    },
  },
  {
    name: "no-cursor-before-delivery",
    ref: "§6.4, §9",
    expectation:
      "a client that received items but delivered none resumes without a cursor for that stream, and the application then sees every item once",
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
    expectation:
      "a resumed server that replays items at and below the client's cursor (from sequence 0) causes no duplicate: the application sees every item once",
    run: async (ctx) => {
      await deliverCutResume(
        ctx,
        cutAndResume(ctx, () => [0, FIRST_CONNECTION]),
        3,
      );
      return "replay from 0 de-duplicated";
    },
  },
  {
    name: "replay-of-cursor-item",
    ref: "§9",
    expectation:
      "a resumed server that sends the item the cursor names once more (the at-least-once boundary) causes no duplicate within the process",
    run: async (ctx) => {
      await deliverCutResume(
        ctx,
        cutAndResume(ctx, (from) => (from === "ended" ? undefined : [Math.max(0, from - 1), FIRST_CONNECTION])),
        3,
      );
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
    expectation:
      "a cut after the stream's end but before invocationFinished: whether the resume names the last item (the terminal is replayed) or the terminal (it is not), the application sees one end and every item once",
    run: async (ctx) => {
      const session = new ScriptedSession(ctx.tokens);
      const out = session.output();
      const cut = gate();
      let resume: ResumeAttach | undefined;
      await ctx.begin(async (peer) => {
        const attach = await nextAttach(peer);
        if (attach.type === "invocationStart") {
          acceptWithResult(peer, attach, session, out);
          sendToEnd(peer, out, 1, 0, TOTAL);
          await cut.opened;
          peer.cut();
          return;
        }
        resume = attach;
        const from = out.resumeFrom(attach);
        session.accept(peer, attach, from === "ended" ? [] : [out.mapping(2)]);
        if (from !== "ended") sendToEnd(peer, out, 2, from, TOTAL);
        peer.send(out.result(2, from !== "ended"));
        peer.send(FINISHED);
      }, COUNT);
      ctx.adapter.send({ type: "read", stream: 0 });
      await ctx.adapter.waitFor((e) => e.type === "streamEnd", "the stream's end");
      cut.open();
      await ctx.finishedOk();
      const ends = ctx.adapter.events.filter((e) => e.type === "streamEnd").length;
      ensure(ends === 1, `the application saw ${ends} ends of one stream`);
      ensure(
        JSON.stringify(ctx.numbers(0)) === JSON.stringify(Array.from({ length: TOTAL }, (_, i) => i)),
        `items ${show(ctx.numbers(0))}`,
      );
      const cursor = resume === undefined ? undefined : out.cursorIn(resume);
      return resume === undefined ? "finished before any resume was needed" : `resumed with ${show(cursor)}; one end`;
    },
  },
  {
    name: "cross-stream-order",
    ref: "§8, decisions §8",
    expectation:
      "items of two streams interleaved in any order, one stream ending first, and after a cut the streams announced by the replayed result instead of the acceptance: each stream's items reach the application in order, once, with one end each",
    run: async (ctx) => {
      const session = new ScriptedSession(ctx.tokens);
      const upper = outputStream(ctx.tokens);
      const lines = outputStream(ctx.tokens);
      const result = (upperChannel: number | undefined, linesChannel: number | undefined): ServerMessage =>
        splitResult(upper.token, lines.token, [
          ...(upperChannel === undefined ? [] : [{ channel: upperChannel, direction: "output" as const, streamToken: upper.token }]),
          ...(linesChannel === undefined ? [] : [{ channel: linesChannel, direction: "output" as const, streamToken: lines.token }]),
        ]);
      const batch = (channel: number, from: number, to: number): ServerMessage => u8Batch(ctx.tokens, upper.id, channel, from, to);
      const line = (channel: number, n: number): ServerMessage => ({
        type: "outputStreamItem",
        channel,
        cursorToken: ctx.tokens.cursor(lines.id, BigInt(n), "item"),
        mappings: [],
        sequence: BigInt(n),
        value: { kind: "string", value: `line ${n}` },
      });
      const linesEnd = (channel: number): ServerMessage => okEnd(ctx.tokens, lines.id, channel, 3);
      const cut = gate();
      await ctx.begin(async (peer) => {
        const attach = await nextAttach(peer);
        if (attach.type === "invocationStart") {
          session.accept(peer, attach);
          peer.send(result(1, 2));
          peer.send(line(2, 0));
          peer.send(batch(1, 0, 2));
          peer.send(line(2, 1));
          peer.send(line(2, 2));
          peer.send(linesEnd(2));
          peer.send(batch(1, 2, 4));
          await cut.opened;
          return peer.cut();
        }
        if (attach.type !== "resumeAttach") throw new Mismatch(`connection ${peer.index} began with a start`);
        const cursors = attach.outputCursors.map((c) => ctx.tokens.readCursor(c));
        const upperCursor = cursors.find((c) => c.streamId === upper.id);
        const linesCursor = cursors.find((c) => c.streamId === lines.id);
        const linesDone = linesCursor?.event === "terminal";
        session.accept(peer, attach, []);
        // Announced by the replayed result (decisions §8), lines only if it has events after its cursor.
        peer.send(result(7, linesDone ? undefined : 5));
        peer.send(batch(7, upperCursor === undefined ? 0 : Number(upperCursor.position) + 1, 6));
        if (!linesDone) {
          for (let n = linesCursor === undefined ? 0 : Number(linesCursor.position) + 1; n < 3; n++) peer.send(line(5, n));
          peer.send(linesEnd(5));
        }
        peer.send(okEnd(ctx.tokens, upper.id, 7, 6));
        peer.send(FINISHED);
      }, SPLIT);
      ctx.adapter.send({ type: "endInput", input: "data" });
      await ctx.adapter.waitFor((e) => e.type === "result", "the result");
      ctx.adapter.send({ type: "read", stream: 1, count: 2 });
      ctx.adapter.send({ type: "read", stream: 0, count: 1 });
      await ctx.adapter.waitFor((e) => e.type === "readDone" && e.stream === 1, "delivery of two lines");
      await ctx.adapter.waitFor((e) => e.type === "readDone" && e.stream === 0, "delivery of one batch");
      cut.open();
      await ctx.server.connections(2, "a resume after the cut");
      ctx.adapter.send({ type: "read", stream: 0 });
      ctx.adapter.send({ type: "read", stream: 1 });
      await ctx.finishedOk();
      await ctx.adapter.waitFor((e) => e.type === "streamEnd" && e.stream === 0, "the end of the byte stream");
      await ctx.adapter.waitFor((e) => e.type === "streamEnd" && e.stream === 1, "the end of the lines");
      ensureEqual(receivedHex(ctx, 0), hex(0, 6), "bytes of stream 0");
      ensureEqual(
        ctx.items(1),
        [0, 1, 2].map((n) => ({ kind: "string", value: `line ${n}` })),
        "items of stream 1",
      );
      const ends = ctx.adapter.events.filter((e) => e.type === "streamEnd").length;
      ensure(ends === 2, `${ends} stream ends for two streams`);
      return "each stream in order, once";
    },
  },
  {
    name: "nested-streams",
    ref: "§6.4, §8, decisions §8",
    expectation:
      "streams nested in items (groups) become known to the application before their items, each reaches it in order and once, a nested stream's resume cursor names at most its last delivered item, and after a cut those whose parent item is replayed are announced by that item, the others by the acceptance",
    run: async (ctx) => {
      const session = new ScriptedSession(ctx.tokens);
      const outer = outputStream(ctx.tokens);
      const outerToken = outer.token;
      const groups = [0, 1].map((g) => ({ ...outputStream(ctx.tokens), name: `g${g}` }));
      const PER = 3;
      const resumeCursors: CursorPosition[] = [];
      const result = (announce: number | undefined): ServerMessage => ({
        type: "invocationResult",
        mappings: announce === undefined ? [] : [{ channel: announce, direction: "output", streamToken: outerToken }],
        result: { kind: "value", graph: resultGraphOf("groups"), value: { kind: "stream", value: { streamToken: outerToken } } },
      });
      const group = (channel: number, g: number, nestedChannel: number | undefined): ServerMessage => ({
        type: "outputStreamItem",
        channel,
        cursorToken: ctx.tokens.cursor(outer.id, BigInt(g), "item"),
        mappings: nestedChannel === undefined ? [] : [{ channel: nestedChannel, direction: "output", streamToken: groups[g]!.token }],
        sequence: BigInt(g),
        value: {
          kind: "record",
          value: {
            fields: [
              { kind: "string", value: groups[g]!.name },
              { kind: "stream", value: { streamToken: groups[g]!.token } },
            ],
          },
        },
      });
      const member = (channel: number, g: number, n: number): ServerMessage => ({
        type: "outputStreamItem",
        channel,
        cursorToken: ctx.tokens.cursor(groups[g]!.id, BigInt(n), "item"),
        mappings: [],
        sequence: BigInt(n),
        value: { kind: "u32", value: n },
      });
      const end = (channel: number, id: string, at: number): ServerMessage => okEnd(ctx.tokens, id, channel, at);
      const cut = gate();
      await ctx.begin(
        async (peer) => {
          const attach = await nextAttach(peer);
          if (attach.type === "invocationStart") {
            session.accept(peer, attach);
            peer.send(result(1));
            peer.send(group(1, 0, 2));
            for (let n = 0; n < PER; n++) peer.send(member(2, 0, n));
            peer.send(end(2, groups[0]!.id, PER));
            peer.send(group(1, 1, 3));
            peer.send(member(3, 1, 0));
            peer.send(member(3, 1, 1));
            await cut.opened;
            return peer.cut();
          }
          if (attach.type !== "resumeAttach") throw new Mismatch(`connection ${peer.index} began with a start`);
          const cursors = attach.outputCursors.map((c) => ctx.tokens.readCursor(c));
          resumeCursors.push(...cursors);
          const fromOf = (id: string): number | "ended" => {
            const cursor = cursors.find((c) => c.streamId === id);
            return cursor === undefined ? 0 : cursor.event === "terminal" ? "ended" : Number(cursor.position) + 1;
          };
          const outerFrom = fromOf(outer.id);
          // Channels of this connection: outer 11, group g on 12 + g.
          const replayedParent = (g: number) => outerFrom !== "ended" && g >= outerFrom;
          session.accept(peer, attach, [
            ...(outerFrom === "ended" ? [] : [{ channel: 11, direction: "output" as const, streamToken: outerToken }]),
            ...groups.flatMap((gr, g) =>
              replayedParent(g) || fromOf(gr.id) === "ended"
                ? []
                : [{ channel: 12 + g, direction: "output" as const, streamToken: gr.token }],
            ),
          ]);
          if (outerFrom !== "ended") {
            for (let g = outerFrom; g < groups.length; g++) peer.send(group(11, g, 12 + g));
            peer.send(end(11, outer.id, groups.length));
          }
          groups.forEach((gr, g) => {
            const from = fromOf(gr.id);
            if (from === "ended") return;
            for (let n = from; n < PER; n++) peer.send(member(12 + g, g, n));
            peer.send(end(12 + g, gr.id, PER));
          });
          peer.send(result(undefined));
          peer.send(FINISHED);
        },
        {
          method: "groups",
          methodParameters: {
            kind: "record",
            value: {
              fields: [
                { kind: "u32", value: 2 },
                { kind: "u32", value: PER },
              ],
            },
          },
        },
      );
      await ctx.adapter.waitFor((e) => e.type === "result", "the result");
      ctx.adapter.send({ type: "read", stream: 0, count: 2 });
      const known = await Promise.all(
        groups.map((gr) =>
          ctx.adapter.waitFor((e) => e.type === "stream" && e.streamToken === gr.token, `the nested stream of ${gr.name} to become known`),
        ),
      );
      const index = known.map((e) => (e.type === "stream" ? e.stream : -1));
      ctx.adapter.send({ type: "read", stream: index[0]! });
      ctx.adapter.send({ type: "read", stream: index[1]!, count: 1 });
      await ctx.adapter.waitFor((e) => e.type === "streamEnd" && e.stream === index[0], `the end of ${groups[0]!.name}`);
      await ctx.adapter.waitFor((e) => e.type === "readDone" && e.stream === index[1], `delivery of one item of ${groups[1]!.name}`);
      cut.open();
      await ctx.server.connections(2, "a resume after the cut");
      for (const i of [0, index[1]!]) ctx.adapter.send({ type: "read", stream: i });
      await ctx.finishedOk();
      for (const i of [0, ...index]) await ctx.adapter.waitFor((e) => e.type === "streamEnd" && e.stream === i, `the end of stream ${i}`);
      ensureEqual(
        ctx.items(0).map((v) => (v as unknown as { value: { fields: { value: unknown }[] } }).value.fields[0]!.value),
        ["g0", "g1"],
        "groups the application received",
      );
      for (const [g, i] of index.entries()) ensureEqual(ctx.numbers(i), [0, 1, 2], `items of ${groups[g]!.name}`);
      const ends = ctx.adapter.events.filter((e) => e.type === "streamEnd").length;
      ensure(ends === 3, `${ends} stream ends for three streams`);
      for (const i of index) {
        const firstItem = ctx.adapter.events.findIndex((e) => e.type === "item" && e.stream === i);
        const announced = ctx.adapter.events.findIndex((e) => e.type === "stream" && e.stream === i);
        ensure(announced >= 0 && announced < firstItem, `stream ${i} was reported after its first item`);
      }
      const g1Cursor = resumeCursors.find((c) => c.streamId === groups[1]!.id);
      ensure(
        g1Cursor === undefined || (g1Cursor.event === "item" && g1Cursor.position <= 0n),
        `the resume's cursor for g1 names ${show(g1Cursor)}; the application had received its item 0 only`,
      );
      return "two nested streams, each once and in order";
    },
  },
]);
