/**
 * What a client can observe of a server's liveness rules for silent sockets:
 * the deadline for a connection's first message and the WebSocket pings that
 * find a peer that is gone. The protocol sets neither (docs/protocol/server.md,
 * "Silent sockets", is this project's decision), so each check runs only when
 * the suite is told the server's setting, and is skipped otherwise.
 */
import { defineChecks, ensure, ensureEqual, Mismatch, show, type Check } from "../check.js";
import { WaitTimeout } from "../connection.js";
import { ensureFinishedSuccess } from "../context.js";
import { reverseStart } from "../demo.js";
import { finishSession, inputEnd, inputItem, inputSession } from "./support.js";

/** Pings a peer that answers must see and stay connected through. */
const PINGS_ANSWERED = 3;

export const livenessChecks: Check[] = defineChecks("liveness", [
  {
    name: "first-message-deadline",
    ref: "server decision (docs/protocol/server.md, Silent sockets); §11",
    needs: "firstMessageTimeoutMs",
    expectation:
      "a connection that sends nothing after the upgrade is closed with 1002 and no diagnostic (there is no attempt to report against) once the server's first-message deadline has passed, and not before half of it",
    async run(ctx) {
      const deadline = ctx.setting("firstMessageTimeoutMs");
      const conn = await ctx.connect();
      const opened = Date.now();
      let closed;
      try {
        ({ closed } = await conn.all(deadline + ctx.timeoutMs));
      } catch (error) {
        if (error instanceof WaitTimeout)
          throw new Mismatch(`still open ${Date.now() - opened} ms after the upgrade, with a first-message deadline of ${deadline} ms`);
        throw error;
      }
      const after = Date.now() - opened;
      ensure(conn.received.length === 0, `the server sent ${show(conn.received.map((m) => m.type))} to a connection that said nothing`);
      ensureEqual(closed.code, 1002, "close code");
      // The server's clock starts at its side of the upgrade, a little before this one's: half is the margin.
      ensure(after >= deadline / 2, `closed ${after} ms after the upgrade, before half of the ${deadline} ms deadline`);
      return `close 1002 after ${after} ms`;
    },
  },
  {
    name: "ping-answered-stays",
    ref: "server decision (docs/protocol/server.md, Silent sockets); RFC 6455 §5.5.2",
    needs: "pingIntervalMs",
    expectation: `the server pings an accepted connection about every ping interval; a peer that answers each ping stays connected through ${PINGS_ANSWERED} of them, and its session goes on (an input reversed, the invocation finished)`,
    async run(ctx) {
      const interval = ctx.setting("pingIntervalMs");
      const { conn, channel, accepted } = await inputSession(ctx, reverseStart());
      let finished = false;
      try {
        // Twice the interval per ping: timers on a loaded machine run late.
        const budget = 2 * PINGS_ANSWERED * interval + ctx.timeoutMs;
        try {
          await conn.pingsOrClose(PINGS_ANSWERED, budget);
        } catch (error) {
          if (error instanceof WaitTimeout)
            throw new Mismatch(`${conn.pings} pings in ${budget} ms, with a ping interval of ${interval} ms`);
          throw error;
        }
        ensure(conn.closeInfo === undefined, `closed (${conn.closeInfo?.code}) after ${conn.pings} pings, each answered`);
        conn.send(inputItem(channel, 0, "ping"));
        conn.send(inputEnd(channel, 1));
        const { messages, closed } = await conn.all();
        ensureFinishedSuccess(messages, closed);
        finished = true;
        return `${conn.pings} pings answered, then the invocation finished`;
      } finally {
        if (!finished) await finishSession(ctx, accepted.sessionToken);
      }
    },
  },
  {
    name: "ping-unanswered-dropped",
    ref: "server decision (docs/protocol/server.md, Silent sockets); RFC 6455 §5.5.2",
    needs: "pingIntervalMs",
    expectation:
      "a peer that answers no ping and sends nothing after its acceptance is dropped within a few ping intervals, after at least one ping (this server terminates the socket: 1006, no close frame)",
    async run(ctx) {
      const interval = ctx.setting("pingIntervalMs");
      const conn = await ctx.connect({ autoPong: false });
      const { start } = reverseStart();
      conn.send(start);
      const accepted = await conn.nextOf("invocationAccepted");
      try {
        const budget = 8 * interval + ctx.timeoutMs;
        try {
          await conn.pingsOrClose(Number.POSITIVE_INFINITY, budget);
        } catch (error) {
          if (error instanceof WaitTimeout)
            throw new Mismatch(`still open after ${conn.pings} unanswered pings in ${budget} ms, with a ping interval of ${interval} ms`);
          throw error;
        }
        const closed = conn.closeInfo!;
        ensure(conn.pings >= 1, `closed (${closed.code}) before any ping: not for its silence to pings`);
        return `dropped after ${conn.pings} unanswered pings (close ${closed.code})`;
      } finally {
        // Dropped (or not), its invocation still waits for input: it is finished from a new connection.
        await finishSession(ctx, accepted.sessionToken);
      }
    },
  },
]);
