/**
 * Restart durability (protocol sections 6.1, 9, 13; decisions section 8): with
 * `--restart-cmd`, the suite restarts the server mid-session and checks that
 * acceptance, output cursors and input high-water survived.
 */
import { spawn } from "node:child_process";
import { SUBPROTOCOL, type InvocationAccepted } from "@golem-stream/wire";
import { defineChecks, ensure, ensureEqual, show, type Check } from "../check.js";
import type { Connection } from "../connection.js";
import { ensureAnswerRejected, ensureFinishedSuccess, ensureTrace, resultChannel, type SuiteContext } from "../context.js";
import { countStart, countValues, journalItems, journalStart, range, reverseStart, val } from "../demo.js";
import { inputEnd, inputItem, inputSession, runToEnd } from "./support.js";

/** Runs the restart command, then waits until the endpoint upgrades again. */
export async function restartServer(ctx: SuiteContext): Promise<void> {
  const command = ctx.restartCmd;
  if (command === undefined) throw new Error("no --restart-cmd given");
  const code = await new Promise<number | null>((resolve, reject) => {
    // The signal kills the command if the check ends first (its deadline passed while the restart ran).
    const child = spawn(command, { shell: true, stdio: ["ignore", "ignore", "inherit"], signal: ctx.signal });
    const timer = setTimeout(() => {
      child.kill();
      reject(new Error(`restart command did not exit within ${ctx.restartTimeoutMs} ms`));
    }, ctx.restartTimeoutMs);
    child.once("error", (error) => {
      clearTimeout(timer);
      reject(ctx.signal.aborted ? ctx.signal.reason : error);
    });
    child.once("exit", (exitCode) => {
      clearTimeout(timer);
      resolve(exitCode);
    });
  });
  if (code !== 0) throw new Error(`restart command exited with ${code}`);
  const deadline = Date.now() + ctx.restartTimeoutMs;
  for (;;) {
    ctx.signal.throwIfAborted();
    try {
      const probe = await ctx.probe({ token: ctx.token, protocols: [SUBPROTOCOL] });
      if (probe.status === 101) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`the server did not accept upgrades within ${ctx.restartTimeoutMs} ms of the restart`);
    await ctx.sleep(100);
  }
}

/**
 * A reverse session with 3 acknowledged items (`${prefix}0` …), then a
 * restart, then an attach with `operation`: the new connection and its acceptance.
 */
async function acknowledgedThenRestarted(
  ctx: SuiteContext,
  prefix: string,
  operation: "resume" | "takeover",
): Promise<{ resumed: Connection; answer: InvocationAccepted }> {
  const { conn, accepted, channel } = await inputSession(ctx, reverseStart());
  for (let i = 0; i < 3; i++) conn.send(inputItem(channel, i, `${prefix}${i}`));
  await conn.waitFor("ack 3", (m) => m.type === "inputStreamAck" && m.highestContiguousSequence === 3n);
  await restartServer(ctx);
  conn.terminate();
  const { conn: resumed, answer } = await ctx.attach(accepted.sessionToken, operation);
  ensure(answer.type === "invocationAccepted", `answer after restart: ${show(answer)}`);
  return { resumed, answer };
}

/**
 * A host that cannot continue a method across a restart may finish it:
 * outputs end cancelled/invocation-failed, inputs become terminal, the
 * invocation fails. What it must never do is lose what it produced or
 * acknowledged. These checks accept either continuation or that documented
 * failure, and nothing else; with `durableRestart` (a server that re-runs the
 * demo methods, like the project's embedded one) only continuation.
 */
