/**
 * The WebSocket handshake from the client's side (protocol §1, §11,
 * decisions §5): the subprotocol and the bearer token on every connection,
 * and refusals answered by their codes — definitive ones fail the call,
 * retryable ones are retried.
 */
import { SUBPROTOCOL } from "@golem-stream/wire";
import { ensure, show } from "../../check.js";
import { CONFORMANCE_TOKEN } from "../context.js";
import { FINISHED, ScriptedSession } from "../session-script.js";
import { defineScenarios } from "../scenario.js";
import { COUNT, PLANNED_ITEMS as ITEMS, beginAccepted, expectAllOnce, planned, sendToEnd } from "./common.js";

export const handshakeScenarios = defineScenarios("handshake", [
  {
    name: "subprotocol-and-bearer",
    ref: "§1",
    expectation: `every connection, the first and each reconnect, offers the subprotocol ${SUBPROTOCOL} and sends Authorization: Bearer with the token`,
    run: async (ctx) => {
      // The first accepted connection is cut after one item; the next completes.
      await ctx.begin(planned(new ScriptedSession(ctx.tokens), ["accept-cut", "complete"]), COUNT);
      await expectAllOnce(ctx, ITEMS);
      const upgrades = ctx.server.upgrades;
      ensure(upgrades.length >= 2, `${upgrades.length} upgrade(s); expected a reconnect`);
      for (const upgrade of upgrades) {
        ensure(upgrade.protocols.includes(SUBPROTOCOL), `upgrade ${upgrade.index} offered ${show(upgrade.protocols)}`);
        ensure(
          upgrade.authorization === `Bearer ${CONFORMANCE_TOKEN}`,
          `upgrade ${upgrade.index} sent Authorization ${show(upgrade.authorization)}`,
        );
      }
      return `${upgrades.length} upgrades, each with the subprotocol and the bearer token`;
    },
  },
  {
    name: "refused-unauthenticated",
    ref: "§1, §11, decisions §5",
    expectation:
      "an upgrade refused with HTTP 401 and the envelope code unauthenticated fails the invocation as rejected with that code, without another upgrade",
    run: async (ctx) => {
      await ctx.begin(
        () => undefined,
        COUNT,
        () => ({ status: 401, body: { code: "unauthenticated", error: "authentication required" } }),
      );
      const outcome = await ctx.outcome();
      ensure(
        outcome.type === "error" && outcome.category === "rejected" && outcome.code === "unauthenticated",
        `outcome ${show(outcome)}, expected rejected/unauthenticated`,
      );
      ensure(ctx.server.upgrades.length === 1, `${ctx.server.upgrades.length} upgrades: a definitive refusal is not retried`);
      return "rejected with unauthenticated";
    },
  },
  {
    name: "refused-retryably",
    ref: "§1, §11, decisions §5",
    expectation:
      "an upgrade refused with HTTP 503 and the envelope code overloaded is retried, and the invocation completes on a later connection",
    run: async (ctx) => {
      await beginAccepted(
        ctx,
        (peer, out) => {
          sendToEnd(peer, out, 1, 0, ITEMS);
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
