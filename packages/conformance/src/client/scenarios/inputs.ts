/**
 * Input recovery (protocol §5.3, §6.6, §9): sequences from zero, one end,
 * and after a resume a resend of exactly the suffix beyond the high-water
 * the server returns — not from the last ACK the client saw, not from zero.
 */
import { ensure, ensureEqual, Mismatch, show } from "../../check.js";
import type { ClientContext } from "../context.js";
import type { ScriptedPeer } from "../scripted-server.js";
import { ScriptedSession, inputsOn, nextAttach, provisionalRefOf, type InputSeen } from "../session-script.js";
import { defineScenarios } from "../scenario.js";
import { REVERSE, finishWithEmptyOutput, str } from "./common.js";

const WORDS = ["alpha", "beta", "gamma", "delta", "epsilon"];

/** Waits until `channel` has received `count` input messages (items and ends) on this connection. */
async function awaitInputs(peer: ScriptedPeer, channel: number, count: number): Promise<InputSeen[]> {
  while (inputsOn(peer.received, channel).length < count) await peer.next(`input message ${count} on channel ${channel}`);
  return inputsOn(peer.received, channel);
}

/** The application feeds every word and ends the input, reads the output, and the invocation must succeed. */
async function feedWordsAndFinish(ctx: ClientContext): Promise<void> {
  ctx.adapter.send({ type: "feed", input: "in", items: WORDS.map(str) });
  ctx.adapter.send({ type: "endInput", input: "in" });
  ctx.adapter.send({ type: "read", stream: 0 });
  await ctx.finishedOk();
}

interface ResendPlan {
  /** What connection 1 acknowledges before it vanishes. */
  readonly ackBeforeCut: number;
  /** The high-water the resumed acceptance reports. */
  readonly highWater: number;
  readonly terminal?: boolean;
}

/**
 * Connection 1 accepts `reverse`, waits for the five items and the end,
 * acknowledges `ackBeforeCut`, vanishes. Connection 2 accepts the resume with
 * `highWater`, collects what the client resends until the end, acknowledges
 * it, and sends the reversed words, the end, the result and success.
 */
async function resendAfterCut(ctx: ClientContext, plan: ResendPlan): Promise<{ first: InputSeen[]; resent: InputSeen[] }> {
  const session = new ScriptedSession(ctx.tokens);
  const input = session.input();
  const out = session.output();
  let first: InputSeen[] = [];
  let resent: InputSeen[] = [];
  await ctx.begin(async (peer) => {
    const attach = await nextAttach(peer);
    if (attach.type === "invocationStart") {
      session.accept(peer, attach, [input.mapping(1, 0, false, provisionalRefOf(attach))]);
      first = await awaitInputs(peer, 1, WORDS.length + 1);
      if (plan.ackBeforeCut > 0) peer.send(input.ack(1, plan.ackBeforeCut));
      peer.cut();
      return;
    }
    session.accept(peer, attach, [input.mapping(3, plan.highWater, plan.terminal ?? false)]);
    if (plan.terminal !== true) {
      resent = await awaitInputs(peer, 3, WORDS.length + 1 - plan.highWater);
      peer.send(input.ack(3, WORDS.length, true));
    } else {
      resent = inputsOn(peer.received, 3);
    }
    // What the method returns is not this scenario's concern: an empty output.
    finishWithEmptyOutput(peer, out, 4);
    // decisions §8: the server closes after invocationFinished. The client sends whatever it
    // resends before it answers the close, so the closed connection has received all of it.
    peer.close(1000);
  }, REVERSE);
  await feedWordsAndFinish(ctx);
  await ctx.server.connections(2, "a resume after the cut");
  await ctx.server.peers[1]!.closed;
  // Anything sent on the channel after the script took its messages counts as resent too.
  resent = inputsOn(ctx.server.peers[1]!.received, 3);
  return { first, resent };
}

const expectedSuffix = (from: number): InputSeen[] => [
  ...WORDS.slice(from).map((w, i) => ({ sequence: from + i, value: str(w) })),
  { sequence: WORDS.length, end: true as const },
];

export const inputScenarios = defineScenarios("inputs", [
  {
    name: "sequences-and-end",
    ref: "§5.3, §5.4",
    expectation: "input items carry sequences 0, 1, 2, … in source order and the input ends once, with the next expected sequence",
    run: async (ctx) => {
      const session = new ScriptedSession(ctx.tokens);
      const input = session.input();
      const out = session.output();
      let seen: InputSeen[] = [];
      await ctx.begin(async (peer) => {
        const attach = await nextAttach(peer);
        if (attach.type !== "invocationStart") throw new Mismatch(`a ${attach.type} without any cut`);
        session.accept(peer, attach, [input.mapping(1, 0, false, provisionalRefOf(attach))]);
        seen = await awaitInputs(peer, 1, WORDS.length + 1);
        peer.send(input.ack(1, WORDS.length, true));
        finishWithEmptyOutput(peer, out, 2);
      }, REVERSE);
      await feedWordsAndFinish(ctx);
      ensureEqual(seen, expectedSuffix(0), "input messages");
      return "sequences 0-4, end at 5";
    },
  },
  {
    name: "suffix-resend-after-high-water",
    ref: "§9, §4.3",
    expectation:
      "after a cut, the client resends exactly the items from the server's high-water (2, after an ACK of 2), identical to the first sending, then the end",
    run: async (ctx) => {
      const { resent } = await resendAfterCut(ctx, { ackBeforeCut: 2, highWater: 2 });
      ensureEqual(resent, expectedSuffix(2), "input messages after the resume");
      return "resent 2-4 and the end";
    },
  },
  {
    name: "high-water-beyond-last-ack",
    ref: "§9, §4.3",
    expectation:
      "when the resumed acceptance's high-water (4) is beyond the last ACK the client saw (1), the client resends from the high-water, not from its last ACK",
    run: async (ctx) => {
      const { resent } = await resendAfterCut(ctx, { ackBeforeCut: 1, highWater: 4 });
      ensureEqual(resent, expectedSuffix(4), "input messages after the resume");
      return "resent 4 and the end";
    },
  },
  {
    name: "high-water-zero",
    ref: "§9, §4.3",
    expectation: "when nothing was durably accepted (high-water 0, no ACK), the client resends every item from sequence 0",
    run: async (ctx) => {
      const { resent } = await resendAfterCut(ctx, { ackBeforeCut: 0, highWater: 0 });
      ensureEqual(resent, expectedSuffix(0), "input messages after the resume");
      return "resent 0-4 and the end";
    },
  },
  {
    name: "terminal-high-water",
    ref: "§4.3, decisions §8",
    expectation: "when the resumed acceptance reports the input terminal, the client sends nothing more on it",
    run: async (ctx) => {
      const { resent } = await resendAfterCut(ctx, { ackBeforeCut: 0, highWater: WORDS.length, terminal: true });
      ensure(resent.length === 0, `the client sent ${show(resent)} on a terminal input`);
      return "nothing resent";
    },
  },
]);
