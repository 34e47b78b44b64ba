/** First-message rules (protocol section 1, 6.2, 11; decisions section 5). */
import { randomUUID } from "node:crypto";
import { encodeMessage, type ClientMessage } from "@golem-stream/wire";
import { defineChecks, ensure, ensureEqual, show, type Check, type CheckSpec } from "../check.js";
import { ensureViolation } from "../context.js";
import { countStart, reverseStart } from "../demo.js";

const PREMATURE = ["invalid-message", "protocol-error"];

/** A first message that is not a start or a resume: refused as premature, close 1002. */
function prematureFirst(name: string, expectation: string, message: ClientMessage): CheckSpec {
  return {
    name,
    ref: "§1, §11",
    expectation,
    async run(ctx) {
      const conn = await ctx.connect();
      conn.send(message);
      return ensureViolation(conn, { codes: PREMATURE });
    },
  };
}

export const firstMessageChecks: Check[] = defineChecks("first-message", [
  prematureFirst(
    "item-before-acceptance",
    "an inputStreamItem as the first message is refused (protocol-error or invalid-message if diagnosed, close 1002) and nothing is accepted",
    { type: "inputStreamItem", channel: 1, sequence: 0n, value: { kind: "string", value: "x" } },
  ),
  prematureFirst("end-before-acceptance", "an inputStreamEnd as the first message is refused, close 1002", {
    type: "inputStreamEnd",
    channel: 1,
    sequence: 0n,
  }),
  prematureFirst("cancel-before-acceptance", "a streamCancel as the first message is refused, close 1002", {
    type: "streamCancel",
    channel: 1,
    reason: "cancelled",
  }),
  prematureFirst("binary-first", "a well-formed input-u8 binary message as the first message is refused, close 1002", {
    type: "input-u8",
    channel: 1,
    sequence: 0n,
    payload: new Uint8Array([1, 2, 3]),
  }),
  {
    name: "start-as-binary-frame",
    ref: "§1",
    expectation: "a valid invocationStart carried in a binary frame is refused (the first message MUST be text), close 1002",
    async run(ctx) {
      const conn = await ctx.connect();
      conn.sendRaw(Buffer.from(encodeMessage(countStart(1, 0)) as string, "utf8"), true);
      return ensureViolation(conn, { codes: PREMATURE });
    },
  },
  {
    name: "second-start",
    ref: "§8 (one WebSocket carries one invocation session), §11",
    expectation:
      "a second invocationStart on an accepted connection is a state violation: invocationRejected protocol-error with the accepted attemptId, close 1002",
    async run(ctx) {
      const { start } = reverseStart();
      const { conn } = await ctx.start(start);
      conn.send(countStart(1, 0));
      return ensureViolation(conn, { codes: ["protocol-error", "invalid-message"], attemptId: start.attemptId, rejectionRequired: true });
    },
  },
  {
    name: "resume-after-start",
    ref: "§8, §11",
    expectation: "a resumeAttach on an accepted connection is refused with the accepted attemptId, close 1002",
    async run(ctx) {
      const { start } = reverseStart();
      const { conn, accepted } = await ctx.start(start);
      conn.send({
        type: "resumeAttach",
        attemptId: randomUUID(),
        operation: "resume",
        outputCursors: [],
        sessionToken: accepted.sessionToken,
      });
      return ensureViolation(conn, { codes: ["protocol-error", "invalid-message"], attemptId: start.attemptId, rejectionRequired: true });
    },
  },
  {
    name: "acceptance-echoes-start",
    ref: "§6.1",
    expectation:
      "invocationAccepted carries the start's attemptId and idempotencyKey, a session token, and a mapping for every provisional reference",
    async run(ctx) {
      const { start, ref } = reverseStart();
      const { accepted } = await ctx.start(start);
      ensureEqual(accepted.attemptId, start.attemptId, "attemptId");
      ensureEqual(accepted.idempotencyKey, start.idempotencyKey, "idempotencyKey");
      ensure(accepted.sessionToken.length > 0, "empty session token");
      const mapping = accepted.mappings.find((m) => m.provisionalRef === ref);
      ensure(mapping !== undefined && mapping.direction === "input", `mappings ${show(accepted.mappings)}`);
      ensureEqual(mapping.inputHighWater, { sequence: 0n, terminal: false }, "initial inputHighWater");
      ensure(mapping.channel >= 1, `channel ${mapping.channel}`);
    },
  },
  {
    name: "rejection-definitive",
    ref: "§6.2",
    expectation: "after a pre-acceptance invocationRejected the server closes the connection with 1002",
    async run(ctx) {
      const conn = await ctx.connect();
      conn.send(countStart(1, 0, { selector: { ...countStart(1, 0).selector, method: "no-such-method" } }));
      return ensureViolation(conn, { codes: ["not-found"], rejectionRequired: true });
    },
  },
]);
