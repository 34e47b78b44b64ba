/**
 * The WebSocket handshake from the client's side (protocol §1, §11,
 * decisions §5): the subprotocol and the bearer token on every connection,
 * and refusals answered by their codes — definitive ones fail the call,
 * retryable ones are retried.
 */
import { SUBPROTOCOL } from "@golem-stream/wire";
import { ensure, show } from "../../check.js";
import { CONFORMANCE_TOKEN } from "../context.js";
import { FINISHED, ScriptedSession, nextAttach } from "../session-script.js";
import { defineScenarios } from "../scenario.js";
import type { ClientContext } from "../context.js";
import type { Script } from "../scripted-server.js";
import { COUNT, expectAllOnce } from "./common.js";

const ITEMS = 3;

/** A server that cuts the first accepted connection after one item and completes on the next. */
function cutOnceThenComplete(ctx: ClientContext): Script {
  const session = new ScriptedSession(ctx.tokens);
  const out = session.output();
  return async (peer) => {
    const attach = await nextAttach(peer);
    const resumed = attach.type === "resumeAttach";
    session.accept(peer, attach, resumed ? [out.mapping(1)] : []);
    peer.send(out.result(1, resumed));
    if (peer.index === 1) {
      peer.send(out.item(1, 0));
      await new Promise((resolve) => setTimeout(resolve, 50));
      return peer.cut();
    }
    const from = resumed ? out.resumeFrom(attach) : 0;
    if (from !== "ended") out.send(peer, 1, from, ITEMS);
    peer.send(out.end(1, ITEMS));
    peer.send(FINISHED);
  };
}

export const handshakeScenarios = defineScenarios("handshake", [
  {
    name: "subprotocol-and-bearer",
    ref: "§1",
    expectation: `every connection, the first and each reconnect, offers the subprotocol ${SUBPROTOCOL} and sends Authorization: Bearer with the token`,
    run: async (ctx) => {
      await ctx.begin(cutOnceThenComplete(ctx), COUNT);
      await expectAllOnce(ctx, ITEMS);
      const upgrades = ctx.server.upgrades;
      ensure(upgrades.length >= 2, `${upgrades.length} upgrade(s); expected a reconnect`);
      for (const upgrade of upgrades) {
        ensure(upgrade.protocols.includes(SUBPROTOCOL), `upgrade ${upgrade.index} offered ${show(upgrade.protocols)}`);
        ensure(upgrade.authorization === `Bearer ${CONFORMANCE_TOKEN}`, `upgrade ${upgrade.index} sent Authorization ${show(upgrade.authorization)}`);
      }
      return `${upgrades.length} upgrades, each with the subprotocol and the bearer token`;
    },
  },
  {
    name: "refused-unauthenticated",
    ref: "§1, §11, decisions §5",
    expectation: "an upgrade refused with HTTP 401 and the envelope code unauthenticated fails the invocation as rejected with that code, without another upgrade",
    run: async (ctx) => {
      await ctx.begin(() => undefined, COUNT, () => ({ status: 401, body: { code: "unauthenticated", error: "authentication required" } }));
      const outcome = await ctx.outcome();
      ensure(outcome.type === "error" && outcome.category === "rejected" && outcome.code === "unauthenticated", `outcome ${show(outcome)}, expected rejected/unauthenticated`);
      ensure(ctx.server.upgrades.length === 1, `${ctx.server.upgrades.length} upgrades: a definitive refusal is not retried`);
      return "rejected with unauthenticated";
    },
  },
  {
    name: "refused-retryably",
    ref: "§1, §11, decisions §5",
    expectation: "an upgrade refused with HTTP 503 and the envelope code overloaded is retried, and the invocation completes on a later connection",
    run: async (ctx) => {
      const session = new ScriptedSession(ctx.tokens);
      const out = session.output();
      await ctx.begin(
        async (peer) => {
          session.accept(peer, await nextAttach(peer));
          peer.send(out.result(1));
          out.send(peer, 1, 0, ITEMS);
          peer.send(out.end(1, ITEMS));
          peer.send(FINISHED);
        },
        COUNT,
        (upgrade) => (upgrade.index === 1 ? { status: 503, body: { code: "overloaded", error: "try again" } } : undefined),
      );
      await expectAllOnce(ctx, ITEMS);
      ensure(ctx.server.upgrades.length === 2, `${ctx.server.upgrades.length} upgrades, expected the refused one and one more`);
      return "retried after 503 overloaded";
    },
  },
]);