export const restartChecks: Check[] = defineChecks("restart", [
  {
    name: "output-cursor-survives",
    ref: "§9, §13 (a crash can replay but cannot skip output)",
    expectation:
      "count(20, 50) interrupted by a restart after item 2: resuming with item 2's cursor delivers items from 3 on without gap or repeat, including every item seen before the restart, then either an ok end after 19 or a cancelled/invocation-failed end with a failed invocation",
    async run(ctx) {
      const { conn, accepted } = await ctx.start(countStart(20, 50));
      let cursor = "";
      for (let i = 0; i < 3; i++) cursor = (await conn.nextOf("outputStreamItem")).cursorToken;
      await restartServer(ctx);
      conn.terminate();
      const seenBefore = conn.received.flatMap((m) =>
        m.type === "outputStreamItem" && m.sequence >= 3n ? [(m.value as { value: number }).value] : [],
      );
      const { conn: resumed, answer } = await ctx.attach(accepted.sessionToken, "resume", [cursor]);
      ensure(answer.type === "invocationAccepted", `answer after restart: ${show(answer)}`);
      const { messages } = await resumed.all(ctx.timeoutMs * 3);
      const channel = resultChannel(messages);
      ensureTrace(messages, { outputStart: new Map([[channel, 3n]]) });
      const values = countValues(messages, channel);
      ensureEqual(values, range(values.length, 3), "values after the restart");
      ensureEqual(values.slice(0, seenBefore.length), seenBefore, "items delivered before the restart, replayed");
      const end = messages.find((m) => m.type === "outputStreamEnd");
      const finished = messages.at(-1);
      ensure(
        end?.type === "outputStreamEnd" && finished?.type === "invocationFinished",
        `no end or no invocationFinished: ${show(messages.map((m) => m.type))}`,
      );
      if (ctx.durableRestart) ensureEqual(end.outcome, { kind: "ok" }, "end of a count a durable server continued");
      if (end.outcome.kind === "ok") {
        ensureEqual(values.length, 17, "items of a continued count");
        ensureEqual(finished.outcome.kind, "success", "invocation outcome");
      } else {
        ensureEqual(end.outcome, { kind: "cancelled", reason: "invocation-failed" }, "end of an interrupted output");
        ensureEqual(finished.outcome.kind, "failure", "invocation outcome after an interrupted output");
      }
      return `${values.length} items after the cursor, end ${end.outcome.kind}`;
    },
  },
  {
    name: "rerun-follows-journal",
    ref: "§9, §13 (a continued invocation's output continues the one delivered); docs/durable-execution.md (the journal)",
    expectation:
      "with --durable-restart: journal(20, 50) interrupted by a restart after item 2 continues to an ok end after 19, and every item, before the restart and after it, carries the same step result, time and random number the method journaled before its first item (a re-run that called the step again or read the clock or randomness afresh shows other ones)",
    durable: true,
    async run(ctx) {
      const { conn, accepted } = await ctx.start(journalStart(20, 50));
      let cursor = "";
      for (let i = 0; i < 3; i++) cursor = (await conn.nextOf("outputStreamItem")).cursorToken;
      await restartServer(ctx);
      conn.terminate();
      const before = journalItems(conn.received, resultChannel(conn.received)).slice(0, 3);
      const { conn: resumed, answer } = await ctx.attach(accepted.sessionToken, "resume", [cursor]);
      ensure(answer.type === "invocationAccepted", `answer after restart: ${show(answer)}`);
      const { messages, closed } = await resumed.all(ctx.timeoutMs * 3);
      const channel = resultChannel(messages);
      ensureTrace(messages, { outputStart: new Map([[channel, 3n]]) });
      const after = journalItems(messages, channel);
      ensureEqual(
        before.map((item) => item.index),
        range(3),
        "indexes of the items before the restart",
      );
      ensureEqual(
        after.map((item) => item.index),
        range(17, 3),
        "indexes of the items after the restart",
      );
      const journaled = before[0]!.journaled;
      ensure(
        typeof (journaled.step as { value?: unknown } | undefined)?.value === "string",
        `the first item's step result is not a string: ${show(journaled)}`,
      );
      for (const item of [...before, ...after])
        ensureEqual(item.journaled, journaled, `journaled values of item ${item.index}, against item 0's`);
      const end = messages.find((m) => m.type === "outputStreamEnd");
      ensureEqual(end?.type === "outputStreamEnd" ? end.outcome : end, { kind: "ok" }, "end of a journal a durable server continued");
      const finished = messages.at(-1);
      ensure(finished?.type === "invocationFinished" && finished.outcome.kind === "success", `last message: ${show(finished)}`);
      ensureEqual(closed.code, 1000, "close code after invocationFinished");
      return `20 items carried the journaled values, 17 of them after the restart`;
    },
  },
  {
    name: "input-high-water-survives",
    ref: "§4.3, §9",
    expectation:
      '3 acknowledged input items survive a restart: the resumed mapping reports high-water "3"; if not terminal, the suffix completes the invocation with 4 outputs, if terminal the invocation fails',
    async run(ctx) {
      const { resumed, answer } = await acknowledgedThenRestarted(ctx, "r", "resume");
      const input = answer.mappings.find((m) => m.direction === "input");
      ensureEqual(input?.inputHighWater?.sequence, 3n, "inputHighWater sequence after restart");
      if (ctx.durableRestart) ensureEqual(input!.inputHighWater!.terminal, false, "input terminal after a restart of a durable server");
      if (input!.inputHighWater!.terminal) {
        const { messages } = await resumed.all(ctx.timeoutMs * 2);
        const finished = messages.at(-1);
        ensure(
          finished?.type === "invocationFinished" && finished.outcome.kind === "failure",
          `input terminal after restart but the invocation did not fail: ${show(finished)}`,
        );
        return "input terminalized by the restart; invocation failed";
      }
      resumed.send(inputItem(input!.channel, 3, "r3"));
      resumed.send(inputEnd(input!.channel, 4));
      const { messages, closed } = await resumed.all(ctx.timeoutMs * 2);
      const out = messages.flatMap((m) => (m.type === "outputStreamItem" ? [m.value] : []));
      ensureEqual(
        out,
        range(4).map((i) => val.str(`${i}r`)),
        "outputs",
      );
      ensureFinishedSuccess(messages, closed);
      return "input continued after the restart";
    },
  },
  {
    name: "acknowledged-input-replayed",
    ref: "§9, §6.6",
    expectation:
      "after a restart, resending the 3 acknowledged items identically is accepted (idempotent), not input-conflict: the server kept what it acknowledged",
    async run(ctx) {
      const { resumed, answer } = await acknowledgedThenRestarted(ctx, "k", "takeover");
      const input = answer.mappings.find((m) => m.direction === "input");
      ensure(input !== undefined, "no input mapping");
      for (let i = 0; i < 3; i++) resumed.send(inputItem(input.channel, i, `k${i}`));
      if (input.inputHighWater?.terminal !== true) resumed.send(inputEnd(input.channel, 3));
      const { messages, closed } = await resumed.all(ctx.timeoutMs * 2);
      ensure(
        !messages.some((m) => m.type === "invocationRejected"),
        `rejected: ${show(messages.find((m) => m.type === "invocationRejected"))}`,
      );
      ensureEqual(messages.at(-1)?.type, "invocationFinished", "last message");
      if (ctx.durableRestart) ensureFinishedSuccess(messages, closed);
    },
  },
  {
    name: "acceptance-survives",
    ref: "§6.1 (acceptance is durable and replayable by exact attempt)",
    expectation:
      "after a restart, an exact replay of a finished start is accepted for the same attempt, and a different start under its attempt id is attempt-conflict",
    async run(ctx) {
      const start = countStart(2, 0);
      await runToEnd(ctx, start);
      await restartServer(ctx);
      const conn = await ctx.connect();
      conn.send(start);
      const answer = await conn.next("the answer to the replay after restart");
      ensure(answer.type === "invocationAccepted" && answer.attemptId === start.attemptId, `answer ${show(answer)}`);
      const other = await ctx.connect();
      other.send({ ...countStart(3, 0), attemptId: start.attemptId });
      const refused = await other.next("the answer to the conflicting attempt");
      ensureAnswerRejected(refused, "attempt-conflict");
    },
  },
]);
