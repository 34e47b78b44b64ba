/**
 * Packed `stream<u8>` (protocol §7, §9): one cursor per batch, naming its
 * final byte; a replayed batch that overlaps delivered bytes is trimmed, never
 * skipped; input is resent from the byte high-water, even inside a batch.
 * The methods and graphs are the demo catalogue's `split` and `digest`.
 */
import type { ClientMessage, ResumeAttach, ServerMessage } from "@golem-stream/wire";
import { ensure, ensureEqual, Mismatch, show } from "../../check.js";
import type { ScriptedPeer } from "../scripted-server.js";
import { FINISHED, ScriptedSession, nextAttach, provisionalRefOf } from "../session-script.js";
import { defineScenarios } from "../scenario.js";
import { SPLIT, gate, hex, okEnd, outputStream, receivedHex, resultGraphOf, splitResult, u8Batch } from "./common.js";

/** The u8 batches a connection received on `channel`: `[sequence, payload]`. */
function batchesOn(received: readonly ClientMessage[], channel: number): { sequence: number; payloadHex: string }[] {
  return received.flatMap((m) =>
    m.type === "input-u8" && m.channel === channel
      ? [{ sequence: Number(m.sequence), payloadHex: Buffer.from(m.payload).toString("hex") }]
      : [],
  );
}

async function awaitInput(peer: ScriptedPeer, channel: number, bytesWanted: number): Promise<void> {
  const count = () => batchesOn(peer.received, channel).reduce((n, b) => Math.max(n, b.sequence + b.payloadHex.length / 2), 0);
  while (count() < bytesWanted || !peer.received.some((m) => m.type === "inputStreamEnd" && m.channel === channel))
    await peer.next(`${bytesWanted} bytes and the end on channel ${channel}`);
}

const TOTAL = 16;

