/**
 * Backpressure (protocol section 12): a reader that stops reading is slowed
 * down, never served by discarding data. Judged from the server's behaviour
 * only: the connection survives the stall, and once reading resumes every
 * item arrives, in order, exactly once, with the right content.
 */
import { defineChecks, ensure, ensureEqual, show, type Check } from "../check.js";
import { ensureFinishedSuccess, resultChannel } from "../context.js";
import { countStart, countValues, demoStart, range, reverseStart, val } from "../demo.js";
import { inputEnd, inputItem, inputSession } from "./support.js";

const STALL_MS = 1500;

function blobOk(index: number, bytes: Uint8Array): boolean {
  for (let j = 0; j < bytes.length; j++) if (bytes[j] !== ((index + j) & 0xff)) return false;
  return true;
}

export const backpressureChecks: Check[] = defineChecks("backpressure", [
  {
    name: "stalled-reader-blobs",
    ref: "§12 (a slow stream backpressures; data is never discarded)",
    expectation: `blobs(1100, 64 KiB) — about 69 MiB, above the 64 MiB session permits — with the reader stalled ${STALL_MS} ms: the connection stays open, then all 1100 blobs arrive in order with their content`,
    async run(ctx) {
      const { conn } = await ctx.start(demoStart("blobs", val.record(val.u32(1100), val.u32(65536))));
      await conn.nextOf("invocationResult");
      conn.socket.pause();
      await ctx.sleep(STALL_MS);
      ensureEqual(conn.closeInfo, undefined, "close during the stall");
      conn.socket.resume();
      const { messages, closed } = await conn.all(ctx.timeoutMs * 4);
      const blobs = messages.filter((m) => m.type === "output-binary");
      ensureEqual(blobs.length, 1100, "blobs received");
      const bad = blobs.findIndex(
        (m, i) => m.type !== "output-binary" || m.sequence !== BigInt(i) || m.payload.length !== 65536 || !blobOk(i, m.payload),
      );
      ensure(
        bad === -1,
        `blob ${bad} is out of order or corrupt: ${show(blobs[bad] === undefined ? undefined : { sequence: (blobs[bad] as { sequence: bigint }).sequence })}`,
      );
      ensureFinishedSuccess(messages, closed);
    },
  },
  {
    name: "stalled-reader-small-items",
    ref: "§12",
    expectation: `count(5000) with the reader stalled ${STALL_MS} ms: afterwards all 5000 values arrive exactly once and in order`,
    async run(ctx) {
      const { conn } = await ctx.start(countStart(5000, 0));
      conn.socket.pause();
      await ctx.sleep(STALL_MS);
      ensureEqual(conn.closeInfo, undefined, "close during the stall");
      conn.socket.resume();
      const { messages, closed } = await conn.all(ctx.timeoutMs * 4);
      ensureEqual(countValues(messages, resultChannel(messages)).join(","), range(5000).join(","), "values");
      ensureFinishedSuccess(messages, closed);
    },
  },
  {
    name: "input-while-output-stalled",
    ref: "§12 (a slow stream backpressures the multiplexed session)",
    expectation:
      "reverse fed 3000 items while its output is not read for a while: nothing is dropped — every input is acknowledged and every output arrives once, in order",
    async run(ctx) {
      const { conn, channel } = await inputSession(ctx, reverseStart());
      conn.socket.pause();
      for (let i = 0; i < 3000; i++) conn.send(inputItem(channel, i, `v${i}`));
      conn.send(inputEnd(channel, 3000));
      await ctx.sleep(STALL_MS);
      conn.socket.resume();
      const { messages, closed } = await conn.all(ctx.timeoutMs * 4);
      const out = messages.flatMap((m) => (m.type === "outputStreamItem" ? [(m.value as { value: string }).value] : []));
      ensureEqual(out.length, 3000, "outputs");
      ensure(
        out.every((s, i) => s === [...`v${i}`].reverse().join("")),
        "outputs out of order or altered",
      );
      ensureFinishedSuccess(messages, closed);
    },
  },
]);
