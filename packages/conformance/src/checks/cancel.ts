/** Cancellation in both directions (protocol sections 5.5, 6.5, 6.7, 8; decisions section 8). */
import type { ClientCancelReason } from "@golem-stream/wire";
import { defineChecks, ensure, ensureEqual, show, type Check, type CheckSpec } from "../check.js";
import { ensureTrace } from "../context.js";
import { countStart, reverseStart } from "../demo.js";
import { inputEnd, inputItem, inputSession } from "./support.js";

function cancelOutput(reason: ClientCancelReason): CheckSpec {
  return {
    name: `output-${reason}`,
    ref: "§5.5, §6.5, decisions §8",
    expectation: `a client streamCancel ${reason} on count's output ends it with outputStreamEnd cancelled/${reason}, then invocationFinished, close 1000`,
    async run(ctx) {
      const { conn } = await ctx.start(countStart(100_000, 5));
      const first = await conn.nextOf("outputStreamItem");
      conn.send({ type: "streamCancel", channel: first.channel, reason });
      // The stream would run for minutes: its end must follow the cancel promptly, not eventually.
      await conn.waitFor("the end of the cancelled stream", (m) => m.type === "outputStreamEnd", ctx.timeoutMs, "total");
      const { messages, closed } = await conn.all();
      const end = messages.find((m) => m.type === "outputStreamEnd");
      ensureEqual(end?.type === "outputStreamEnd" ? end.outcome : undefined, { kind: "cancelled", reason }, "end outcome");
      ensureTrace(messages);
      ensureEqual(messages.at(-1)?.type, "invocationFinished", "last message");
      ensureEqual(closed.code, 1000, "close code");
    },
  };
}

function cancelInput(reason: ClientCancelReason): CheckSpec {
  return {
    name: `input-${reason}`,
    ref: "§5.5, decisions §8",
    expectation: `a client streamCancel ${reason} on reverse's input is acknowledged terminal true at the accepted count, and the invocation finishes`,
    async run(ctx) {
      const { conn, channel } = await inputSession(ctx, reverseStart());
      conn.send(inputItem(channel, 0, "ab"));
      conn.send({ type: "streamCancel", channel, reason });
      const ack = await conn.waitFor("terminal ack", (m) => m.type === "inputStreamAck" && m.channel === channel && m.terminal);
      ensureEqual(
        ack.type === "inputStreamAck" ? ack.highestContiguousSequence : undefined,
        1n,
        "highestContiguousSequence of the terminal ack",
      );
      const { messages } = await conn.all();
      ensureTrace(messages);
      ensureEqual(messages.at(-1)?.type, "invocationFinished", "last message");
    },
  };
}

export const cancelChecks: Check[] = defineChecks("cancel", [
  cancelOutput("cancelled"),
  cancelOutput("consumer-drop"),
  cancelOutput("source-unavailable"),
  cancelInput("cancelled"),
  cancelInput("source-unavailable"),
  {
    name: "cancel-crossing-terminal",
    ref: "decisions §8",
    expectation:
      "a streamCancel sent right after the input's own inputStreamEnd is accepted once and ignored: no invalid-channel, the invocation succeeds",
    async run(ctx) {
      const { conn, channel } = await inputSession(ctx, reverseStart());
      conn.send(inputItem(channel, 0, "ab"));
      conn.send(inputEnd(channel, 1));
      conn.send({ type: "streamCancel", channel, reason: "cancelled" });
      const { messages, closed } = await conn.all();
      ensure(
        !messages.some((m) => m.type === "invocationRejected"),
        `rejected: ${show(messages.find((m) => m.type === "invocationRejected"))}`,
      );
      const last = messages.at(-1);
      ensure(last?.type === "invocationFinished", `last message ${show(last)}`);
      ensureEqual(closed.code, 1000, "close code");
    },
  },
  {
    name: "detach-does-not-cancel",
    ref: "§8 (transport detach does not cancel execution or streams)",
    expectation: "dropping the transport of a running count(30, 10) does not cancel it: a later resume sees all 30 items and an ok end",
    async run(ctx) {
      const { conn, accepted } = await ctx.start(countStart(30, 10));
      await conn.nextOf("outputStreamItem");
      conn.terminate();
      await conn.closed;
      const { conn: resumed, answer } = await ctx.attach(accepted.sessionToken, "resume");
      ensure(answer.type === "invocationAccepted", `answer ${show(answer)}`);
      const { messages } = await resumed.all(ctx.timeoutMs * 2);
      ensureEqual(messages.filter((m) => m.type === "outputStreamItem").length, 30, "items");
      const end = messages.find((m) => m.type === "outputStreamEnd");
      ensureEqual(end?.type === "outputStreamEnd" ? end.outcome : undefined, { kind: "ok" }, "end outcome");
    },
  },
]);
