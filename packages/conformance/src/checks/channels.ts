/** Channels, sequences, gaps, conflicts and resends (protocol sections 4.3, 5.3-5.5, 6.4-6.6, 8, 9; decisions section 8). */
import type { InputStreamAck, ServerMessage } from "@golem-stream/wire";
import { defineChecks, ensure, ensureEqual, show, type Check } from "../check.js";
import type { Connection } from "../connection.js";
import {
  ensureFinishedSuccess,
  ensureTrace,
  ensureViolation,
  invocationResult,
  resultChannel,
  resultValue,
  type SuiteContext,
} from "../context.js";
import { countStart, countValues, demoStart, digestOf, inputStart, outputValues, reverseStart, val } from "../demo.js";
import { inputEnd as end, inputItem as item, inputSession, inputViolation } from "./support.js";

/** A channel no mapping installs. */
const UNMAPPED = 4242;

const isAck =
  (channel: number, count: bigint, terminal?: boolean) =>
  (m: ServerMessage): boolean =>
    m.type === "inputStreamAck" &&
    m.channel === channel &&
    m.highestContiguousSequence >= count &&
    (terminal === undefined || m.terminal === terminal);

const reverseSession = (ctx: SuiteContext) => inputSession(ctx, reverseStart());
const digestSession = (ctx: SuiteContext) => inputSession(ctx, inputStart("digest"));

function acksOn(messages: readonly ServerMessage[], channel: number): InputStreamAck[] {
  return messages.filter((m): m is InputStreamAck => m.type === "inputStreamAck" && m.channel === channel);
}

/** Waits for the end of a digest session: it must report the count and SHA-256 of `bytes`, then succeed. */
async function ensureDigestOf(conn: Connection, bytes: Uint8Array): Promise<void> {
  const { messages, closed } = await conn.all();
  ensureEqual(resultValue(messages), digestOf(bytes), "digest result");
  ensureFinishedSuccess(messages, closed);
}

