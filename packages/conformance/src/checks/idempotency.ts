/** Attempts, exact-attempt replay and idempotency keys (protocol sections 5.1, 6.1, 9; decisions section 5). */
import { randomUUID } from "node:crypto";
import { canonicalJson, encodeMessage, type InvocationStart } from "@golem-stream/wire";
import { defineChecks, ensure, ensureEqual, show, type Check, type CheckSpec } from "../check.js";
import { ensureRejected, ensureTrace, resultChannel } from "../context.js";
import { countStart, countValues, range } from "../demo.js";
import { runToEnd } from "./support.js";

/** The start's JSON text with members in reverse order and extra whitespace: semantically the same message. */
function reshuffled(start: InvocationStart): string {
  const canonical = JSON.parse(encodeMessage(start) as string) as Record<string, unknown>;
  const reversed = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(reversed);
    if (value !== null && typeof value === "object")
      return Object.fromEntries(
        Object.entries(value)
          .reverse()
          .map(([k, v]) => [k, reversed(v)]),
      );
    return value;
  };
  return JSON.stringify(reversed(canonical), null, 2);
}

/** A finished count(1)'s attempt id sent again with a start built `differently` from it: attempt-conflict. */
function attemptConflict(spec: Omit<CheckSpec, "run">, differently: (start: InvocationStart) => InvocationStart): CheckSpec {
  return {
    ...spec,
    async run(ctx) {
      const start = countStart(1, 0);
      await runToEnd(ctx, start);
      const conn = await ctx.connect();
      conn.send(differently(start));
      return ensureRejected(conn, ["attempt-conflict"], start.attemptId);
    },
  };
}