export const byteScenarios = defineScenarios("bytes", [
  {
    name: "u8-batch-cursor-and-overlap",
    ref: "§7, §9",
    expectation:
      "output bytes arrive as packed batches; after a cut, the resume's cursor names at most the final byte of a delivered batch, and a replayed batch overlapping delivered bytes is trimmed: the application sees bytes 0-15 once, in order",
    run: async (ctx) => {
      const session = new ScriptedSession(ctx.tokens);
      const upper = outputStream(ctx.tokens);
      const lines = outputStream(ctx.tokens);
      const result = splitResult(upper.token, lines.token);
      const mappings = [
        { channel: 1, direction: "output", streamToken: upper.token },
        { channel: 2, direction: "output", streamToken: lines.token },
      ] as const;
      const batch = (from: number, to: number): ServerMessage => u8Batch(ctx.tokens, upper.id, 1, from, to);
      const linesEnd = okEnd(ctx.tokens, lines.id, 2, 0);
      const cut = gate();
      let resume: ResumeAttach | undefined;
      await ctx.begin(async (peer) => {
        const attach = await nextAttach(peer);
        if (attach.type === "invocationStart") {
          session.accept(peer, attach);
          peer.send(splitResult(upper.token, lines.token, mappings));
          peer.send(linesEnd);
          peer.send(batch(0, 4));
          peer.send(batch(4, 8));
          peer.send(batch(8, 12));
          await cut.opened;
          return peer.cut();
        }
        if (attach.type !== "resumeAttach") throw new Mismatch(`connection ${peer.index} began with a start`);
        resume = attach;
        const cursors = attach.outputCursors.map((c) => ctx.tokens.readCursor(c));
        const upperCursor = cursors.find((c) => c.streamId === upper.id);
        const linesDone = cursors.some((c) => c.streamId === lines.id && c.event === "terminal");
        session.accept(peer, attach, linesDone ? [mappings[0]] : [...mappings]);
        const from = upperCursor === undefined ? 0 : Number(upperCursor.position) + 1;
        // Overlap: two bytes before what the cursor asks for, in one batch with new bytes.
        peer.send(batch(Math.max(0, from - 2), 12));
        peer.send(batch(12, TOTAL));
        peer.send(okEnd(ctx.tokens, upper.id, 1, TOTAL));
        if (!linesDone) peer.send(linesEnd);
        peer.send(result);
        peer.send(FINISHED);
      }, SPLIT);
      ctx.adapter.send({ type: "endInput", input: "data" });
      await ctx.adapter.waitFor((e) => e.type === "result", "the result");
      ctx.adapter.send({ type: "read", stream: 0, count: 2 });
      await ctx.adapter.waitFor((e) => e.type === "readDone" && e.stream === 0, "delivery of two batches");
      cut.open();
      await ctx.server.connections(2, "a resume after the cut");
      ctx.adapter.send({ type: "read", stream: 0 });
      ctx.adapter.send({ type: "read", stream: 1 });
      await ctx.finishedOk();
      await ctx.adapter.waitFor((e) => e.type === "streamEnd" && e.stream === 0, "the end of the byte stream");
      ensureEqual(receivedHex(ctx, 0), hex(0, TOTAL), "bytes the application received");
      const cursor =
        resume === undefined ? undefined : resume.outputCursors.map((c) => ctx.tokens.readCursor(c)).find((c) => c.streamId === upper.id);
      ensure(
        cursor === undefined || (cursor.event === "item" && cursor.position <= 7n),
        `the resume's cursor names ${show(cursor)}; the application had received bytes 0-7 only`,
      );
      return cursor === undefined ? "no cursor; bytes once" : `cursor at byte ${cursor.position}; bytes once`;
    },
  },
  {
    name: "u8-suffix-resend-inside-batch",
    ref: "§7, §9",
    expectation:
      "input bytes acknowledged up to a high-water inside a batch (5 of 12) are resent from exactly that byte after a cut, then the end",
    run: async (ctx) => {
      const session = new ScriptedSession(ctx.tokens);
      const input = session.input();
      let resent: { sequence: number; payloadHex: string }[] = [];
      await ctx.begin(
        async (peer) => {
          const attach = await nextAttach(peer);
          if (attach.type === "invocationStart") {
            session.accept(peer, attach, [input.mapping(1, 0, false, provisionalRefOf(attach))]);
            await awaitInput(peer, 1, 12);
            peer.send(input.ack(1, 5));
            return peer.cut();
          }
          session.accept(peer, attach, [input.mapping(3, 5)]);
          await awaitInput(peer, 3, 12);
          resent = batchesOn(peer.received, 3);
          peer.send(input.ack(3, 12, true));
          peer.send({
            type: "invocationResult",
            mappings: [],
            result: {
              kind: "value",
              graph: resultGraphOf("digest"),
              value: {
                kind: "record",
                value: {
                  fields: [
                    { kind: "u64", value: "12" },
                    { kind: "string", value: "not checked here" },
                  ],
                },
              },
            },
          });
          peer.send(FINISHED);
        },
        {
          method: "digest",
          methodParameters: { kind: "record", value: { fields: [{ kind: "stream", value: { input: "data", element: "u8" } }] } },
        },
      );
      for (const [from, to] of [
        [0, 4],
        [4, 8],
        [8, 12],
      ] as const)
        ctx.adapter.send({ type: "feed", input: "data", bytesHex: hex(from, to) });
      ctx.adapter.send({ type: "endInput", input: "data" });
      await ctx.finishedOk();
      ensure(
        resent.length > 0 && resent[0]!.sequence === 5,
        `the first batch resent starts at ${show(resent[0]?.sequence)}, expected byte 5 (the high-water)`,
      );
      let next = 5;
      for (const b of resent) {
        ensure(b.sequence === next, `resent batches ${show(resent)}: a gap or overlap at ${b.sequence}`);
        next += b.payloadHex.length / 2;
      }
      ensureEqual(resent.map((b) => b.payloadHex).join(""), hex(5, 12), "resent bytes");
      return `resent ${show(resent.map((b) => b.sequence))}`;
    },
  },
  {
    name: "binary-items-replay",
    ref: "§7, §9",
    expectation:
      "stream<binary> items (one binary message each) reach the application once and intact, when a resume replays them from sequence 0 after two were delivered; the resume's cursor names at most item 1",
    run: async (ctx) => {
      const session = new ScriptedSession(ctx.tokens);
      const blobs = outputStream(ctx.tokens);
      const token = blobs.token;
      const result = (announce: boolean): ServerMessage => ({
        type: "invocationResult",
        mappings: announce ? [{ channel: 1, direction: "output", streamToken: token }] : [],
        result: { kind: "value", graph: resultGraphOf("blobs"), value: { kind: "stream", value: { streamToken: token } } },
      });
      // Item n is n + 1 bytes, each n: distinct sizes and contents.
      const item = (channel: number, n: number): ServerMessage => ({
        type: "output-binary",
        channel,
        sequence: BigInt(n),
        cursorToken: ctx.tokens.cursor(blobs.id, BigInt(n), "item"),
        payload: new Uint8Array(n + 1).fill(n),
      });
      const cut = gate();
      let resume: ResumeAttach | undefined;
      await ctx.begin(
        async (peer) => {
          const attach = await nextAttach(peer);
          if (attach.type === "invocationStart") {
            session.accept(peer, attach);
            peer.send(result(true));
            for (let n = 0; n < 4; n++) peer.send(item(1, n));
            await cut.opened;
            return peer.cut();
          }
          if (attach.type === "resumeAttach") resume = attach;
          session.accept(peer, attach, [{ channel: 2, direction: "output", streamToken: token }]);
          // A replay from sequence 0, whatever the cursor says.
          for (let n = 0; n < 6; n++) peer.send(item(2, n));
          peer.send(okEnd(ctx.tokens, blobs.id, 2, 6));
          peer.send(result(false));
          peer.send(FINISHED);
        },
        {
          method: "blobs",
          methodParameters: {
            kind: "record",
            value: {
              fields: [
                { kind: "u32", value: 6 },
                { kind: "u32", value: 1 },
              ],
            },
          },
        },
      );
      await ctx.adapter.waitFor((e) => e.type === "result", "the result");
      ctx.adapter.send({ type: "read", stream: 0, count: 2 });
      await ctx.adapter.waitFor((e) => e.type === "readDone", "delivery of two items");
      cut.open();
      await ctx.server.connections(2, "a resume after the cut");
      ctx.adapter.send({ type: "read", stream: 0 });
      await ctx.finishedOk();
      await ctx.adapter.waitFor((e) => e.type === "streamEnd", "the stream's end");
      const items = ctx.adapter.events.flatMap((e) => (e.type === "item" ? [e.bytesHex] : []));
      ensureEqual(
        items,
        [0, 1, 2, 3, 4, 5].map((n) => Buffer.alloc(n + 1, n).toString("hex")),
        "binary items the application received",
      );
      const cursor = resume?.outputCursors.map((c) => ctx.tokens.readCursor(c)).find((c) => c.streamId === blobs.id);
      ensure(
        cursor === undefined || (cursor.event === "item" && cursor.position <= 1n),
        `the resume's cursor names ${show(cursor)}; the application had received items 0-1 only`,
      );
      return "6 binary items once";
    },
  },
]);