export const channelChecks: Check[] = defineChecks("channels", [
  {
    name: "prompt-ack",
    ref: "§6.6, decisions §8",
    expectation:
      'one input item, with nothing sent after it, is acknowledged with highestContiguousSequence "1" (a count, not an index) and terminal false',
    async run(ctx) {
      const { conn, channel } = await reverseSession(ctx);
      conn.send(item(channel, 0, "abc"));
      const ack = await conn.waitFor("inputStreamAck", (m) => m.type === "inputStreamAck" && m.channel === channel);
      ensure(ack.type === "inputStreamAck", "");
      ensureEqual(ack.highestContiguousSequence, 1n, "highestContiguousSequence");
      ensureEqual(ack.terminal, false, "terminal");
    },
  },
  {
    name: "acks-monotonic",
    ref: "§6.6",
    expectation: 'acknowledgements of 20 items never decrease and reach "20"; the end is acknowledged terminal with "20"',
    async run(ctx) {
      const { conn, channel } = await reverseSession(ctx);
      for (let i = 0; i < 20; i++) conn.send(item(channel, i, `item-${i}`));
      await conn.waitFor("ack 20", isAck(channel, 20n));
      conn.send(end(channel, 20));
      const { messages, closed } = await conn.all();
      const acks = acksOn(messages, channel).map((a) => a.highestContiguousSequence);
      ensure(
        acks.every((a, i) => i === 0 || a >= acks[i - 1]!),
        `acks decreased: ${show(acks)}`,
      );
      ensure(
        acks.every((a) => a <= 20n),
        `ack beyond what was sent: ${show(acks)}`,
      );
      const last = acksOn(messages, channel).at(-1);
      ensureEqual(last === undefined ? undefined : [last.highestContiguousSequence, last.terminal], [20n, true], "final ack");
      ensureFinishedSuccess(messages, closed);
    },
  },
  {
    name: "terminal-ack",
    ref: "§6.6, decisions §8",
    expectation: "inputStreamEnd is always acknowledged with terminal true, even on an empty stream",
    async run(ctx) {
      const { conn, channel } = await reverseSession(ctx);
      conn.send(end(channel, 0));
      const ack = await conn.waitFor("terminal ack", isAck(channel, 0n, true));
      ensureEqual(
        ack.type === "inputStreamAck" ? ack.highestContiguousSequence : undefined,
        0n,
        "highestContiguousSequence of the terminal ack",
      );
      const { messages, closed } = await conn.all();
      ensureFinishedSuccess(messages, closed);
    },
  },
  {
    name: "output-order-and-cursors",
    ref: "§6.4, §6.5, §8",
    expectation:
      "reverse's output items arrive in input order with sequences 0..n-1, each with a cursor token; the end has sequence n, outcome ok and a cursor",
    async run(ctx) {
      const { conn, channel } = await reverseSession(ctx);
      const inputs = ["one", "two", "three", "four", "five"];
      inputs.forEach((text, i) => conn.send(item(channel, i, text)));
      conn.send(end(channel, inputs.length));
      const { messages, closed } = await conn.all();
      const out = resultChannel(messages);
      ensureEqual(
        outputValues(messages, out),
        inputs.map((s) => val.str([...s].reverse().join(""))),
        "output values",
      );
      const items = messages.filter((m) => m.type === "outputStreamItem");
      ensure(
        items.every((m) => m.type === "outputStreamItem" && m.cursorToken.length > 0),
        "an item without cursor",
      );
      const theEnd = messages.find((m) => m.type === "outputStreamEnd");
      ensure(theEnd?.type === "outputStreamEnd" && theEnd.cursorToken !== undefined, `end without cursor: ${show(theEnd)}`);
      ensureEqual(theEnd.sequence, 5n, "end sequence");
      ensure(
        new Set(items.map((m) => (m.type === "outputStreamItem" ? m.cursorToken : ""))).size === items.length,
        "two items share a cursor token",
      );
      ensureFinishedSuccess(messages, closed);
    },
  },
  {
    name: "result-before-finished",
    ref: "§6.3, §6.9, decisions §8",
    expectation:
      "count(3) sends exactly one invocationResult announcing its output stream, then items 0..2, the end, invocationFinished success, close 1000",
    async run(ctx) {
      const { conn } = await ctx.start(countStart(3, 0));
      const { messages, closed } = await conn.all();
      ensureEqual(messages.filter((m) => m.type === "invocationResult").length, 1, "invocationResult count");
      ensureEqual(countValues(messages, resultChannel(messages)), [0, 1, 2], "count values");
      ensureFinishedSuccess(messages, closed);
    },
  },
  {
    name: "identical-duplicate",
    ref: "§6.6, §9",
    expectation: "an identical duplicate of an acknowledged item is idempotent: same cumulative ACK, no error, no duplicated output",
    async run(ctx) {
      const { conn, channel } = await reverseSession(ctx);
      conn.send(item(channel, 0, "abc"));
      await conn.waitFor("ack 1", isAck(channel, 1n));
      conn.send(item(channel, 0, "abc"));
      conn.send(item(channel, 1, "de"));
      conn.send(end(channel, 2));
      const { messages, closed } = await conn.all();
      ensureEqual(outputValues(messages, resultChannel(messages)), [val.str("cba"), val.str("ed")], "outputs");
      ensure(
        acksOn(messages, channel).every((a) => a.highestContiguousSequence <= 2n),
        "an ack past the sent items",
      );
      ensureFinishedSuccess(messages, closed);
    },
  },
  {
    name: "duplicate-range-same-ack",
    ref: "§6.6",
    expectation: 'resending items 0..2 after they were acknowledged returns the same cumulative ACK "3"',
    async run(ctx) {
      const { conn, channel } = await reverseSession(ctx);
      for (let i = 0; i < 3; i++) conn.send(item(channel, i, `x${i}`));
      await conn.waitFor("ack 3", isAck(channel, 3n));
      const before = conn.received.length;
      for (let i = 0; i < 3; i++) conn.send(item(channel, i, `x${i}`));
      conn.send(end(channel, 3));
      const { messages, closed } = await conn.all();
      const later = acksOn(messages.slice(before), channel);
      ensure(later.length > 0, "no ACK after the duplicate range and the end");
      ensure(
        later.every((a) => a.highestContiguousSequence === 3n),
        `acks after the duplicates: ${show(later.map((a) => a.highestContiguousSequence))}`,
      );
      ensureFinishedSuccess(messages, closed);
    },
  },
  {
    name: "input-conflict",
    ref: "§9, §6.2, decisions §5",
    expectation:
      "a different value at an acknowledged sequence is input-conflict: invocationRejected (accepted attemptId, retryable true), close 1002",
    async run(ctx) {
      const { conn, channel, attemptId } = await reverseSession(ctx);
      conn.send(item(channel, 0, "abc"));
      await conn.waitFor("ack 1", isAck(channel, 1n));
      conn.send(item(channel, 0, "abd"));
      return ensureViolation(conn, { codes: ["input-conflict"], attemptId, rejectionRequired: true, retryable: true });
    },
  },
  inputViolation({
    name: "input-gap-first",
    ref: "§9, §6.2, decisions §5",
    expectation: "a first item at sequence 1 is input-gap: invocationRejected (attemptId, retryable true), close 1002",
    send: (channel) => [item(channel, 1, "abc")],
    codes: ["input-gap"],
    retryable: true,
  }),
  {
    name: "input-gap-later",
    ref: "§9, §6.2",
    expectation: "items 0, 1 then 3 is input-gap, and the high-water never passes 2",
    async run(ctx) {
      const { conn, channel, attemptId } = await reverseSession(ctx);
      conn.send(item(channel, 0, "a"));
      conn.send(item(channel, 1, "b"));
      conn.send(item(channel, 3, "d"));
      const saw = await ensureViolation(conn, { codes: ["input-gap"], attemptId, rejectionRequired: true, retryable: true });
      const acks = acksOn(conn.received, channel).map((a) => a.highestContiguousSequence);
      ensure(
        acks.every((a) => a <= 2n),
        `ack past the gap: ${show(acks)}`,
      );
      return saw;
    },
  },
  inputViolation({
    name: "end-gap",
    ref: "§5.4, §9",
    expectation: "inputStreamEnd with sequence 2 after one item is input-gap, close 1002",
    send: (channel) => [item(channel, 0, "a"), end(channel, 2)],
    codes: ["input-gap"],
  }),
  inputViolation({
    name: "item-after-end",
    ref: "§5.4 (exactly one terminal per stream)",
    expectation: "an item after the stream's inputStreamEnd is refused (input-conflict or protocol-error), close 1002",
    send: (channel) => [item(channel, 0, "a"), end(channel, 1), item(channel, 1, "b")],
    codes: ["input-conflict", "protocol-error", "input-gap", "invalid-channel"],
  }),
  inputViolation({
    name: "unknown-channel-item",
    ref: "§8, decisions §5",
    expectation: "an item on a channel no mapping installed is invalid-channel: invocationRejected (attemptId, retryable true), close 1002",
    send: () => [item(UNMAPPED, 0, "a")],
    codes: ["invalid-channel"],
    retryable: true,
  }),
  inputViolation({
    name: "unknown-channel-end",
    ref: "§8",
    expectation: "an inputStreamEnd on an unknown channel is invalid-channel, close 1002",
    send: () => [end(UNMAPPED, 0)],
    codes: ["invalid-channel"],
  }),
  inputViolation({
    name: "unknown-channel-cancel",
    ref: "§8",
    expectation: "a streamCancel on an unknown channel is invalid-channel, close 1002",
    send: () => [{ type: "streamCancel", channel: UNMAPPED, reason: "cancelled" }],
    codes: ["invalid-channel"],
  }),
  inputViolation({
    name: "unknown-channel-binary",
    ref: "§8",
    expectation: "an input-u8 batch on an unknown channel is invalid-channel, close 1002",
    method: "digest",
    send: () => [{ type: "input-u8", channel: UNMAPPED, sequence: 0n, payload: new Uint8Array([1]) }],
    codes: ["invalid-channel"],
  }),
  {
    name: "input-on-output-channel",
    ref: "§8 (directionally invalid)",
    expectation: "an inputStreamItem on reverse's output channel is invalid-channel, close 1002",
    async run(ctx) {
      const { conn, attemptId } = await reverseSession(ctx);
      const result = await conn.nextOf("invocationResult");
      const out = result.mappings.find((m) => m.direction === "output");
      ensure(out !== undefined, `no output mapping in ${show(result)}`);
      conn.send(item(out.channel, 0, "a"));
      return ensureViolation(conn, { codes: ["invalid-channel"], attemptId, rejectionRequired: true });
    },
  },
  {
    name: "u8-ack-counts-bytes",
    ref: "§6.6, §7",
    expectation: 'a packed u8 batch of 5 bytes is acknowledged with highestContiguousSequence "5" (one item per byte)',
    async run(ctx) {
      const { conn, channel } = await digestSession(ctx);
      conn.send({ type: "input-u8", channel, sequence: 0n, payload: new Uint8Array([1, 2, 3, 4, 5]) });
      const ack = await conn.waitFor("ack of the batch", (m) => m.type === "inputStreamAck" && m.channel === channel);
      ensureEqual(ack.type === "inputStreamAck" ? ack.highestContiguousSequence : undefined, 5n, "highestContiguousSequence");
    },
  },
  {
    name: "u8-sequence-advances-by-bytes",
    ref: "§7",
    expectation: "batches at sequences 0 (3 bytes) then 3 (2 bytes) are contiguous; digest reports 5 bytes and their SHA-256",
    async run(ctx) {
      const { conn, channel } = await digestSession(ctx);
      conn.send({ type: "input-u8", channel, sequence: 0n, payload: Buffer.from("abc") });
      conn.send({ type: "input-u8", channel, sequence: 3n, payload: Buffer.from("de") });
      conn.send(end(channel, 5));
      await ensureDigestOf(conn, Buffer.from("abcde"));
    },
  },
  inputViolation({
    name: "u8-gap",
    ref: "§7, §9",
    expectation: "a u8 batch at sequence 4 after a 3-byte batch is input-gap, close 1002",
    method: "digest",
    send: (channel) => [
      { type: "input-u8", channel, sequence: 0n, payload: Buffer.from("abc") },
      { type: "input-u8", channel, sequence: 4n, payload: Buffer.from("e") },
    ],
    codes: ["input-gap"],
  }),
  {
    name: "u8-conflict",
    ref: "§7, §9",
    expectation: "resending an acknowledged u8 range with different bytes is input-conflict, close 1002",
    async run(ctx) {
      const { conn, channel, attemptId } = await digestSession(ctx);
      conn.send({ type: "input-u8", channel, sequence: 0n, payload: Buffer.from("abc") });
      await conn.waitFor("ack 3", isAck(channel, 3n));
      conn.send({ type: "input-u8", channel, sequence: 0n, payload: Buffer.from("abd") });
      return ensureViolation(conn, { codes: ["input-conflict"], attemptId, rejectionRequired: true });
    },
  },
  {
    name: "u8-identical-resend",
    ref: "§9",
    expectation: "resending an acknowledged u8 batch identically is idempotent: the digest counts its bytes once",
    async run(ctx) {
      const { conn, channel } = await digestSession(ctx);
      conn.send({ type: "input-u8", channel, sequence: 0n, payload: Buffer.from("abc") });
      await conn.waitFor("ack 3", isAck(channel, 3n));
      conn.send({ type: "input-u8", channel, sequence: 0n, payload: Buffer.from("abc") });
      conn.send(end(channel, 3));
      await ensureDigestOf(conn, Buffer.from("abc"));
    },
  },
  {
    name: "nested-announced-before-use",
    ref: "§8, §6.4",
    expectation:
      "groups(3, 2): every nested stream's channel is announced by the item that exposes it before any message uses it; all streams end exactly once",
    async run(ctx) {
      const { conn } = await ctx.start(demoStart("groups", val.record(val.u32(3), val.u32(2))));
      const { messages, closed } = await conn.all();
      ensureTrace(messages);
      const nested = messages.flatMap((m) => (m.type === "outputStreamItem" ? m.mappings : []));
      ensureEqual(nested.length, 3, "nested streams announced");
      ensureEqual(new Set([...nested.map((m) => m.channel)]).size, 3, "distinct nested channels");
      for (const mapping of nested)
        ensureEqual(countValues(messages, mapping.channel), [0, 1], `items of nested channel ${mapping.channel}`);
      ensureFinishedSuccess(messages, closed);
    },
  },
  {
    name: "channels-distinct",
    ref: "§4.3, §8",
    expectation: "split's two output streams get distinct non-zero channels, distinct from the input's, and distinct stream tokens",
    async run(ctx) {
      const { conn, accepted, channel: input } = await inputSession(ctx, inputStart("split"));
      conn.send({ type: "input-u8", channel: input, sequence: 0n, payload: Buffer.from("a\nb") });
      conn.send(end(input, 3));
      const { messages, closed } = await conn.all();
      const all = [...accepted.mappings, ...invocationResult(messages).mappings];
      ensureEqual(new Set(all.map((m) => m.channel)).size, 3, "distinct channels");
      ensureEqual(new Set(all.map((m) => m.streamToken)).size, 3, "distinct stream tokens");
      ensure(
        all.every((m) => m.channel > 0),
        "channel 0 used",
      );
      ensureFinishedSuccess(messages, closed);
    },
  },
  {
    name: "producer-error-local",
    ref: "§6.5, §8 (stream-local failure)",
    expectation: "fail(2): items 0 and 1, then outputStreamEnd error producer-error with sequence 2; the failure stays local",
    async run(ctx) {
      const { conn } = await ctx.start(demoStart("fail", val.record(val.u32(2))));
      const { messages, closed } = await conn.all();
      const out = resultChannel(messages);
      ensureEqual(countValues(messages, out), [0, 1], "items");
      const theEnd = messages.find((m) => m.type === "outputStreamEnd");
      ensureEqual(
        theEnd?.type === "outputStreamEnd"
          ? [theEnd.outcome.kind, "code" in theEnd.outcome ? theEnd.outcome.code : undefined, theEnd.sequence]
          : undefined,
        ["error", "producer-error", 2n],
        "end",
      );
      ensureTrace(messages);
      ensure(messages.at(-1)?.type === "invocationFinished", "no invocationFinished last");
      ensureEqual(closed.code, 1000, "close code");
    },
  },
]);
