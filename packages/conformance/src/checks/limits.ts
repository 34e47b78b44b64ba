/**
 * Frozen limits and their codes (protocol sections 11 and 12; decisions sections 5 and 6), and the
 * per-principal bounds a server may set (docs/protocol/server.md, Per-principal bounds): those run
 * only when the suite is told the server's bound.
 */
import { randomUUID } from "node:crypto";
import { encodeMessage, SUBPROTOCOL } from "@golem-stream/wire";
import { defineChecks, ensure, ensureEqual, show, type Check } from "../check.js";
import type { Connection } from "../connection.js";
import { channelFor, ensureFinishedSuccess, ensureRejected, ensureViolation, resultChannel, type SuiteContext } from "../context.js";
import { countStart, inputStart, outputValues, range, reverseStart } from "../demo.js";
import { ensureEnvelope } from "./handshake.js";
import { finishSession, inputEnd, inputItem, inputSession } from "./support.js";

const MiB = 1024 * 1024;

/** How often a check asks again for a slot the server frees when it has seen a socket close. */
const RETRY_MS = 50;

/**
 * An upgrade of `token` the server accepts, asked again while it answers
 * 503 (it frees a connection slot once it has seen the socket close, which
 * a client cannot observe), for at most the suite's wait.
 */
async function connectOnceFreed(ctx: SuiteContext, token: string): Promise<Connection> {
  const until = Date.now() + ctx.timeoutMs;
  for (;;) {
    try {
      return await ctx.connect({ token });
    } catch (error) {
      if (Date.now() >= until || !String(error).includes("HTTP 503")) throw error;
      await ctx.sleep(RETRY_MS);
    }
  }
}

/** A running `reverse` invocation of `token`, waiting for its input. */
async function runningSession(ctx: SuiteContext, token: string): Promise<{ conn: Connection; channel: number; sessionToken: string }> {
  const { start, ref } = reverseStart();
  const { conn, accepted } = await ctx.start(start, token);
  return { conn, channel: channelFor(accepted, ref), sessionToken: accepted.sessionToken };
}

const principalChecks = [
  {
    name: "principal-connections-overloaded",
    ref: "server decision (docs/protocol/server.md, Per-principal bounds); decisions §5",
    needs: "maxConnectionsPerPrincipal" as const,
    expectation:
      "with N open session WebSockets of one principal (the server's bound), the next upgrade of that principal is refused with HTTP 503 overloaded, another principal's is not, and once one of the N closes the principal is accepted again",
    async run(ctx: SuiteContext) {
      const bound = ctx.setting("maxConnectionsPerPrincipal");
      const held = await Promise.all(range(bound).map(() => ctx.connect({ token: ctx.boundedToken })));
      const refused = ensureEnvelope(await ctx.probe({ token: ctx.boundedToken, protocols: [SUBPROTOCOL] }), 503, "overloaded");
      if (ctx.boundedToken !== ctx.token) {
        const other = await ctx.probe({ token: ctx.token, protocols: [SUBPROTOCOL] });
        ensureEqual(other.status, 101, "HTTP status of another principal's upgrade");
      }
      held[0]!.close();
      await held[0]!.closed;
      await connectOnceFreed(ctx, ctx.boundedToken);
      return `${bound} open, the next refused (${refused}), accepted again after one closed`;
    },
  },
  {
    name: "principal-sessions-overloaded",
    ref: "server decision (docs/protocol/server.md, Per-principal bounds); decisions §5",
    needs: "maxRunningSessionsPerPrincipal" as const,
    expectation:
      "with N running invocations of one principal (the server's bound), its next start is answered invocationRejected overloaded with its attemptId, retryable true, then 1002; a resume of a running one is still accepted",
    async run(ctx: SuiteContext) {
      const bound = ctx.setting("maxRunningSessionsPerPrincipal");
      const running: { conn: Connection; channel: number; sessionToken: string }[] = [];
      try {
        for (const _ of range(bound)) running.push(await runningSession(ctx, ctx.boundedToken));
        const extra = await ctx.connect({ token: ctx.boundedToken });
        const { start } = reverseStart();
        extra.send(start);
        const refused = await ensureViolation(extra, {
          codes: ["overloaded"],
          attemptId: start.attemptId,
          rejectionRequired: true,
          retryable: true,
        });
        // Resumes are never refused by the bound: they start nothing new.
        const resumed = await connectOnceFreed(ctx, ctx.boundedToken);
        resumed.send({
          type: "resumeAttach",
          attemptId: randomUUID(),
          operation: "resume",
          outputCursors: [],
          sessionToken: running[0]!.sessionToken,
        });
        const answer = await resumed.next("the answer to the resume");
        ensure(answer.type === "invocationAccepted", `a resume of a running invocation was answered ${show(answer)}`);
        running[0] = { ...running[0]!, conn: resumed };
        return `${bound} running, the next start refused (${refused}), a resume accepted`;
      } finally {
        // Each invocation is finished, so the principal runs nothing when the next check counts on it.
        for (const { conn, channel, sessionToken } of running) {
          if (conn.closeInfo !== undefined) {
            await finishSession(ctx, sessionToken, ctx.boundedToken);
            continue;
          }
          conn.send(inputEnd(channel, 0));
          await conn.all().catch(() => undefined);
        }
      }
    },
  },
];

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
    expectation: 'a packed u8 batch of exactly 1 MiB is accepted and acknowledged with "1048576"',
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
  ...principalChecks,
]);