export const idempotencyChecks: Check[] = defineChecks("idempotency", [
  {
    name: "replay-returns-acceptance",
    ref: "§6.1, §9",
    expectation:
      "resending a finished start with the same attempt id on a new connection returns invocationAccepted for that attempt and idempotency key, never a second invocation's rejection",
    async run(ctx) {
      const start = countStart(2, 0);
      await runToEnd(ctx, start);
      const conn = await ctx.connect();
      conn.send(start);
      const answer = await conn.next("the answer to the replayed start");
      ensure(answer.type === "invocationAccepted", `expected invocationAccepted, saw ${show(answer)}`);
      ensureEqual([answer.attemptId, answer.idempotencyKey], [start.attemptId, start.idempotencyKey], "attemptId and idempotencyKey");
    },
  },
  {
    name: "replay-same-session",
    ref: "§6.1, §9",
    expectation:
      "the replayed acceptance of a finished start belongs to the same session: resuming with its token replays the same outputs (0, 1)",
    async run(ctx) {
      const start = countStart(2, 0);
      await runToEnd(ctx, start);
      const conn = await ctx.connect();
      conn.send(start);
      const answer = await conn.nextOf("invocationAccepted");
      conn.terminate();
      const { conn: resumed, answer: accepted } = await ctx.attach(answer.sessionToken, "takeover");
      ensure(accepted.type === "invocationAccepted", `takeover answer ${show(accepted)}`);
      const { messages } = await resumed.all();
      ensureEqual(countValues(messages, resultChannel(messages)), [0, 1], "replayed outputs");
    },
  },
  {
    name: "replay-while-live-revokes",
    ref: "§9, §6.8",
    expectation:
      "an exact replay while the first transport is live is accepted on the new transport, and the old one receives attachmentRevoked replaced as its last message",
    async run(ctx) {
      const start = countStart(200, 20);
      const first = await ctx.start(start);
      await first.conn.nextOf("outputStreamItem");
      const conn = await ctx.connect();
      conn.send(start);
      const answer = await conn.next("the answer to the live replay");
      ensure(answer.type === "invocationAccepted" && answer.attemptId === start.attemptId, `answer ${show(answer)}`);
      const { messages } = await first.conn.all();
      const last = messages.at(-1);
      ensureEqual(last, { type: "attachmentRevoked", reason: "replaced" }, "last message of the old transport");
      ensureTrace(messages);
    },
  },
  {
    name: "replay-semantic-equality",
    ref: "§9 (equality after strict decoding)",
    expectation: "a replay with reordered members and whitespace is the same attempt: accepted, not attempt-conflict",
    async run(ctx) {
      const start = countStart(1, 0);
      await runToEnd(ctx, start);
      const conn = await ctx.connect();
      conn.sendRaw(reshuffled(start), false);
      const answer = await conn.next("the answer to the reshuffled replay");
      ensure(answer.type === "invocationAccepted" && answer.attemptId === start.attemptId, `answer ${show(answer)}`);
    },
  },
  attemptConflict(
    {
      name: "attempt-conflict-parameters",
      ref: "§5.1, §9, decisions §5",
      expectation: "the same attempt id with different method parameters is attempt-conflict",
    },
    (start) => ({ ...countStart(2, 0), attemptId: start.attemptId, idempotencyKey: start.idempotencyKey }),
  ),
  attemptConflict(
    { name: "attempt-conflict-key", ref: "§9", expectation: "the same attempt id with a different idempotency key is attempt-conflict" },
    (start) => ({ ...start, idempotencyKey: `${start.idempotencyKey}-other` }),
  ),
  attemptConflict(
    {
      name: "attempt-conflict-constructor",
      ref: "§9 (equality covers constructor parameters)",
      expectation: "the same attempt id with different constructor parameters is attempt-conflict",
    },
    (start) => ({
      ...start,
      selector: { ...start.selector, constructorParameters: { kind: "record", value: { fields: [{ kind: "string", value: "other" }] } } },
    }),
  ),
  {
    name: "attempt-conflict-live",
    ref: "§9",
    expectation:
      "the same attempt id with different parameters while the first transport is live is attempt-conflict, and the first transport is not revoked",
    async run(ctx) {
      const start = countStart(50, 20);
      const first = await ctx.start(start);
      const conn = await ctx.connect();
      conn.send({ ...start, methodParameters: countStart(51, 20).methodParameters });
      const saw = await ensureRejected(conn, ["attempt-conflict"], start.attemptId);
      await first.conn.nextOf("outputStreamItem");
      ensure(!first.conn.received.some((m) => m.type === "attachmentRevoked"), "the first transport was revoked by a conflicting attempt");
      return saw;
    },
  },
  {
    name: "idempotency-conflict",
    ref: "decisions §5",
    expectation: "a new attempt reusing an idempotency key with different parameters is idempotency-conflict",
    async run(ctx) {
      const start = countStart(1, 0);
      await runToEnd(ctx, start);
      const conn = await ctx.connect();
      const second = { ...countStart(3, 0), idempotencyKey: start.idempotencyKey };
      conn.send(second);
      return ensureRejected(conn, ["idempotency-conflict"], second.attemptId);
    },
  },
  {
    name: "fresh-attempts-independent",
    ref: "§9",
    expectation:
      "two starts with fresh attempt ids and keys are two invocations: both accepted with different session tokens and full outputs",
    async run(ctx) {
      const a = await ctx.start(countStart(3, 0));
      const b = await ctx.start(countStart(3, 0));
      ensure(a.accepted.sessionToken !== b.accepted.sessionToken, "the same session token for two invocations");
      for (const { conn } of [a, b]) {
        const { messages } = await conn.all();
        ensureEqual(countValues(messages, resultChannel(messages)), range(3), "outputs");
      }
    },
  },
  {
    name: "canonical-encoding-accepted",
    ref: "§2",
    expectation: "a start written in canonical JSON (sorted members, no whitespace) is accepted",
    async run(ctx) {
      const start = countStart(1, 0);
      const conn = await ctx.connect();
      conn.sendRaw(canonicalJson(JSON.parse(encodeMessage(start) as string)), false);
      const answer = await conn.next("acceptance");
      ensureEqual(answer.type, "invocationAccepted", "answer");
    },
  },
  {
    name: "new-attempt-after-rejection",
    ref: "§9 (a definitive rejection uses a new attempt id)",
    expectation: "after an attempt is rejected (unknown method), a corrected start with a fresh attempt id is accepted",
    async run(ctx) {
      const bad = countStart(1, 0);
      const conn = await ctx.connect();
      conn.send({ ...bad, selector: { ...bad.selector, method: "nope" } });
      await ensureRejected(conn, ["not-found"]);
      const { accepted } = await ctx.start({ ...countStart(1, 0), attemptId: randomUUID() });
      ensureEqual(accepted.type, "invocationAccepted", "answer");
    },
  },
]);
