/** Frozen limits and their codes (protocol sections 11 and 12; decisions sections 5 and 6). */
import { randomUUID } from "node:crypto";
import { encodeMessage } from "@golem-stream/wire";
import { defineChecks, ensureEqual, type Check } from "../check.js";
import { ensureFinishedSuccess, ensureRejected, ensureViolation, resultChannel } from "../context.js";
import { countStart, inputStart, outputValues, reverseStart } from "../demo.js";
import { inputEnd, inputItem, inputSession } from "./support.js";

const MiB = 1024 * 1024;

export const limitChecks: Check[] = defineChecks("limits", [
  {
    name: "large-item-within-limits",
    ref: "§12 (MUST NOT accept a value and later silently discard it)",
    expectation: "a 1 MiB string item (well under 8 MiB) is accepted and echoed reversed in full",
    async run(ctx) {
      const { conn, channel } = await inputSession(ctx, reverseStart());
      conn.send(inputItem(channel, 0, "ab".repeat(MiB / 2)));
      conn.send(inputEnd(channel, 1));
      const { messages, closed } = await conn.all(ctx.timeoutMs * 2);
      const out = outputValues(messages, resultChannel(messages)) as { value: string }[];
      ensureEqual(out.length === 1 && out[0]!.value === "ba".repeat(MiB / 2), true, "one reversed 1 MiB item");
      ensureFinishedSuccess(messages, closed);
    },
  },
  {
    name: "u8-batch-at-limit",
    ref: "§7, decisions §6",
    expectation: "a packed u8 batch of exactly 1 MiB is accepted and acknowledged with \"1048576\"",
    async run(ctx) {
      const { conn, channel } = await inputSession(ctx, inputStart("digest"));
      conn.send({ type: "input-u8", channel, sequence: 0n, payload: new Uint8Array(MiB) });
      const ack = await conn.waitFor("ack 1 MiB", (m) => m.type === "inputStreamAck" && m.highestContiguousSequence === BigInt(MiB));
      ensureEqual(ack.type, "inputStreamAck", "answer");
    },
  },
  {
    name: "binary-message-too-large",
    ref: "§11, §12, decisions §6",
    expectation: "a binary message larger than 16 MiB + 64 KiB after acceptance closes the WebSocket with 1009",
    async run(ctx) {
      const { conn } = await ctx.start(inputStart("digest").start);
      conn.sendRaw(new Uint8Array(16 * MiB + 64 * 1024 + 8), true);
      const { closed } = await conn.all(ctx.timeoutMs * 2);
      ensureEqual(closed.code, 1009, "close code");
    },
  },
  {
    name: "text-message-too-large-after-acceptance",
    ref: "§11, §12, decisions §6",
    expectation: "a text message of 8 MiB + 1 bytes after acceptance closes the WebSocket with 1009 (or limit-exceeded then 1002)",
    async run(ctx) {
      const { conn, channel } = await inputSession(ctx, reverseStart());
      const prefix = `{"channel":${channel},"sequence":"0","type":"inputStreamItem","value":{"kind":"string","value":"`;
      const suffix = `"},"version":1}`;
      conn.sendRaw(prefix + "x".repeat(8 * MiB + 1 - prefix.length - suffix.length) + suffix, false);
      return ensureViolation(conn, { codes: ["limit-exceeded"], closeCodes: [1009, 1002] });
    },
  },
  {
    name: "idempotency-key-at-limit",
    ref: "§2, decisions §6",
    expectation: "an idempotency key of exactly 1024 UTF-8 bytes is accepted",
    async run(ctx) {
      const { accepted } = await ctx.start(countStart(1, 0, { idempotencyKey: `${randomUUID()}${"k".repeat(1024 - 36)}` }));
      ensureEqual(accepted.type, "invocationAccepted", "answer");
    },
  },
  {
    name: "limit-code-not-retryable",
    ref: "decisions §5",
    expectation: "a start whose idempotency key is 1025 bytes is refused limit-exceeded with its attemptId and retryable false",
    async run(ctx) {
      const conn = await ctx.connect();
      const start = countStart(1, 0, { idempotencyKey: "k".repeat(1024) });
      // The encoder refuses an over-long key, so the oversized key is spliced into its text.
      conn.sendRaw((encodeMessage(start) as string).replace(`"${start.idempotencyKey}"`, `"${"k".repeat(1025)}"`), false);
      return ensureRejected(conn, ["limit-exceeded"], start.attemptId);
    },
  },
]);
